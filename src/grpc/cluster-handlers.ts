/**
 * ClusterService over gRPC: the cluster secret (a peer) or a token with the admin scope (with
 * tokens off, beyond loopback: the secret; src/auth/access.ts), then
 * ClusterApi. A refused heartbeat is an answer, not a failure: HeartbeatResponse with ok false
 * (and `rejoin` for an unknown node), as the spec's HTTP 404 body carries it.
 */
import type * as grpc from '@grpc/grpc-js';
import { checkPeerOrAdmin } from '../auth/access.js';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Gate } from '../auth/gate.js';
import { type ClusterApi, HeartbeatDenied } from '../cluster/cluster-api.js';
import { SECRET_METADATA } from '../cluster/transport/peer-link.js';
import type { Logger } from '../log/logger.js';
import type { MalformedMessage } from '../proto/loader.js';
import { authorization, toStatus, wellFormed } from './status.js';

type Unary = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

export function clusterServiceHandlers(api: ClusterApi, gate: Gate, log: Logger): UntypedServiceImplementation {
  const unary = (method: string, fn: (request: unknown) => unknown): Unary => (call, callback) => {
    const fail = (err: unknown): void => callback(toStatus(err, `ClusterService.${method}`, log, call.metadata));
    let result: unknown;
    try {
      const secret = call.metadata.get(SECRET_METADATA)[0];
      const fromPeer = api.fromPeer(typeof secret === 'string' ? secret : '');
      checkPeerOrAdmin(gate, { fromPeer, authorization: authorization(call.metadata) }, { guarded: api.guarded, reading: method === 'GetState' });
      result = fn(wellFormed(call.request as object | MalformedMessage));
    } catch (err) {
      fail(err);
      return;
    }
    Promise.resolve(result).then((res) => callback(null, res), (err: unknown) => {
      if (err instanceof HeartbeatDenied) callback(null, err.response);
      else fail(err);
    });
  };
  return {
    Join: unary('Join', (r) => api.join(withZeros(r, ['capacity_bytes', 'incarnation']))),
    Leave: unary('Leave', (r) => api.leave(r)),
    Heartbeat: unary('Heartbeat', (r) => api.heartbeat(withZeros(r, ['used_bytes', 'blob_count', 'ring_version']))),
    GetState: unary('GetState', () => api.state()),
    SyncRing: unary('SyncRing', (r) => api.syncRing(withZeros(r, ['ring_version']))),
  } as UntypedServiceImplementation;
}

/**
 * Proto3 sends no zero: a number field the message lacks is 0 (a node with no blobs heartbeats
 * `used_bytes: 0`). The HTTP routes, whose JSON can say 0, still want the fields the spec requires.
 */
function withZeros(request: unknown, fields: readonly string[]): unknown {
  if (request === null || typeof request !== 'object') return request;
  const r = request as Record<string, unknown>;
  const filled: Record<string, unknown> = { ...r };
  for (const f of fields) if (filled[f] === undefined) filled[f] = 0;
  return filled;
}
