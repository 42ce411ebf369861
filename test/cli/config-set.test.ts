import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { BIN, type Sandbox, freePort, run, runAsync, useSandboxes } from './helpers.js';

/** `blobstore config set` with the real bin in a temp HOME. */

const fresh = useSandboxes();

const readConfig = (box: Sandbox): any => JSON.parse(readFileSync(box.configFile, 'utf8'));

describe('config set round trip', () => {
  it('writes $XDG_CONFIG_HOME/blobstore/config.json, creating objects, keeping known types', () => {
    const box = fresh();
    for (const [key, value] of [
      ['node.listMaxLimit', '500'], ['node.NodeID', 'n-1'], ['node.seedNodes', 'a:1,b:2'], ['node.bodyIdleTimeoutMs', '5s'],
      ['orders.ordersMaxBodyBytes', '64KiB'], ['stacks.prod.nodes', '5'], ['stacks.prod.orders', 'false'],
    ]) {
      const r = run(box, ['config', 'set', key!, '--value', value!]);
      expect(r.status, r.stderr).toBe(0);
    }
    expect(readConfig(box)).toStrictEqual({
      node: { listMaxLimit: 500, NodeID: 'n-1', seedNodes: ['a:1', 'b:2'], bodyIdleTimeoutMs: 5000 },
      orders: { ordersMaxBodyBytes: 65536 },
      stacks: { prod: { nodes: 5, orders: false } },
    });
  });

  it('stores a dot-notation key of the user\'s own (outside node., orders., stacks.) as the string given, saying so on stderr', () => {
    const box = fresh();
    for (const [key, value] of [['cache.size', '42'], ['app.theme.color', 'dark blue'], ['cache.ttl', '5s']]) {
      const r = run(box, ['config', 'set', key!, '--value', value!]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toContain(`blobstore: ${key} is not a blobstore setting: stored as the string given`);
      expect(r.stdout).toContain(`${key} = ${JSON.stringify(value)}`);
    }
    run(box, ['config', 'set', 'node.listMaxLimit', '--value', '500']);
    expect(readConfig(box)).toStrictEqual({ cache: { size: '42', ttl: '5s' }, app: { theme: { color: 'dark blue' } }, node: { listMaxLimit: 500 } });
    const get = run(box, ['config', 'get', 'cache.size']);
    expect(get.status, get.stderr).toBe(0);
    expect(get.stdout.trim()).toBe('42');
  });

  it('overwrites a key and keeps the others', () => {
    const box = fresh();
    run(box, ['config', 'set', 'node.listMaxLimit', '--value', '500']);
    run(box, ['config', 'set', 'node.region', '--value', 'eu-central-1']);
    run(box, ['config', 'set', 'node.listMaxLimit', '--value', '700']);
    expect(readConfig(box).node).toStrictEqual({ listMaxLimit: 700, region: 'eu-central-1' });
  });

  it('keeps one entry per setting: setting node.NodeID replaces node.nodeId and a top-level NodeID; get and unset take either spelling', () => {
    const box = fresh();
    mkdirSync(dirname(box.configFile), { recursive: true });
    writeFileSync(box.configFile, JSON.stringify({ NodeID: 'top' }));
    expect(run(box, ['config', 'set', 'node.nodeId', '--value', 'old']).status).toBe(0);
    expect(readConfig(box)).toStrictEqual({ node: { nodeId: 'old' } });
    expect(run(box, ['config', 'set', 'node.NodeID', '--value', 'new']).status).toBe(0);
    expect(readConfig(box)).toStrictEqual({ node: { NodeID: 'new' } });
    expect(run(box, ['config', 'get', 'node.nodeId']).stdout.trim()).toBe('new');
    expect(run(box, ['config', 'set', 'node.listMaxLimit', '--value', '500']).status).toBe(0);
    expect(run(box, ['config', 'unset', 'node.nodeId']).status).toBe(0);
    expect(readConfig(box)).toStrictEqual({ node: { listMaxLimit: 500 } });
  });

  it('updates a symlinked config file where it lives and keeps the link', () => {
    const box = fresh();
    const real = join(box.home, 'dotfiles', 'blobstore.json');
    mkdirSync(dirname(real), { recursive: true });
    writeFileSync(real, JSON.stringify({ node: { listMaxLimit: 7 } }));
    mkdirSync(dirname(box.configFile), { recursive: true });
    symlinkSync(real, box.configFile);
    expect(run(box, ['config', 'set', 'node.listMaxLimit', '--value', '9']).status).toBe(0);
    expect(lstatSync(box.configFile).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(real, 'utf8'))).toStrictEqual({ node: { listMaxLimit: 9 } });
    expect(run(box, ['config', 'unset', 'node.listMaxLimit']).status).toBe(0);
    expect(lstatSync(box.configFile).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(real, 'utf8'))).toStrictEqual({});
  });

  it('writes the file with mode 0600 and leaves no temp or lock file behind', () => {
    const box = fresh();
    run(box, ['config', 'set', 'node.region', '--value', 'eu-central-1']);
    expect(statSync(box.configFile).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(box.home, 'config', 'blobstore'))).toStrictEqual(['config.json']);
  });

  it('honours BLOBSTORE_CONFIG', () => {
    const box = fresh();
    const file = join(box.home, 'elsewhere.json');
    expect(run(box, ['config', 'set', 'node.listen', '--value', '127.0.0.1:9999'], { BLOBSTORE_CONFIG: file }).status).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toStrictEqual({ node: { listen: '127.0.0.1:9999' } });
  });

  it('loses no update when many run at once (lock), and the file is always whole JSON', async () => {
    const box = fresh();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => runAsync(box, ['config', 'set', `stacks.s${i}.nodes`, '--value', String(i + 1)])));
    expect(results.map((r) => r.status)).toStrictEqual(Array(8).fill(0));
    expect(Object.keys(readConfig(box).stacks).sort()).toStrictEqual(Array.from({ length: 8 }, (_, i) => `s${i}`).sort());
  });

  it('is read by the node: serve listens where node.listen says', async () => {
    const box = fresh();
    const port = await freePort();
    run(box, ['config', 'set', 'node.listen', '--value', `127.0.0.1:${port}`]);
    run(box, ['config', 'set', 'node.metricsAddr', '--value', '']);
    run(box, ['config', 'set', 'node.grpcAddr', '--value', '']);
    const node = spawn(process.execPath, [BIN, 'serve', '--data-dir', join(box.home, 'd')], { env: box.env, stdio: 'ignore' });
    try {
      let status = 0;
      // A node or service starting on a loaded machine can take more than 5 s.
      const healthy = async (): Promise<boolean> => (status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0)) === 200;
      await waitFor(healthy, { what: () => `/healthz 200 on port ${port} (last: ${status})`, timeoutMs: 30_000 });
      expect(status).toBe(200);
    } finally {
      node.kill('SIGTERM');
      await new Promise((r) => node.once('exit', r));
    }
  });

  it('is read by the orders service: orders serve listens where orders.OrdersAddr says', async () => {
    const box = fresh();
    const port = await freePort();
    run(box, ['config', 'set', 'orders.OrdersAddr', '--value', `127.0.0.1:${port}`]);
    run(box, ['config', 'set', 'orders.ordersDataDir', '--value', join(box.home, 'orders')]);
    const svc = spawn(process.execPath, [BIN, 'orders', 'serve'], { env: box.env, stdio: 'ignore' });
    try {
      let status = 0;
      // A node or service starting on a loaded machine can take more than 5 s.
      const healthy = async (): Promise<boolean> => (status = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 0)) === 200;
      await waitFor(healthy, { what: () => `/healthz 200 on port ${port} (last: ${status})`, timeoutMs: 30_000 });
      expect(status).toBe(200);
    } finally {
      svc.kill('SIGTERM');
      await new Promise((r) => svc.once('exit', r));
    }
  });
});

