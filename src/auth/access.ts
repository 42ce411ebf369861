/**
 * Who may call what: every route of every listener and every gRPC method, and the credential it
 * takes. One table; the routers refuse to register a route it does not name (src/http/router.ts),
 * the handlers take their scope from it, and test/auth/access.test.ts walks it against a real
 * node (a read token stores and deletes nothing, a write token administers nothing, no user token
 * opens a node-to-node call).
 *
 *   open           anyone (health, the UI page, the OpenAPI document, 404/405 answers)
 *   read / write   a bearer token with that scope (admin implies both), when tokens are on
 *   admin          a bearer token with the admin scope
 *   peer           the cluster secret only (src/auth/cluster-secret.ts); user tokens never
 *   peer-or-admin  the cluster secret (a peer), or an admin token (an operator)
 */
import { BlobstoreError } from '../errors/errors.js';
import type { Gate, Scope } from './gate.js';

export type Access = 'open' | Scope | 'peer' | 'peer-or-admin';

/** HTTP routes as `METHOD pattern` (uWS patterns; GET covers HEAD unless HEAD is listed; ANY: the other methods). */
export const HTTP_ACCESS = {
  // The blob API (both variants).
  'POST /v1/blobs': 'write',
  'PUT /v1/blobs': 'write',
  'GET /v1/blobs': 'read',
  'ANY /v1/blobs': 'read',
  'POST /v1/blobs/stream': 'write',
  'POST /v1/blobs/batch': 'write',
  'GET /v1/blobs/:id': 'read',
  'HEAD /v1/blobs/:id': 'read',
  'DELETE /v1/blobs/:id': 'write',
  'ANY /v1/blobs/:id': 'read',
  'GET /v1/blobs/:id/stream': 'read',
  'ANY /v1/blobs/:id/stream': 'read',
  'GET /v1/blobs/:id/stat': 'read',
  'ANY /v1/blobs/:id/stat': 'read',
  // The cluster API: peers call it too.
  'POST /v1/cluster/join': 'peer-or-admin',
  'POST /v1/cluster/leave': 'peer-or-admin',
  'POST /v1/cluster/heartbeat': 'peer-or-admin',
  'POST /v1/cluster/sync-ring': 'peer-or-admin',
  'POST /v1/cluster/repair': 'peer-or-admin',
  'POST /v1/cluster/bootstrap': 'peer-or-admin',
  'GET /v1/cluster/state': 'peer-or-admin',
  'ANY /v1/cluster/*': 'admin',
  // The node-to-node data path.
  'GET /internal/v1/blobs/:id': 'peer',
  'GET /internal/v1/stat/:id': 'peer',
  'PUT /internal/v1/replicas/:id': 'peer',
  'POST /internal/v1/replicas': 'peer',
  'POST /internal/v1/shards': 'peer',
  'GET /internal/v1/shards/:id/:index': 'peer',
  'PUT /internal/v1/shards/:id/:index': 'peer',
  // Operations (the metrics listener, or the API port in the `same` layout).
  'GET /metrics': 'read',
  'GET /api/v1/metrics': 'read',
  'GET /api/v1/metrics/detail': 'read',
  'GET /health': 'open',
  'GET /': 'open',
  'HEAD /metrics': 'open',
  'HEAD /api/v1/metrics': 'open',
  'ANY /metrics': 'open',
  'ANY /api/v1/metrics': 'open',
  'ANY /api/v1/metrics/detail': 'open',
  'ANY /health': 'open',
  'ANY /': 'open',
  // Pages and documents (their requests to the API carry the token), health, and the 404 of the rest.
  'GET /healthz': 'open',
  'GET /ui/': 'open',
  'GET /ui': 'open',
  'GET /openapi.json': 'open',
  'ANY /*': 'open',
} as const satisfies Record<string, Access>;

export type HttpRoute = keyof typeof HTTP_ACCESS;

/** gRPC methods as `Service/Method` (package blobstore.v1); `Service/*` covers a whole service. */
export const GRPC_ACCESS = {
  'BlobService/Put': 'write',
  'BlobService/PutStream': 'write',
  'BlobService/Delete': 'write',
  'BlobService/Get': 'read',
  'BlobService/GetStream': 'read',
  'BlobService/Stat': 'read',
  'BlobService/List': 'read',
  'ClusterService/*': 'peer-or-admin',
  'InternalService/*': 'peer',
} as const satisfies Record<string, Access>;

export type GrpcMethod = keyof typeof GRPC_ACCESS;

/** The user scope a route needs (for routes that take a bearer token). */
export function scopeOf(route: HttpRoute | GrpcMethod): Scope {
  const access: Access = (HTTP_ACCESS as Record<string, Access>)[route] ?? (GRPC_ACCESS as Record<string, Access>)[route]!;
  if (access === 'peer-or-admin') return 'admin';
  if (access === 'open' || access === 'peer') throw new Error(`${route} takes no user token (src/auth/access.ts)`);
  return access;
}

/** The access of an HTTP route; throws for a route the table does not name (a bug: add it). */
export function accessOf(method: string, pattern: string): Access {
  const access = (HTTP_ACCESS as Record<string, Access>)[`${method} ${pattern}`];
  if (access === undefined) throw new Error(`route ${method} ${pattern} is not in the access table (src/auth/access.ts)`);
  return access;
}

/**
 * Lets a caller of a peer-or-admin route through, or throws 401/403: a peer (`fromPeer`: it
 * carries the cluster secret); else, with tokens on, an admin token. With tokens off, a node
 * whose node-to-node calls take the secret (`guarded`: reachable beyond loopback) lets nobody
 * else change its membership: a join would make the caller a member, and members are sent the
 * secret. `reading` (the cluster's state) is then as open as the blob API.
 */
export function checkPeerOrAdmin(gate: Gate, caller: { fromPeer: boolean; authorization: string }, node: { guarded: boolean; reading: boolean }): void {
  if (caller.fromPeer) return;
  if (gate.enabled) return gate.check(caller.authorization, 'admin');
  if (node.reading || !node.guarded) return;
  throw new BlobstoreError('unauthenticated', 'this node is reachable beyond loopback: its cluster routes take the cluster secret (header x-blobstore-cluster-secret), or an admin token where tokens are on');
}
