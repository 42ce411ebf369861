import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProto } from 'grpc-health-check';
import { logLines } from '../helpers/log.js';
import { waitFor } from '../helpers/wait.js';
import { type Sandbox, alive, freeBasePort, portsFree, run, runAsync, sandbox } from './helpers.js';

const Health = (grpc.loadPackageDefinition(loadSync(healthProto, { enums: String })) as unknown as {
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
}).grpc.health.v1.Health;

/** The grpc.health.v1 status of the whole server at `target`. */
function grpcHealth(target: string): Promise<string> {
  const client = new Health(target, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    Check(req: object, cb: (err: Error | null, res?: { status: string }) => void): void;
  };
  return new Promise<string>((resolve, reject) => client.Check({ service: '' }, (err, res) => (err ? reject(err) : resolve(res!.status)))).finally(() => client.close());
}

/**
 * `blobstore deploy`, `status` and `down` with the real bin and real processes: a 3-node stack plus
 * the orders service on free loopback ports, in a temp HOME. The steps build on each other.
 */

const REGION = 'us-east-1';
let box: Sandbox;
let base: number;
const stateFile = () => join(box.stateHome, 'blobstore', 'dev', REGION, 'deploy.json');
const recordedPids = (): number[] => JSON.parse(readFileSync(stateFile(), 'utf8')).services.map((s: { pid: number }) => s.pid);
const seen = new Set<number>();

beforeAll(async () => {
  box = sandbox();
  base = await freeBasePort(3);
  expect(run(box, ['config', 'set', 'stacks.dev.basePort', '--value', String(base)]).status).toBe(0);
});

afterAll(async () => {
  if (existsSync(stateFile())) for (const pid of recordedPids()) seen.add(pid);
  run(box, ['down', 'dev', '--region', REGION]);
  for (const pid of seen) if (alive(pid)) process.kill(pid, 'SIGKILL');
  rmSync(box.home, { recursive: true, force: true });
});

const nodePorts = () => [base, base + 1, base + 2];
const metricsPorts = () => nodePorts().map((p) => p + 32);
const grpcPorts = () => nodePorts().map((p) => p + 64);
const ordersUrl = () => `http://127.0.0.1:${base + 99}`;

