/**
 * A cluster installed as the systemd target renders it, on three hosts: a network namespace per
 * node with its own address from 198.18.0.0/15. One cluster description names the nodes, their
 * data dirs, a ClusterSecretFile and per-node TLS files (certificates openssl makes for each
 * host's address, one CA); `renderSystemd` writes each node's unit and EnvironmentFile, and each
 * node is started exactly as its unit says (ExecStart and EnvironmentFile parsed, not retyped)
 * inside its namespace. Then: one cluster over TLS only, REPLICA3 stores and reads across hosts,
 * one host partitioned and healed, every acknowledged blob byte-exact from every host.
 * Skipped (with the reason) where namespaces or openssl are missing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCluster } from '../../src/apps/hosts/cluster.js';
import { renderedUnitCommand, renderSystemd } from '../../src/apps/hosts/systemd.js';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { haveOpenssl, makeCa, makeCert } from '../helpers/certs.js';
import { MAIN, tempDir } from '../helpers/node-process.js';
import { type Hosts, makeHosts } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait.js';

const COUNT = 3;
const hosts = haveOpenssl ? makeHosts(COUNT) : 'needs openssl for the test certificates';
const skip = typeof hosts === 'string' ? hosts : '';
const OFFLINE_MS = 1500;

interface Running {
  child: ChildProcess;
  out: () => string;
}

describe.skipIf(skip !== '')(`three hosts started from their rendered systemd units, TLS only${skip ? ` - skipped: ${skip}` : ''}`, () => {
  const h = hosts as Hosts;
  const ids = ['host-1', 'host-2', 'host-3'];
  const running: (Running | undefined)[] = [];
  let dir: string;
  let unitDir: string;
  const url = (i: number): string => `https://${h.address(i)}:8080`;

  /** Starts node i as its unit says, inside its namespace; resolves once it listens. */
  const start = async (i: number): Promise<void> => {
    const { argv, env } = renderedUnitCommand(unitDir, ids[i]!);
    const child = spawn('ip', ['netns', 'exec', h.ns(i), ...argv], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    running[i] = { child, out: () => out };
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`${ids[i]} exited with ${child.exitCode}:\n${out}`);
      return /listening on https:\/\//.test(out);
    }, { what: `${ids[i]} listening`, timeoutMs: 60_000 });
  };

  const stop = async (i: number): Promise<void> => {
    const r = running[i];
    if (!r || r.child.exitCode !== null) return;
    const exited = new Promise((resolve) => r.child.once('exit', resolve));
    r.child.kill('SIGTERM');
    await exited;
  };

  const state = async (i: number): Promise<{ ring_version: number; nodes: { node_id: string; state: string }[] }> =>
    (await (await fetch(`${url(i)}/v1/cluster/state`, { signal: AbortSignal.timeout(5000) })).json()) as never;

  const agree = async (among: number[], want: Record<string, string>): Promise<boolean> => {
    const views = await Promise.all(among.map((i) => state(i).then(
      (s) => JSON.stringify({ v: s.ring_version, n: s.nodes.map((n) => `${n.node_id}:${n.state}`).sort() }),
      () => 'unreachable',
    )));
    if (!views.every((v) => v === views[0]) || views[0] === 'unreachable') return false;
    const n = (JSON.parse(views[0]!) as { n: string[] }).n;
    return Object.entries(want).every(([id, st]) => n.includes(`${id}:${st}`)) && n.length === Object.keys(want).length;
  };

  beforeAll(async () => {
    dir = tempDir('blobstore-hosts-');
    const ca = makeCa(dir);
    const secretFile = join(dir, 'cluster-secret');
    writeFileSync(secretFile, 'hosts-test-cluster-secret-0123456789\n', { mode: 0o600 });
    const description = {
      name: 'hosts-test',
      command: [process.execPath, MAIN],
      configDir: dir,
      bind: '0.0.0.0',
      secrets: { clusterSecretFile: secretFile },
      settings: { heartbeatIntervalMs: 200, offlineAfterMs: OFFLINE_MS, repairIntervalMs: 1000, handoffIntervalMs: 1000 },
      nodes: ids.map((id, i) => {
        const cert = makeCert(dir, ca, id, { ips: [h.address(i)] });
        mkdirSync(join(dir, id));
        return {
          id, host: h.address(i), region: 'us-east-1', dataDir: join(dir, id, 'data'),
          tls: { certFile: cert.cert, keyFile: cert.key, caFile: ca.cert },
        };
      }),
    };
    unitDir = join(dir, 'units');
    mkdirSync(unitDir);
    for (const f of renderSystemd(parseCluster(description), parseCluster(description).nodes)) writeFileSync(join(unitDir, f.path), f.text, { mode: f.mode });
    // The test's own requests trust the CA and present a certificate of it.
    const client = makeCert(dir, ca, 'client', { ips: ['198.18.0.1'] });
    setGlobalDispatcher(new Agent({ connect: { ca: readFileSync(ca.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) } }));
    await Promise.all(ids.map((_, i) => start(i)));
  }, 180_000);

  afterAll(async () => {
    for (let i = 0; i < COUNT; i++) h.heal?.(i);
    await Promise.all(ids.map((_, i) => stop(i)));
    h.teardown?.();
  });

  it('each unit starts its node with TLS, the secret file and SeedNodes = every host; they form one cluster', async () => {
    const { argv, env } = renderedUnitCommand(unitDir, ids[0]!);
    expect(argv.slice(-1)).toEqual(['serve']);
    expect(env.BLOBSTORE_TLS_CERT).toMatch(/host-1\.pem$/);
    expect(env.BLOBSTORE_CLUSTER_SECRET_FILE).toBe(join(dir, 'cluster-secret'));
    expect(env.BLOBSTORE_SEED_NODES!.split(',').sort()).toEqual(ids.map((_, i) => `${h.address(i)}:8080`).sort());
    await waitFor(() => agree([0, 1, 2], Object.fromEntries(ids.map((id) => [id, 'active']))), { what: 'one cluster of three', timeoutMs: 60_000 });
  });

  it('REPLICA3 stores and reads across hosts; a partitioned host is offline, catches up once healed', async () => {
    const acked = new Map<string, Buffer>();
    const store = async (at: number, n: number, seed: number): Promise<void> => {
      for (let k = 0; k < n; k++) {
        const bytes = patternBytes(2000 + seed + k * 997, seed + k);
        const res = await putRaw(url(at), bytes, { 'X-Blobstore-Policy': 'REPLICA3' });
        expect(res.status).toBe(201);
        acked.set(((await res.json()) as { id: string }).id, bytes);
      }
    };
    await store(0, 5, 100);
    await store(1, 5, 200);
    h.cut(2);
    try {
      await waitFor(() => agree([0, 1], { 'host-1': 'active', 'host-2': 'active', 'host-3': 'offline' }), { what: 'host-3 offline on the others', timeoutMs: OFFLINE_MS + 30_000 });
      await store(0, 5, 300);
    } finally {
      h.heal(2);
    }
    await waitFor(() => agree([0, 1, 2], Object.fromEntries(ids.map((id) => [id, 'active']))), { what: 'all active again', timeoutMs: 60_000 });
    // Every host holds its own copy of every blob (its catch-up came over TLS), byte-exact.
    await waitFor(async () => {
      for (let i = 0; i < COUNT; i++) {
        const listed = (await (await fetch(`${url(i)}/v1/blobs?limit=1000`)).json()) as { ids: string[] };
        if (![...acked.keys()].every((id) => listed.ids.includes(id))) return false;
      }
      return true;
    }, { what: 'three copies of every blob', timeoutMs: 60_000 });
    for (let i = 0; i < COUNT; i++) {
      for (const [id, bytes] of acked) {
        const res = await fetch(`${url(i)}/v1/blobs/${id}`);
        expect(res.status).toBe(200);
        expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      }
    }
  }, 180_000);
});
