import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuthNode, CREDS, type Cred, authorization, call, expectDenied, expectNoTokenIn, passes, required, startAuthNode } from './node.js';
import { expectedId } from '../helpers/blobs.js';
import { TOKENS } from './helpers.js';
import { logMessages } from '../helpers/log.js';

/**
 * Bearer authentication over HTTP on a real node with a token file: every route class against
 * every credential (none, an unknown token, read, write, admin). Blob reads need read, blob writes
 * write, cluster operations admin (they answer 501 once past the gate until the cluster issue),
 * /metrics and /api/v1/metrics read; /health and /healthz stay open.
 */

let n: AuthNode;
let variantA: AuthNode;
const stored = Buffer.from('authenticated bytes\n');
let id = '';

beforeAll(async () => {
  [n, variantA] = await Promise.all([startAuthNode({ metrics: true }), startAuthNode({ args: ['--api-variant', 'a'] })]);
  const r = await call(`${n.node.url}/v1/blobs`, 'POST', { ...authorization('admin'), 'content-type': 'application/octet-stream', 'x-blobstore-policy': '1' }, stored);
  expect(r.status, r.text).toBe(201);
  id = (JSON.parse(r.text) as { id: string }).id;
});
afterAll(async () => {
  await Promise.all([n?.stop(), variantA?.stop()]);
});

type RouteScope = 'read' | 'write' | 'admin' | 'open';
interface Route {
  name: string;
  scope: RouteScope;
  method: string;
  /** URL (the node is started in beforeAll). */
  url(): string;
  headers?: Record<string, string>;
  body?: () => string | Buffer;
  /** Statuses the route answers once past the gate. */
  ok: number[];
}

const api = (path: string) => () => `${n.node.url}${path}`;
const blob = (suffix = '') => () => `${n.node.url}/v1/blobs/${id}${suffix}`;
const metrics = (path: string) => () => `${required(n.metricsUrl, 'metrics listener', n.node)}${path}`;
const raw = { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '1' };
const json = { 'content-type': 'application/json' };
const putChunks = () => `${JSON.stringify({ data: Buffer.from('streamed').toString('base64'), policy: 'REPLICATION_POLICY_NONE', final: true })}\n`;

const ROUTES: Route[] = [
  { name: 'GET /v1/blobs/{id}', scope: 'read', method: 'GET', url: blob(), ok: [200] },
  { name: 'HEAD /v1/blobs/{id}', scope: 'read', method: 'HEAD', url: blob(), ok: [200] },
  { name: 'GET /v1/blobs', scope: 'read', method: 'GET', url: api('/v1/blobs?limit=5'), ok: [200] },
  { name: 'GET /v1/blobs/{id}/stream', scope: 'read', method: 'GET', url: blob('/stream'), ok: [200] },
  { name: 'POST /v1/blobs', scope: 'write', method: 'POST', url: api('/v1/blobs'), headers: raw, body: () => stored, ok: [200, 201] },
  { name: 'PUT /v1/blobs', scope: 'write', method: 'PUT', url: api('/v1/blobs'), headers: json, body: () => JSON.stringify({ data: stored.toString('base64'), policy: 1 }), ok: [200, 201] },
  { name: 'DELETE /v1/blobs/{id}', scope: 'write', method: 'DELETE', url: api('/v1/blobs/00000000000000000000000000000000'), ok: [200] },
  { name: 'POST /v1/blobs/stream', scope: 'write', method: 'POST', url: api('/v1/blobs/stream'), headers: { 'content-type': 'application/x-ndjson' }, body: putChunks, ok: [200, 201] },
  { name: 'POST /v1/cluster/join', scope: 'admin', method: 'POST', url: api('/v1/cluster/join'), headers: json, body: () => JSON.stringify({ node_id: 'other', address: '127.0.0.1:1', capacity_bytes: 1 }), ok: [200, 501] },
  { name: 'POST /v1/cluster/leave', scope: 'admin', method: 'POST', url: api('/v1/cluster/leave'), headers: json, body: () => JSON.stringify({ node_id: 'nobody' }), ok: [200, 501] },
  { name: 'POST /v1/cluster/heartbeat', scope: 'admin', method: 'POST', url: api('/v1/cluster/heartbeat'), headers: json, body: () => JSON.stringify({ node_id: 'nobody', used_bytes: 0, blob_count: 0, ring_version: 0 }), ok: [200, 404, 501] },
  { name: 'GET /v1/cluster/state', scope: 'admin', method: 'GET', url: api('/v1/cluster/state'), ok: [200, 501] },
  { name: 'POST /v1/cluster/sync-ring', scope: 'admin', method: 'POST', url: api('/v1/cluster/sync-ring'), headers: json, body: () => JSON.stringify({ ring_version: 0 }), ok: [200, 501] },
  { name: 'GET /metrics', scope: 'read', method: 'GET', url: metrics('/metrics'), ok: [200] },
  { name: 'GET /api/v1/metrics', scope: 'read', method: 'GET', url: metrics('/api/v1/metrics'), ok: [200] },
  { name: 'GET /health (metrics listener)', scope: 'open', method: 'GET', url: metrics('/health'), ok: [200] },
  { name: 'GET /healthz', scope: 'open', method: 'GET', url: api('/healthz'), ok: [200] },
];