describe('config set refusals', () => {
  it('an unknown key exits 2 with the list of known keys, and writes nothing', () => {
    const box = fresh();
    const r = run(box, ['config', 'set', 'node.lisen', '--value', '127.0.0.1:1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('blobstore: unknown key "node.lisen"; known keys:');
    expect(r.stderr).toMatch(/node\.<setting> .*\blisten\b.*\bnodeId \(NodeID\)/);
    expect(r.stderr).toMatch(/orders\.<setting> .*\bordersAddr \(OrdersAddr\)/);
    expect(r.stderr).toMatch(/stacks\.<name>\.<key> +nodes, basePort/);
    expect(() => statSync(box.configFile)).toThrow();
  });

  it.each([
    [['config', 'set', 'nodes', '--value', '1'], 'two or more dot-separated segments'],
    [['config', 'set', 'node..x', '--value', '1'], 'two or more dot-separated segments'],
    [['config', 'set', 'node.a b', '--value', '1'], 'two or more dot-separated segments'],
    [['config', 'set', 'x.__proto__', '--value', '1'], 'reserved'],
    [['config', 'set', 'node.listMaxLimit', '--value', 'many'], 'expected an integer'],
    [['config', 'set', 'node.listMaxLimit', '--value', '0'], 'expected at least 1'],
    [['config', 'set', 'stacks.dev.orders', '--value', 'maybe'], 'expected true or false'],
    [['config', 'set', 'node.listen', '--value', 'nowhere'], 'expected host:port'],
    [['config', 'set', 'node.listen'], "required option '--value <value>'"],
    [['config', 'set', 'node.custom-flag', '--value', 'true'], 'unknown key "node.custom-flag"'],
    [['config', 'set', 'stacks.prod.replicas', '--value', '3'], 'unknown key "stacks.prod.replicas"'],
    [['config', 'set', 'node.listMaxLimit.x', '--value', '3'], 'unknown key "node.listMaxLimit.x"'],
  ])('%j exits 2 naming the allowed form, and writes nothing', (args, message) => {
    const box = fresh();
    const r = run(box, args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
    expect(() => statSync(box.configFile)).toThrow();
  });

  it('exits 1 and leaves a config file that is not JSON untouched', () => {
    const box = fresh();
    run(box, ['config', 'set', 'node.region', '--value', 'c']);
    writeFileSync(box.configFile, '{broken');
    const r = run(box, ['config', 'set', 'node.region', '--value', 'd']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('not valid JSON');
    expect(readFileSync(box.configFile, 'utf8')).toBe('{broken');
  });

  it('exits 1 when a key would replace a value that is not an object', () => {
    const box = fresh();
    mkdirSync(dirname(box.configFile), { recursive: true });
    writeFileSync(box.configFile, '{"node": 5}');
    const r = run(box, ['config', 'set', 'node.listen', '--value', '127.0.0.1:1']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('node holds 5, not an object');
    expect(readConfig(box)).toStrictEqual({ node: 5 });
  });

  it('has --help', () => {
    const r = run(fresh(), ['config', 'set', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('--value');
  });
});
