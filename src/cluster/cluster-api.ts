/**
 * The public cluster operations (the spec's ClusterService) with their request checks, once for
 * both transports: gRPC (src/grpc/cluster-handlers.ts) and HTTP /v1/cluster/* (src/http/
 * cluster-routes.ts) decode, call, and encode. Requests come as decoded JSON or protobuf objects
 * (int64 fields as numbers or decimal strings); answers are plain objects with numbers.
 */
import type { BootstrapAnswer } from './bootstrap.js';
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import type { Cluster } from './cluster.js';
import type { ClusterSlot } from './cluster-slot.js';
import type { RepairView } from './repair-control.js';
import { recordsFromWire, recordsToWire } from './cluster-node.js';
import type { ClusterStateView, HeartbeatResponse, JoinResponse, SyncRingResponse } from './membership.js';
import { HeartbeatRefused } from './membership.js';

type Body = Record<string, unknown>;

/** An int64/uint64 field given as a number or a decimal string. */
function integer(body: Body, key: string, required: boolean): number {
  const v = body[key];
  if (v === undefined || v === null || v === '') {
    if (required) throw invalidArgument(`${key} is required`);
    return 0;
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw invalidArgument(`${key} must be an integer`);
  return n;
}

/** A uint64 field of the spec: an integer, not negative. */
function unsigned(body: Body, key: string, required: boolean): number {
  const n = integer(body, key, required);
  if (n < 0) throw invalidArgument(`${key} must not be negative`);
  return n;
}

function text(body: Body, key: string, required: boolean): string {
  const v = body[key];
  if (v === undefined || v === null || v === '') {
    if (required) throw invalidArgument(`${key} is required`);
    return '';
  }
  if (typeof v !== 'string') throw invalidArgument(`${key} must be a string`);
  return v;
}

/** A Migration from the wire (numbers or decimal strings), or undefined. */
function migrationOf(value: unknown): { blobs_left: number; bytes_left: number; bytes_per_second: number } | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as Body;
  return { blobs_left: integer(m, 'blobs_left', false), bytes_left: integer(m, 'bytes_left', false), bytes_per_second: integer(m, 'bytes_per_second', false) };
}

function object(value: unknown): Body {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidArgument('the request body must be a JSON object');
  return value as Body;
}

/** A JoinResponse or HeartbeatResponse with member records in their wire form. */
export type WireJoinResponse = Omit<JoinResponse, 'members'> & { members: object[] };
export type WireHeartbeatResponse = Omit<HeartbeatResponse, 'members'> & { members?: object[] };

/** A refused heartbeat: 404 in HTTP with the body below; over gRPC the same message with ok false. */
export class HeartbeatDenied extends BlobstoreError {
  constructor(
    message: string,
    readonly response: WireHeartbeatResponse,
  ) {
    super('not_found', message);
  }
}

export class ClusterApi {
  /** `cluster`: the node's cluster slot (cluster-slot.ts); none on a node without gRPC. */
  constructor(private readonly cluster: ClusterSlot | undefined) {}

  private get node(): Cluster['node'] {
    return this.running().node;
  }

  /** The cluster; 501 on a node without cluster support, 503 while it starts. */
  private running(): Cluster {
    if (!this.cluster) {
      throw new BlobstoreError('unimplemented', 'this node runs without cluster support: it needs its gRPC listener (GrpcAddr) to talk to peers');
    }
    return this.cluster.get();
  }

  /** Whether a node-to-node call carries the cluster secret (then no user token is needed). */
  fromPeer(secret: string): boolean {
    const cluster = this.cluster?.peek();
    return cluster !== undefined && secret !== '' && cluster.secretMatches(secret);
  }

  /** Whether node-to-node calls take the cluster secret here (a node with tokens, or reachable beyond loopback). */
  get guarded(): boolean {
    return this.cluster?.peek()?.guarded ?? false;
  }

  async join(raw: unknown): Promise<WireJoinResponse> {
    const body = object(raw);
    const response = await this.node.join({
      node_id: text(body, 'node_id', true), address: text(body, 'address', true), capacity_bytes: unsigned(body, 'capacity_bytes', true),
      grpc_address: text(body, 'grpc_address', false) || undefined, region: typeof body.region === 'string' ? body.region : undefined,
      incarnation: integer(body, 'incarnation', false),
    });
    return { ...response, members: recordsToWire(response.members) };
  }

  async leave(raw: unknown): Promise<{ acknowledged: boolean }> {
    const body = object(raw);
    const graceful = body.graceful;
    if (graceful !== undefined && graceful !== null && typeof graceful !== 'boolean') throw invalidArgument('graceful must be a boolean');
    await this.node.leave(text(body, 'node_id', true), graceful === true);
    return { acknowledged: true };
  }

  async heartbeat(raw: unknown): Promise<WireHeartbeatResponse> {
    const body = object(raw);
    const request = {
      node_id: text(body, 'node_id', true), used_bytes: unsigned(body, 'used_bytes', true), blob_count: unsigned(body, 'blob_count', true),
      ring_version: integer(body, 'ring_version', true), members: body.members === undefined ? undefined : recordsFromWire(body.members),
      digest: typeof body.digest === 'string' ? body.digest : undefined,
      migration: migrationOf(body.migration),
    };
    try {
      const response = await this.node.heartbeat(request);
      return { ...response, members: response.members && recordsToWire(response.members) };
    } catch (err) {
      if (!(err instanceof HeartbeatRefused)) throw err;
      throw new HeartbeatDenied(err.message, { ...err.response, members: err.response.members && recordsToWire(err.response.members) });
    }
  }

  /** The state, and this node's repair progress (an extension: the spec's fields are unchanged). */
  state(): ClusterStateView & { repair?: RepairView } {
    const cluster = this.running();
    return { ...cluster.node.view(), repair: cluster.repairView() };
  }

  /**
   * Raises (or lowers) this node's repair bandwidth cap for a while: `bytes_per_second` (0: no
   * cap) for `seconds`, then back to the setting (repairBytesPerSecond). Answers the repair view.
   */
  repair(raw: unknown): RepairView {
    const body = object(raw);
    const cluster = this.running();
    cluster.repairControl.boost(integer(body, 'bytes_per_second', true), integer(body, 'seconds', true));
    return cluster.repairView();
  }

  /** A node forming a cluster probes this one (bootstrap.ts). */
  bootstrap(raw: unknown): BootstrapAnswer {
    const body = object(raw);
    this.running();
    return this.node.bootstrapProbe({ node_id: text(body, 'node_id', true), candidate: text(body, 'candidate', false) });
  }

  syncRing(raw: unknown): SyncRingResponse {
    return this.node.syncRing(integer(object(raw), 'ring_version', true));
  }
}