describe('deploy --dry-run', () => {
  it('prints the plan and leaves no trace: no file, no directory, no process', async () => {
    const r = run(box, ['deploy', 'dev', '--region', REGION, '--dry-run']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('dry run');
    expect(r.stdout).toMatch(/SERVICE\s+ADDRESS\s+METRICS \+ UI\s+GRPC\s+PID\s+PLAN/);
    for (const i of [0, 1, 2]) {
      expect(r.stdout).toContain(`node-${i}   127.0.0.1:${base + i}  http://127.0.0.1:${base + 32 + i}/  127.0.0.1:${base + 64 + i}  -    start`);
    }
    expect(r.stdout).toMatch(new RegExp(`orders +127\\.0\\.0\\.1:${base + 99} +- +- +- +start`));
    expect(existsSync(box.stateHome)).toBe(false);
    expect(await portsFree([...nodePorts(), ...metricsPorts(), ...grpcPorts(), base + 99])).toBe(true);
  });
});

describe('deploy', () => {
  it('brings up 3 nodes and the orders service, all healthy, and prints the table', async () => {
    const r = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
    expect(r.status, r.stderr + r.stdout).toBe(0);
    for (const pid of recordedPids()) seen.add(pid);
    expect(r.stdout).toMatch(/SERVICE\s+ADDRESS\s+METRICS \+ UI\s+GRPC\s+PID\s+STATE/);
    expect(r.stdout.match(/started/g)).toHaveLength(4);
    expect(r.stdout).toContain('orders API check passed');
    expect(r.stderr).toContain('4/4 healthy');
    for (const port of nodePorts()) expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    const created = await fetch(`${ordersUrl()}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount": 5, "currency": "USD"}' });
    expect(created.status).toBe(200);
  });

  it('gives each node its metrics listener with the web UI and its gRPC listener, on the ports the plan showed', async () => {
    for (const [i, port] of metricsPorts().entries()) {
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
      const ui = await fetch(`http://127.0.0.1:${port}/`);
      expect(ui.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const snapshot = (await (await fetch(`http://127.0.0.1:${port}/api/v1/metrics`)).json()) as { nodeId: string };
      expect(snapshot.nodeId).toBe(`dev-us-east-1-${i}`);
    }
    for (const port of grpcPorts()) expect(await grpcHealth(`127.0.0.1:${port}`)).toBe('SERVING');
    // The logs are JSON lines with the node's id.
    const log = readFileSync(join(box.stateHome, 'blobstore', 'dev', REGION, 'logs', 'node-2.log'), 'utf8');
    expect(logLines(log).find((l) => l.listener === 'grpc')).toMatchObject({ node: 'dev-us-east-1-2', address: `127.0.0.1:${base + 66}` });
  });

  it('gives each node its own data dir under $XDG_STATE_HOME/blobstore/<stack>/<region>/, its id and region', () => {
    const dir = join(box.stateHome, 'blobstore', 'dev', REGION);
    expect(readdirSync(dir).sort()).toStrictEqual(['deploy.json', 'dev-us-east-1-0', 'dev-us-east-1-1', 'dev-us-east-1-2', 'logs', 'orders']);
    const state = JSON.parse(readFileSync(stateFile(), 'utf8'));
    const node1 = state.services.find((s: { name: string }) => s.name === 'node-1');
    // Each node names the others (the lowest node id forms the cluster).
    expect(node1.argv).toEqual(expect.arrayContaining(['--node-id', 'dev-us-east-1-1', '--region', REGION, '--seed-nodes', `127.0.0.1:${base},127.0.0.1:${base + 2}`]));
  });

  it('brings up one cluster: every node lists the three nodes as active members', async () => {
    const urls = [0, 1, 2].map((i) => `http://127.0.0.1:${base + i}`);
    let views: string[] = [];
    await waitFor(async () => {
      const states = await Promise.all(urls.map(async (u) => (await (await fetch(`${u}/v1/cluster/state`)).json()) as { ring_version: number; nodes: { node_id: string; state: string }[] }));
      views = states.map((st) => `${st.ring_version}:${st.nodes.map((n) => `${n.node_id}=${n.state}`).sort().join(',')}`);
      return views.every((v) => v === views[0]) && states[0]!.nodes.length === 3 && states[0]!.nodes.every((n) => n.state === 'active');
    }, { what: () => `the stack's nodes to agree: ${views.join(' | ')}`, timeoutMs: 30_000, pollMs: 200 });
  });

  it('is idempotent: a second run restarts nothing', async () => {
    const before = recordedPids();
    const r = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.match(/unchanged/g)).toHaveLength(4);
    expect(recordedPids()).toStrictEqual(before);
  });

  it('status shows every service healthy (exit 0), with the metrics, UI and gRPC addresses', () => {
    const r = run(box, ['status', 'dev']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.match(/healthy/g)!.length).toBeGreaterThanOrEqual(4);
    expect(r.stdout).toContain('4/4 services healthy');
    expect(r.stdout).toMatch(/REGION\s+SERVICE\s+ADDRESS\s+METRICS \+ UI\s+GRPC\s+PID\s+STATE/);
    expect(r.stdout).toMatch(new RegExp(`node-1 +127\\.0\\.0\\.1:${base + 1} +http://127\\.0\\.0\\.1:${base + 33}/ +127\\.0\\.0\\.1:${base + 65} +\\d+ +healthy`));
  });

  it('status --output json says the same for scripts', () => {
    const r = run(box, ['status', 'dev', '--output', 'json']);
    expect(r.status, r.stderr).toBe(0);
    const status = JSON.parse(r.stdout) as { stack: string; healthy: number; total: number; services: Record<string, unknown>[] };
    expect(status).toMatchObject({ stack: 'dev', healthy: 4, total: 4 });
    expect(status.services[1]).toStrictEqual({
      region: REGION, service: 'node-1', kind: 'node', address: `127.0.0.1:${base + 1}`, metrics: `127.0.0.1:${base + 33}`,
      ui: `http://127.0.0.1:${base + 33}/`, grpc: `127.0.0.1:${base + 65}`, pid: expect.any(Number), state: 'healthy',
    });
    expect(status.services[3]).toStrictEqual({ region: REGION, service: 'orders', kind: 'orders', address: `127.0.0.1:${base + 99}`, pid: expect.any(Number), state: 'healthy' });
    expect(run(box, ['status', 'dev', '--output', 'yaml']).status).toBe(2);
  });

  it('restarts a service that died, and only that one', async () => {
    const before = recordedPids();
    process.kill(before[1]!, 'SIGKILL');
    // Gone (or a zombie) once the kernel has run its exit: not within any fixed pause on a loaded machine.
    await expect.poll(() => alive(before[1]!), { timeout: 20_000 }).toBe(false);
    const status = run(box, ['status', 'dev', '--region', REGION]);
    expect(status.status).toBe(1);
    expect(status.stdout).toMatch(/node-1\s+\S+\s+\S+\s+\S+\s+\d+\s+down/);
    const r = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
    expect(r.status, r.stderr).toBe(0);
    const after = recordedPids();
    for (const pid of after) seen.add(pid);
    expect(after[1]).not.toBe(before[1]);
    expect([after[0], after[2], after[3]]).toStrictEqual([before[0], before[2], before[3]]);
  });

  it('restarts what changed and stops what was removed (nodes 3 -> 2)', async () => {
    run(box, ['config', 'set', 'stacks.dev.nodes', '--value', '2']);
    const dry = run(box, ['deploy', 'dev', '--region', REGION, '--dry-run']);
    expect(dry.stdout).toMatch(/node-2\s+\S+\s+\S+\s+\S+\s+\d+\s+stop/);
    const before = recordedPids();
    const r = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/node-2\s+\S+\s+\S+\s+\S+\s+\d+\s+stopped/);
    expect(alive(before[2]!)).toBe(false);
    expect(recordedPids()).toHaveLength(3);
  });

  it('restarts the nodes, not the orders service, when the node section of the config file changes', async () => {
    run(box, ['config', 'set', 'node.maxLabels', '--value', '32']);
    const before = recordedPids();
    const r = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.match(/restarted/g)).toHaveLength(2);
    const after = recordedPids();
    for (const pid of after) seen.add(pid);
    expect(after[2]).toBe(before[2]);
    expect(after[0]).not.toBe(before[0]);
  });

  it('checks the orders API with ORDERS_API_KEY when the service requires keys', async () => {
    const keys = join(box.home, 'keys.json');
    writeFileSync(keys, JSON.stringify([{ key: 'deploy-test-key', scope: 'read' }]));
    run(box, ['config', 'set', 'stacks.dev.ordersApiKeysFile', '--value', keys]);
    const refused = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
    for (const pid of recordedPids()) seen.add(pid);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('answered 401');
    const accepted = await runAsync(box, ['deploy', 'dev', '--region', REGION], { ORDERS_API_KEY: 'deploy-test-key' });
    expect(accepted.status, accepted.stderr).toBe(0);
    expect(accepted.stdout.match(/unchanged/g)).toHaveLength(3);
  });
});

