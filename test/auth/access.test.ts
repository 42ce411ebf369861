/**
 * The access table (src/auth/access.ts) walked against a real node with a token file, its gRPC
 * and metrics listeners on: every HTTP route of every listener and every gRPC method, with no
 * credential, each user token, and the cluster secret (which the node made in its data dir).
 * A read token stores and deletes nothing, a write token administers nothing, and no user token,
 * not even admin, opens a node-to-node call.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Access, GRPC_ACCESS, HTTP_ACCESS, type HttpRoute } from '../../src/auth/access.js';
import { expectedId } from '../helpers/blobs.js';
import { REPO } from '../helpers/node-process.js';
import { TOKENS } from './helpers.js';
import { type AuthNode, required, startAuthNode } from './node.js';

type Cred = 'none' | 'read' | 'write' | 'admin' | 'secret';
const CREDS: Cred[] = ['none', 'read', 'write', 'admin', 'secret'];

let n: AuthNode;
let secret = '';
const stored = Buffer.from('bytes the access walk reads');
let id = '';

/** Whether `cred` may pass a route of `access` (admin implies read and write). */
function passes(access: Access, cred: Cred): boolean {
  switch (access) {
    case 'open': return true;
    case 'peer': return cred === 'secret';
    case 'peer-or-admin': return cred === 'secret' || cred === 'admin';
    default: return cred === 'admin' || cred === access;
  }
}

/** The refusal `cred` gets where it does not pass: 401 without a valid user token, 403 without the scope. */
const refusal = (access: Access, cred: Cred): number => (cred === 'none' || cred === 'secret' || access === 'peer' ? 401 : 403);

function headers(cred: Cred): Record<string, string> {
  if (cred === 'none') return {};
  if (cred === 'secret') return { 'x-blobstore-cluster-secret': secret };
  return { authorization: `Bearer ${TOKENS[cred]}` };
}

interface Sample {
  method: string;
  /** On the API listener, or the metrics listener. */
  listener: 'api' | 'metrics';
  path: () => string;
  headers?: Record<string, string>;
  body?: () => Buffer | string;
}

const json = (value: object) => (): string => JSON.stringify(value);
const replica = (): Record<string, string> => ({
  'x-blobstore-size': String(stored.length), 'x-blobstore-checksum': '00'.repeat(32), 'x-blobstore-created-at': '1',
  'x-blobstore-policy': '1', 'x-blobstore-labels-encoded': '',
});

