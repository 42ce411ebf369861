/** `blobstore config get | list | unset | path` with the real bin in a temp HOME. */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Sandbox, run, useSandboxes } from './helpers.js';

const fresh = useSandboxes();

function set(box: Sandbox, key: string, value: string): void {
  const r = run(box, ['config', 'set', key, '--value', value]);
  expect(r.status, r.stderr).toBe(0);
}

describe('config path', () => {
  it('prints $XDG_CONFIG_HOME/blobstore/config.json, or $BLOBSTORE_CONFIG when set', () => {
    const box = fresh();
    expect(run(box, ['config', 'path']).stdout).toBe(`${box.configFile}\n`);
    const other = join(box.home, 'other.json');
    expect(run(box, ['config', 'path'], { BLOBSTORE_CONFIG: other }).stdout).toBe(`${other}\n`);
  });
});

describe('config get', () => {
  it('prints a stored value: strings bare, numbers, booleans and lists as JSON', () => {
    const box = fresh();
    set(box, 'node.listen', '127.0.0.1:9000');
    set(box, 'node.listMaxLimit', '500');
    set(box, 'node.seedNodes', 'a:1,b:2');
    set(box, 'stacks.prod.orders', 'false');
    expect(run(box, ['config', 'get', 'node.listen']).stdout).toBe('127.0.0.1:9000\n');
    expect(run(box, ['config', 'get', 'node.listMaxLimit']).stdout).toBe('500\n');
    expect(run(box, ['config', 'get', 'node.seedNodes']).stdout).toBe('["a:1","b:2"]\n');
    expect(run(box, ['config', 'get', 'stacks.prod.orders']).stdout).toBe('false\n');
    expect(run(box, ['config', 'get', 'stacks.prod']).stdout).toBe('{"orders":false}\n');
  });

  it('finds a setting stored under its spec name (node.NodeID for node.nodeId) and the other way round', () => {
    const box = fresh();
    set(box, 'node.NodeID', 'n-7');
    expect(run(box, ['config', 'get', 'node.nodeId']).stdout).toBe('n-7\n');
    expect(run(box, ['config', 'get', 'node.NodeID']).stdout).toBe('n-7\n');
  });

  it('prints the default of a known setting the file does not set, saying so on stderr', () => {
    const box = fresh();
    const r = run(box, ['config', 'get', 'node.maxBlobBytes']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('5GiB\n');
    expect(r.stderr).toBe(`blobstore: node.maxBlobBytes is not set in ${box.configFile}; that is its default\n`);
    expect(run(box, ['config', 'get', 'node.nodeId']).stdout).toBe(`${hostname()}\n`);
  });

  it('exits 1 for a key that is neither stored nor known, 2 for a malformed key', () => {
    const box = fresh();
    const missing = run(box, ['config', 'get', 'app.theme']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe(`blobstore: app.theme is not set in ${box.configFile}\n`);
    expect(run(box, ['config', 'get', 'nodots']).status).toBe(2);
  });
});

describe('config list', () => {
  it('prints every stored key as "key = value", nothing for an empty file', () => {
    const box = fresh();
    const empty = run(box, ['config', 'list']);
    expect(empty.status).toBe(0);
    expect(empty.stdout).toBe('');
    set(box, 'node.listMaxLimit', '500');
    set(box, 'stacks.prod.nodes', '5');
    set(box, 'orders.OrdersAddr', '127.0.0.1:9001');
    expect(run(box, ['config', 'list']).stdout).toBe('node.listMaxLimit = 500\nstacks.prod.nodes = 5\norders.OrdersAddr = 127.0.0.1:9001\n');
  });

  it('--all adds every node and orders setting the file does not set, with its default and flag', () => {
    const box = fresh();
    set(box, 'node.listMaxLimit', '500');
    const lines = run(box, ['config', 'list', '--all']).stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('node.listMaxLimit = 500');
    expect(lines).toContain('node.listen = 127.0.0.1:8080  (default; flag --listen)');
    expect(lines).toContain('node.logLevel = info  (default; flag --log-level)');
    expect(lines).toContain('orders.ordersAddr = 127.0.0.1:8000  (default; flag --orders-addr)');
    expect(lines.filter((l) => l.startsWith('node.listMaxLimit'))).toHaveLength(1);
  });
});

describe('config unset', () => {
  it('removes a key and the objects it leaves empty; the setting is back to its default', () => {
    const box = fresh();
    set(box, 'node.listMaxLimit', '500');
    set(box, 'stacks.prod.nodes', '5');
    const r = run(box, ['config', 'unset', 'stacks.prod.nodes']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`stacks.prod.nodes removed (${box.configFile})\n`);
    expect(JSON.parse(readFileSync(box.configFile, 'utf8'))).toStrictEqual({ node: { listMaxLimit: 500 } });
    expect(run(box, ['config', 'unset', 'node.listMaxLimit']).status).toBe(0);
    expect(JSON.parse(readFileSync(box.configFile, 'utf8'))).toStrictEqual({});
    expect(run(box, ['config', 'get', 'node.listMaxLimit']).stdout).toBe('10000\n');
    expect(statSync(box.configFile).mode & 0o777).toBe(0o600);
  });

  it('removes keys no setting knows (left by hand or an older version)', () => {
    const box = fresh();
    mkdirSync(dirname(box.configFile), { recursive: true });
    writeFileSync(box.configFile, '{"app": {"theme": "dark"}, "node": {"listen": "127.0.0.1:1"}}');
    expect(run(box, ['config', 'unset', 'app.theme']).status).toBe(0);
    expect(JSON.parse(readFileSync(box.configFile, 'utf8'))).toStrictEqual({ node: { listen: '127.0.0.1:1' } });
  });

  it('succeeds and changes nothing when the key is not there', () => {
    const box = fresh();
    const r = run(box, ['config', 'unset', 'node.listen']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`node.listen was not set (${box.configFile}); nothing changed\n`);
    expect(() => statSync(box.configFile)).toThrow();
  });
});