describe('down', () => {
  it('stops every process and forgets the state; data stays', async () => {
    const pids = recordedPids();
    const r = run(box, ['down', 'dev', '--region', REGION]);
    expect(r.status, r.stderr).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    expect(existsSync(stateFile())).toBe(false);
    expect(existsSync(join(box.stateHome, 'blobstore', 'dev', REGION, 'orders'))).toBe(true);
    expect(await portsFree([base, base + 1, base + 99])).toBe(true);
    expect(run(box, ['status', 'dev']).status).toBe(1);
  });

  it('--purge removes the data; a second down has nothing to stop', () => {
    expect(run(box, ['down', 'dev', '--region', REGION, '--purge']).status).toBe(0);
    expect(existsSync(join(box.stateHome, 'blobstore', 'dev', REGION))).toBe(false);
  });
});

describe('deploy failures exit 1', () => {
  it('when the stack is not healthy in time, naming the service and showing its log; down still cleans up', async () => {
    const r = await runAsync(box, ['deploy', 'dev', '--region', REGION, '--timeout', '0.01']);
    for (const pid of recordedPids()) seen.add(pid);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/not healthy after 10 ms/);
    expect(r.stderr).toContain(`blobstore down dev --region ${REGION}`);
    const pids = recordedPids();
    expect(run(box, ['down', 'dev', '--region', REGION, '--purge']).status).toBe(0);
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  it('when a port of the stack is taken by another process', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(base + 1, '127.0.0.1', resolve));
    try {
      const r = await runAsync(box, ['deploy', 'dev', '--region', REGION]);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`port ${base + 1} of node-1 is in use`);
    } finally {
      blocker.close();
      if (existsSync(stateFile())) for (const pid of recordedPids()) seen.add(pid);
      run(box, ['down', 'dev', '--region', REGION, '--purge']);
    }
  });
});