/** A request for every route of the table: adding a route without one fails to compile. */
const SAMPLES: Record<HttpRoute, Sample> = {
  'POST /v1/blobs': { method: 'POST', listener: 'api', path: () => '/v1/blobs', headers: { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '1' }, body: () => stored },
  'PUT /v1/blobs': { method: 'PUT', listener: 'api', path: () => '/v1/blobs', headers: { 'content-type': 'application/json' }, body: json({ data: stored.toString('base64'), policy: 1 }) },
  'GET /v1/blobs': { method: 'GET', listener: 'api', path: () => '/v1/blobs' },
  'ANY /v1/blobs': { method: 'PATCH', listener: 'api', path: () => '/v1/blobs' },
  'POST /v1/blobs/stream': { method: 'POST', listener: 'api', path: () => '/v1/blobs/stream', body: json({ data: stored.toString('base64'), policy: 1, final: true }) },
  'POST /v1/blobs/batch': {
    method: 'POST', listener: 'api', path: () => '/v1/blobs/batch', headers: { 'content-type': 'application/vnd.blobstore.batch', 'x-blobstore-policy': '1' },
    body: () => Buffer.concat([Buffer.from([0, 0, 0, stored.length]), stored]),
  },
  'GET /v1/blobs/:id': { method: 'GET', listener: 'api', path: () => `/v1/blobs/${id}` },
  'HEAD /v1/blobs/:id': { method: 'HEAD', listener: 'api', path: () => `/v1/blobs/${id}` },
  // Of a blob not here: a delete that passes removes nothing the walk reads afterwards.
  'DELETE /v1/blobs/:id': { method: 'DELETE', listener: 'api', path: () => `/v1/blobs/${'0'.repeat(32)}` },
  'ANY /v1/blobs/:id': { method: 'PATCH', listener: 'api', path: () => `/v1/blobs/${id}` },
  'GET /v1/blobs/:id/stream': { method: 'GET', listener: 'api', path: () => `/v1/blobs/${id}/stream` },
  'ANY /v1/blobs/:id/stream': { method: 'PUT', listener: 'api', path: () => `/v1/blobs/${id}/stream` },
  'GET /v1/blobs/:id/stat': { method: 'GET', listener: 'api', path: () => `/v1/blobs/${id}/stat` },
  'ANY /v1/blobs/:id/stat': { method: 'PUT', listener: 'api', path: () => `/v1/blobs/${id}/stat` },
  'POST /v1/cluster/join': { method: 'POST', listener: 'api', path: () => '/v1/cluster/join', body: json({ node_id: 'walker', address: '127.0.0.1:1', capacity_bytes: 1 }) },
  'POST /v1/cluster/leave': { method: 'POST', listener: 'api', path: () => '/v1/cluster/leave', body: json({ node_id: 'nobody' }) },
  'POST /v1/cluster/heartbeat': { method: 'POST', listener: 'api', path: () => '/v1/cluster/heartbeat', body: json({ node_id: 'nobody', used_bytes: 0, blob_count: 0, ring_version: 0 }) },
  'POST /v1/cluster/sync-ring': { method: 'POST', listener: 'api', path: () => '/v1/cluster/sync-ring', body: json({ ring_version: 0 }) },
  'POST /v1/cluster/bootstrap': { method: 'POST', listener: 'api', path: () => '/v1/cluster/bootstrap', body: json({ node_id: 'walker' }) },
  'POST /v1/cluster/repair': { method: 'POST', listener: 'api', path: () => '/v1/cluster/repair', body: json({}) },
  'GET /v1/cluster/state': { method: 'GET', listener: 'api', path: () => '/v1/cluster/state' },
  'ANY /v1/cluster/*': { method: 'DELETE', listener: 'api', path: () => '/v1/cluster/state' },
  'GET /internal/v1/blobs/:id': { method: 'GET', listener: 'api', path: () => `/internal/v1/blobs/${id}` },
  'GET /internal/v1/stat/:id': { method: 'GET', listener: 'api', path: () => `/internal/v1/stat/${id}` },
  'PUT /internal/v1/replicas/:id': { method: 'PUT', listener: 'api', path: () => `/internal/v1/replicas/${'1'.repeat(32)}`, headers: replica(), body: () => stored },
  'POST /internal/v1/replicas': { method: 'POST', listener: 'api', path: () => '/internal/v1/replicas', body: () => Buffer.alloc(0) },
  'POST /internal/v1/shards': { method: 'POST', listener: 'api', path: () => '/internal/v1/shards', body: () => Buffer.alloc(0) },
  'GET /internal/v1/shards/:id/:index': { method: 'GET', listener: 'api', path: () => `/internal/v1/shards/${id}/0` },
  'PUT /internal/v1/shards/:id/:index': { method: 'PUT', listener: 'api', path: () => `/internal/v1/shards/${'2'.repeat(32)}/0`, headers: replica(), body: () => stored },
  'GET /metrics': { method: 'GET', listener: 'metrics', path: () => '/metrics' },
  'GET /api/v1/metrics': { method: 'GET', listener: 'metrics', path: () => '/api/v1/metrics' },
  'GET /api/v1/metrics/detail': { method: 'GET', listener: 'metrics', path: () => '/api/v1/metrics/detail' },
  'GET /health': { method: 'GET', listener: 'metrics', path: () => '/health' },
  'GET /': { method: 'GET', listener: 'metrics', path: () => '/' },
  'HEAD /metrics': { method: 'HEAD', listener: 'metrics', path: () => '/metrics' },
  'HEAD /api/v1/metrics': { method: 'HEAD', listener: 'metrics', path: () => '/api/v1/metrics' },
  'ANY /metrics': { method: 'POST', listener: 'metrics', path: () => '/metrics' },
  'ANY /api/v1/metrics': { method: 'DELETE', listener: 'metrics', path: () => '/api/v1/metrics' },
  'ANY /api/v1/metrics/detail': { method: 'PUT', listener: 'metrics', path: () => '/api/v1/metrics/detail' },
  'ANY /health': { method: 'POST', listener: 'metrics', path: () => '/health' },
  'ANY /': { method: 'POST', listener: 'metrics', path: () => '/' },
  'GET /healthz': { method: 'GET', listener: 'api', path: () => '/healthz' },
  'GET /ui/': { method: 'GET', listener: 'api', path: () => '/ui/' },
  'GET /ui': { method: 'GET', listener: 'api', path: () => '/ui' },
  'GET /openapi.json': { method: 'GET', listener: 'api', path: () => '/openapi.json' },
  'ANY /*': { method: 'GET', listener: 'api', path: () => '/no/such/route' },
};

beforeAll(async () => {
  n = await startAuthNode({ metrics: true, grpc: true });
  secret = readFileSync(join(n.node.dataDir, 'cluster-secret'), 'utf8').trim();
  const res = await fetch(`${n.node.url}/v1/blobs`, { method: 'POST', headers: { ...headers('admin'), 'x-blobstore-policy': '1' }, body: stored });
  expect(res.status).toBe(201);
  id = await expectedId(stored);
});
afterAll(async () => {
  for (const c of Object.values(clients)) c.close();
  await n?.stop();
});

