import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/node-process.js';
import { TOKENS } from './helpers.js';
import { type AuthNode, CREDS, type Cred, expectNoTokenIn, passes, required, startAuthNode } from './node.js';

/**
 * Bearer authentication over gRPC: the token travels as `authorization: Bearer <token>` metadata,
 * with the HTTP outcomes: UNAUTHENTICATED (16) without a valid token, PERMISSION_DENIED (7)
 * without the scope. BlobService reads need read, writes write; ClusterService admin (past the
 * gate it answers as a one-node cluster does). InternalService takes no user token:
 * without the cluster secret (the node made one in its data dir) every call is refused.
 * The client is built here from the .proto files with proto-loader, independent of the server's.
 */

type Client = grpc.Client & Record<string, (...args: unknown[]) => any>;
const definition = loadSync(['blobstore/v1/blob.proto', 'blobstore/v1/cluster.proto', 'blobstore/v1/internal.proto'], {
  includeDirs: [join(REPO, 'src/proto')], keepCase: true, longs: String, defaults: false,
});
const pkg = grpc.loadPackageDefinition(definition) as unknown as { blobstore: { v1: Record<string, grpc.ServiceClientConstructor> } };

let n: AuthNode;
const clients: Record<string, Client> = {};
const stored = Buffer.from('bytes stored over gRPC with a token');
let storedId: Buffer;

function client(service: string): Client {
  const target = `127.0.0.1:${required(n.grpcPort, 'gRPC listener', n.node)}`;
  return (clients[service] ??= new pkg.blobstore.v1[service]!(target, grpc.credentials.createInsecure()) as unknown as Client);
}

function metadata(cred: Cred): grpc.Metadata {
  const md = new grpc.Metadata();
  if (cred !== 'none') md.set('authorization', `Bearer ${TOKENS[cred]}`);
  return md;
}

interface Outcome {
  code: number;
  details: string;
}

function unary(service: string, method: string, request: unknown, md: grpc.Metadata): Promise<Outcome> {
  return new Promise((resolve) => {
    client(service)[method]!(request, md, (err: grpc.ServiceError | null) => resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '' }));
  });
}

function putStream(md: grpc.Metadata): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = client('BlobService').PutStream!(md, (err: grpc.ServiceError | null) => resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '' }));
    call.write({ data: Buffer.from('streamed over gRPC'), policy: 1, final: true });
    call.end();
  });
}

function getStream(md: grpc.Metadata): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = client('BlobService').GetStream!({ id: { id: storedId } }, md) as grpc.ClientReadableStream<unknown>;
    call.on('data', () => {});
    call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
    call.on('end', () => resolve({ code: 0, details: '' }));
  });
}

beforeAll(async () => {
  n = await startAuthNode({ grpc: true });
  const put = await new Promise<{ id: { id: Buffer } }>((resolve, reject) => {
    client('BlobService').Put!({ data: stored, policy: 1 }, metadata('write'), (err: grpc.ServiceError | null, res: { id: { id: Buffer } }) => (err ? reject(err) : resolve(res)));
  });
  storedId = put.id.id;
});
afterAll(async () => {
  for (const c of Object.values(clients)) c.close();
  await n?.stop();
});

interface Rpc {
  name: string;
  scope: 'read' | 'write' | 'admin';
  call(md: grpc.Metadata): Promise<Outcome>;
  /** Codes past the gate. */
  ok: number[];
}