describe('usage errors exit 2 before any work, naming the valid values', () => {
  it.each([
    [['deploy', 'dev'], 'us-east-1, us-west-2, eu-central-1'],
    [['deploy', 'dev', '--region', 'mars-1'], 'us-east-1, us-west-2, eu-central-1'],
    [['deploy', 'nope', '--region', REGION], 'known stacks are dev'],
    [['deploy', 'a/b', '--region', REGION], 'invalid stack name'],
    [['deploy', 'dev', '--region', REGION, '--timeout', 'x'], '--timeout'],
    [['down', 'dev'], 'us-east-1, us-west-2, eu-central-1'],
    [['status', 'dev', '--region', 'x'], 'us-east-1, us-west-2, eu-central-1'],
    [['deploy'], "missing required argument 'stack'"],
  ])('%j', (args, message) => {
    const fresh = sandbox();
    const r = run(fresh, args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
    expect(existsSync(fresh.stateHome)).toBe(false);
    rmSync(fresh.home, { recursive: true, force: true });
  });

  it.each([[['deploy', 'dev', '--region', REGION, '--dry-run']], [['deploy', 'dev', '--region', REGION]]])(
    'a stack whose ordersPort collides with a node port: %j', (args) => {
      const fresh = sandbox();
      mkdirSync(dirname(fresh.configFile), { recursive: true });
      writeFileSync(fresh.configFile, JSON.stringify({ stacks: { dev: { nodes: 3, basePort: 20000, orders: true, ordersPort: 20001 } } }));
      const r = run(fresh, args);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('ordersPort 20001 collides with a node port');
      expect(existsSync(fresh.stateHome)).toBe(false);
      rmSync(fresh.home, { recursive: true, force: true });
    });

  it.each(['http://orders.example.com', 'ftp://x', 'not a url'])('ORDERS_API_BASE_URL=%s is refused', (url) => {
    const fresh = sandbox();
    const r = run(fresh, ['deploy', 'dev', '--region', REGION], { ORDERS_API_BASE_URL: url });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('ORDERS_API_BASE_URL');
    expect(existsSync(fresh.stateHome)).toBe(false);
    rmSync(fresh.home, { recursive: true, force: true });
  });

  it.each(['https://orders.example.com/api/', 'http://localhost:8000', 'http://127.0.0.5:1', 'http://[::1]:9'])('ORDERS_API_BASE_URL=%s is accepted', (url) => {
    const fresh = sandbox();
    const r = run(fresh, ['deploy', 'dev', '--region', REGION, '--dry-run'], { ORDERS_API_BASE_URL: url });
    expect(r.status, r.stderr).toBe(0);
    rmSync(fresh.home, { recursive: true, force: true });
  });

  it.each([['deploy'], ['status'], ['down'], ['orders', 'serve'], ['config', 'set']])('%j --help exits 0', (...cmd) => {
    const r = run(box, [...cmd, '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: blobstore');
  });
});