const credName: Record<Cred, string> = { none: 'no token', wrong: 'an unknown token', read: 'a read token', write: 'a write token', admin: 'an admin token' };

for (const route of ROUTES) {
  describe(`${route.name} (${route.scope === 'open' ? 'open' : `${route.scope} scope`})`, () => {
    for (const cred of CREDS) {
      const pass = passes(cred, route.scope);
      const expected = pass ? `answers ${route.ok.join(' or ')}` : cred === 'none' || cred === 'wrong' ? 'answers 401' : 'answers 403';
      it(`with ${credName[cred]} ${expected}`, async () => {
        const r = await call(route.url(), route.method, { ...route.headers, ...authorization(cred) }, route.body?.());
        if (pass) expect(route.ok, `${r.status} ${r.text.slice(0, 300)}`).toContain(r.status);
        else expectDenied(r, cred === 'none' || cred === 'wrong' ? 401 : 403, route.scope, 'b', route.method);
      });
    }
  });
}

describe('the gate comes first', () => {
  it('an invalid blob id without a token answers 401, not 400', async () => {
    expectDenied(await call(`${n.node.url}/v1/blobs/not-an-id`, 'GET'), 401, 'read', 'b', 'GET');
  });

  it('a malformed body without a token answers 401, not 400 or 415', async () => {
    expectDenied(await call(`${n.node.url}/v1/blobs`, 'POST', json, '{bad'), 401, 'write', 'b', 'POST');
    expectDenied(await call(`${n.node.url}/v1/blobs`, 'POST', { 'content-type': 'text/plain' }, 'x'), 401, 'write', 'b', 'POST');
  });

  it('a read token storing a blob answers 403 and stores nothing', async () => {
    const fresh = Buffer.from(`never stored ${Date.now()}`);
    expectDenied(await call(`${n.node.url}/v1/blobs`, 'POST', { ...raw, ...authorization('read') }, fresh), 403, 'write', 'b', 'POST');
    const head = await call(`${n.node.url}/v1/blobs/${await expectedId(fresh)}`, 'HEAD', authorization('admin'));
    expect(head.status).toBe(404);
  });

  it('an admin token reads the stored bytes', async () => {
    const got = await call(`${n.node.url}/v1/blobs/${id}`, 'GET', authorization('admin'));
    expect(Buffer.from(got.text)).toStrictEqual(stored);
  });

  it('the scheme name is case-insensitive over HTTP', async () => {
    const r = await call(`${n.node.url}/v1/blobs/${id}`, 'GET', { authorization: `bEaReR ${TOKENS.read}` });
    expect(r.status).toBe(200);
  });

  it('a token in another scheme or beside a second token answers 401', async () => {
    for (const header of [`Basic ${TOKENS.admin}`, `Bearer ${TOKENS.admin} ${TOKENS.admin}`, `Token ${TOKENS.admin}`, TOKENS.admin]) {
      expectDenied(await call(`${n.node.url}/v1/blobs/${id}`, 'GET', { authorization: header }), 401, 'read', 'b', 'GET');
    }
  });
});

describe('variant A error bodies', () => {
  it('401 is {code: 16, message} and 403 {code: 7, message}', async () => {
    const base = variantA.node.url;
    expectDenied(await call(`${base}/v1/blobs`, 'GET'), 401, 'read', 'a', 'GET');
    expectDenied(await call(`${base}/v1/blobs`, 'PUT', { ...json, ...authorization('read') }, '{"data": "aGk="}'), 403, 'write', 'a', 'PUT');
    expectDenied(await call(`${base}/v1/blobs/${id}/stat`, 'GET', authorization('write')), 403, 'read', 'a', 'GET');
    expectDenied(await call(`${base}/v1/cluster/state`, 'GET', authorization('write')), 403, 'admin', 'a', 'GET');
    expect((await call(`${base}/v1/blobs`, 'GET', authorization('read'))).status).toBe(200);
    expect((await call(`${base}/healthz`, 'GET')).status).toBe(200);
  });
});

describe('logs', () => {
  it('neither node wrote a token or a token digest to stdout or stderr', async () => {
    await Promise.all([n.node.stop(), variantA.node.stop()]);
    expect(logMessages(n.node.output()).some((m) => m.startsWith('bearer tokens required; 5 tokens loaded from'))).toBe(true);
    expectNoTokenIn(n.node.output());
    expectNoTokenIn(variantA.node.output());
  });
});