const RPCS: Rpc[] = [
  { name: 'BlobService.Get', scope: 'read', call: (md) => unary('BlobService', 'Get', { id: { id: storedId } }, md), ok: [0] },
  { name: 'BlobService.Stat', scope: 'read', call: (md) => unary('BlobService', 'Stat', { id: { id: storedId } }, md), ok: [0] },
  { name: 'BlobService.List', scope: 'read', call: (md) => unary('BlobService', 'List', { limit: 5 }, md), ok: [0] },
  { name: 'BlobService.GetStream', scope: 'read', call: getStream, ok: [0] },
  { name: 'BlobService.Put', scope: 'write', call: (md) => unary('BlobService', 'Put', { data: stored, policy: 1 }, md), ok: [0] },
  { name: 'BlobService.Delete', scope: 'write', call: (md) => unary('BlobService', 'Delete', { id: { id: Buffer.alloc(16, 7) } }, md), ok: [0] },
  { name: 'BlobService.PutStream', scope: 'write', call: putStream, ok: [0] },
  { name: 'ClusterService.Join', scope: 'admin', call: (md) => unary('ClusterService', 'Join', { node_id: 'other', address: '127.0.0.1:1', capacity_bytes: 1 }, md), ok: [0] },
  { name: 'ClusterService.Leave', scope: 'admin', call: (md) => unary('ClusterService', 'Leave', { node_id: 'nobody' }, md), ok: [5] },
  { name: 'ClusterService.Heartbeat', scope: 'admin', call: (md) => unary('ClusterService', 'Heartbeat', { node_id: 'nobody', used_bytes: 0, blob_count: 0, ring_version: 0 }, md), ok: [0] },
  { name: 'ClusterService.GetState', scope: 'admin', call: (md) => unary('ClusterService', 'GetState', {}, md), ok: [0] },
  { name: 'ClusterService.SyncRing', scope: 'admin', call: (md) => unary('ClusterService', 'SyncRing', { ring_version: 0 }, md), ok: [0] },
];

for (const rpc of RPCS) {
  describe(`${rpc.name} (${rpc.scope} scope)`, () => {
    for (const cred of CREDS) {
      const pass = passes(cred, rpc.scope);
      const denied = cred === 'none' || cred === 'wrong' ? 16 : 7;
      it(`with ${cred === 'none' ? 'no token' : `the ${cred} token`} ${pass ? `answers ${rpc.ok.join(' or ')}` : `answers ${denied === 16 ? 'UNAUTHENTICATED' : 'PERMISSION_DENIED'}`}`, async () => {
        const r = await rpc.call(metadata(cred));
        if (pass) expect(rpc.ok, `${r.code} ${r.details}`).toContain(r.code);
        else {
          expect(r.code, r.details).toBe(denied);
          expect(r.details).toBe(denied === 16 ? 'missing or invalid bearer token' : `token lacks the ${rpc.scope} scope`);
        }
      });
    }
  });
}

describe('metadata', () => {
  it('the scheme name is case-insensitive; another scheme or two tokens are UNAUTHENTICATED', async () => {
    const md = (value: string) => {
      const m = new grpc.Metadata();
      m.set('authorization', value);
      return m;
    };
    expect((await unary('BlobService', 'List', {}, md(`bearer ${TOKENS.read}`))).code).toBe(0);
    expect((await unary('BlobService', 'List', {}, md(`Basic ${TOKENS.read}`))).code).toBe(16);
    expect((await unary('BlobService', 'List', {}, md(`Bearer ${TOKENS.read} ${TOKENS.read}`))).code).toBe(16);
    expect((await unary('BlobService', 'List', {}, md(TOKENS.read))).code).toBe(16);
  });

  it('InternalService takes no user token: without the cluster secret every call is UNAUTHENTICATED, an admin token too', async () => {
    for (const [method, request] of [['DeleteInternal', { id: { id: storedId } }], ['StatBlob', { id: { id: storedId } }], ['HaveBlobs', { ids: [storedId] }]] as const) {
      for (const md of [new grpc.Metadata(), metadata('admin'), metadata('write')]) {
        expect((await unary('InternalService', method, request, md)).code, method).toBe(16);
      }
    }
    // The blob is still there for the admin token.
    expect((await unary('BlobService', 'Stat', { id: { id: storedId } }, metadata('admin'))).code).toBe(0);
  });
});

describe('logs', () => {
  it('the node wrote no token or token digest to stdout or stderr', async () => {
    for (const c of Object.values(clients)) c.close();
    expect(await n.node.stop()).toBe(0);
    expectNoTokenIn(n.node.output());
  });
});
