import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, type OrdersProcess, call, removeDir, startOrders, tempDir } from './helpers.js';
import { logLines } from '../helpers/log.js';

/** Bearer authentication, on because OrdersApiKeysFile is configured (docs/adr/0010-orders-and-cli.md). */

const READ = 'read-key-0123456789';
const WRITE = 'rw-key-0123456789';
const EXPIRED = 'old-key-0123456789';

let svc: OrdersProcess;
let dir: string;
beforeAll(async () => {
  dir = tempDir('keys');
  const keysFile = join(dir, 'keys.json');
  writeFileSync(keysFile, JSON.stringify([
    { key: READ, scope: 'read' },
    { key: WRITE, scope: 'read-write' },
    { key: EXPIRED, scope: 'read-write', expiresAt: '2001-01-01T00:00:00Z' },
  ]), { mode: 0o600 });
  svc = await startOrders({ env: { BLOBSTORE_ORDERS_API_KEYS_FILE: keysFile } });
});
afterAll(async () => {
  await svc.stop();
  removeDir(svc.dataDir);
  removeDir(dir);
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const create = (headers: Record<string, string>) =>
  call(svc.url, 'POST', '/orders', { body: '{"amount": 10, "currency": "USD"}', headers });

describe('401 without a valid credential', () => {
  it.each([
    ['no Authorization header', {}, 'Not authenticated'],
    ['another scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, 'Not authenticated'],
    ['a scheme without credential', { authorization: 'Bearer' }, 'Not authenticated'],
    ['an unknown key', bearer('nope'), 'Invalid authentication credentials'],
    ['an expired key', bearer(EXPIRED), 'Invalid authentication credentials'],
  ])('%s answers 401 with WWW-Authenticate: Bearer', async (_n, headers, detail) => {
    for (const [method, path] of [['GET', '/orders'], ['GET', '/orders/1'], ['POST', '/orders'], ['DELETE', '/orders/1']] as const) {
      const r = await call(svc.url, method, path, { headers });
      expect(r.status).toBe(401);
      expect(r.json).toStrictEqual({ detail });
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it('checks credentials before reading the body (no validation leak)', async () => {
    const r = await call(svc.url, 'POST', '/orders', { body: '{bad json' });
    expect(r.status).toBe(401);
  });
});

describe('scopes', () => {
  it('a read key lists and fetches orders', async () => {
    expect((await call(svc.url, 'GET', '/orders', { headers: bearer(READ) })).status).toBe(200);
    expect((await call(svc.url, 'GET', '/orders/1', { headers: bearer(READ) })).status).toBe(404);
  });

  it('a read key gets 403 on create and cancel', async () => {
    const r = await create(bearer(READ));
    expect(r.status).toBe(403);
    expect(r.json).toStrictEqual({ detail: 'Not enough permissions' });
    expect((await call(svc.url, 'DELETE', '/orders/1', { headers: bearer(READ) })).status).toBe(403);
  });

  it('a read-write key creates and cancels (scheme name is case-insensitive)', async () => {
    const made = await create({ authorization: `bearer ${WRITE}` });
    expect(made.status).toBe(200);
    const canceled = await call(svc.url, 'DELETE', `/orders/${made.json.id}`, { headers: bearer(WRITE) });
    expect(canceled.json).toStrictEqual({ id: made.json.id, status: 'canceled' });
  });

  it('leaves /healthz open', async () => {
    expect((await call(svc.url, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('keys file validation', () => {
  it('refuses to start (exit 2) with a malformed keys file, naming the problem', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify([{ key: 'k', scope: 'admin' }]));
    const r = spawnSync(process.execPath, [BIN, 'orders', 'serve', '--orders-addr', '127.0.0.1:0', '--orders-data-dir', join(dir, 'd'), '--orders-api-keys-file', bad], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(logLines(r.stdout).find((l) => l.level === 'fatal')?.msg).toContain('"scope" must be "read" or "read-write"');
  });
});