describe('the table itself', () => {
  it('names a scope that only stores or deletes with write (or a peer), and never opens the node-to-node path to users', () => {
    for (const [route, access] of Object.entries(HTTP_ACCESS) as [HttpRoute, Access][]) {
      const [method, path] = route.split(' ') as [string, string];
      if (path.startsWith('/internal/')) expect(access, route).toBe('peer');
      else if (path.startsWith('/v1/cluster/')) expect(['peer-or-admin', 'admin'], route).toContain(access);
      else if (path.startsWith('/v1/blobs') && ['POST', 'PUT', 'DELETE'].includes(method)) expect(access, route).toBe('write');
    }
    expect(GRPC_ACCESS['InternalService/*']).toBe('peer');
  });
});

describe('every HTTP route', () => {
  for (const [route, access] of Object.entries(HTTP_ACCESS) as [HttpRoute, Access][]) {
    it(`${route}: ${access}`, async () => {
      const sample = SAMPLES[route];
      const base = sample.listener === 'api' ? n.node.url : required(n.metricsUrl, 'metrics listener', n.node);
      for (const cred of CREDS) {
        const res = await fetch(`${base}${sample.path()}`, { method: sample.method, headers: { ...sample.headers, ...headers(cred) }, body: sample.body?.() });
        const text = await res.text();
        if (passes(access, cred)) expect([401, 403], `${cred}: ${res.status} ${text.slice(0, 200)}`).not.toContain(res.status);
        else expect(res.status, `${cred}: ${text.slice(0, 200)}`).toBe(refusal(access, cred));
      }
    });
  }

  it('the blob the walk stored is still there', async () => {
    expect((await fetch(`${n.node.url}/v1/blobs/${id}`, { headers: headers('read') })).status).toBe(200);
  });
});

type Client = grpc.Client & Record<string, (...args: unknown[]) => any>;
const definition = loadSync(['blobstore/v1/blob.proto', 'blobstore/v1/cluster.proto', 'blobstore/v1/internal.proto'], {
  includeDirs: [join(REPO, 'src/proto')], keepCase: true, longs: String, defaults: false,
});
const pkg = grpc.loadPackageDefinition(definition) as unknown as { blobstore: { v1: Record<string, grpc.ServiceClientConstructor> } };
const clients: Record<string, Client> = {};

function client(service: string): Client {
  const target = `127.0.0.1:${required(n.grpcPort, 'gRPC listener', n.node)}`;
  return (clients[service] ??= new pkg.blobstore.v1[service]!(target, grpc.credentials.createInsecure()) as unknown as Client);
}

function metadata(cred: Cred): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers(cred))) md.set(k, v);
  return md;
}

/** Calls a method of any shape with an empty request; resolves with the status code. */
function invoke(service: string, method: string, cred: Cred): Promise<number> {
  const def = pkg.blobstore.v1[service]!.service[method]!;
  const c = client(service);
  const md = metadata(cred);
  const deadline = { deadline: Date.now() + 5000 };
  return new Promise((resolve) => {
    const done = (err: grpc.ServiceError | null): void => resolve(err ? err.code : 0);
    if (def.requestStream && !def.responseStream) {
      const call = c[method]!(md, deadline, done) as grpc.ClientWritableStream<unknown>;
      call.end();
    } else if (def.responseStream) {
      const call = (def.requestStream ? c[method]!(md, deadline) : c[method]!({}, md, deadline)) as grpc.ClientReadableStream<unknown> & { end?: () => void };
      if (def.requestStream) call.end!();
      call.on('data', () => undefined);
      call.on('error', done);
      call.on('end', () => resolve(0));
    } else {
      c[method]!({}, md, deadline, done);
    }
  });
}

const UNAUTHENTICATED = 16;
const PERMISSION_DENIED = 7;

describe('every gRPC method', () => {
  const methods = (['BlobService', 'ClusterService', 'InternalService'] as const).flatMap((service) =>
    Object.keys(pkg.blobstore.v1[service]!.service).map((method) => {
      const access: Access = (GRPC_ACCESS as Record<string, Access>)[`${service}/${method}`] ?? (GRPC_ACCESS as Record<string, Access>)[`${service}/*`]!;
      return { service, method, access };
    }));

  it('every method has an entry', () => {
    for (const m of methods) expect(m.access, `${m.service}/${m.method}`).toBeDefined();
  });

  for (const { service, method, access } of methods) {
    it(`${service}/${method}: ${access}`, async () => {
      for (const cred of CREDS) {
        const code = await invoke(service, method, cred);
        if (passes(access, cred)) expect([UNAUTHENTICATED, PERMISSION_DENIED], `${cred}: ${code}`).not.toContain(code);
        else expect(code, cred).toBe(refusal(access, cred) === 401 ? UNAUTHENTICATED : PERMISSION_DENIED);
      }
    });
  }
});
