/**
 * How this node reaches a peer: every node-to-node call goes through here, each operation on one
 * protocol, chosen here once (docs/adr/0021-one-peer-transport.md):
 *
 *   plane       protocol, address                              operations
 *   data        HTTP/1.1 on the peer's API address             readBlob, readColumn, replica, replicaBatch, column,
 *               (NodeInfo.address: what clients use too)       shardBatch, stat (bulk bytes: kernel reads into reused
 *                                                                buffers, PUTs and POSTs written from the sender's
 *                                                                buffers on kept connections)
 *   control     gRPC on the peer's gRPC address                heartbeat, rejoin, and call(): HaveBlobs, RangeDigest,
 *               (learnt from the member state)                  ListLeaf, StoreManifest, DeleteShard (one message each way)
 *   bootstrap   HTTP on the API address (SeedNodes)            postJson(): the bootstrap probe, a join through a seed,
 *                                                                a restarted node's announcement (before any gRPC address is known)
 *
 * A call that fails on its protocol fails: its caller retries it the same way (a queue's back-off,
 * the next holder, the next heartbeat), never over the other protocol. Every call carries the
 * cluster secret; with a certificate every connection is TLS (peer-link.ts).
 */
import type { BlobMeta } from '../../blob/meta.js';
import type { ByteRange } from '../../service/local-store.js';
import type { ColumnHeader } from '../column-writer.js';
import * as grpc from '@grpc/grpc-js';
import { PeerCallError, PeerClients } from './grpc-peers.js';
import { HttpColumnSender, shardPath } from './http-column.js';
import { CHUNK_VALUES_HEADER } from '../column-check.js';
import { type BytesSink, type BytesTarget, HttpFetcher } from './http-fetcher.js';
import { bodyFraming, HttpPut, PeerPutError, replicaBatchHead, replicaHead, shardBatchHead, statHead } from './http-put.js';
import { KeptConnections } from './kept-connections.js';
import { type StatBlobAnswer, statAnswerOfJson } from '../wire-meta.js';
import { HttpPoster } from './http-post.js';
import type { ReplicaBatchBody } from '../replica-batch.js';
import type { ShardBatchBody } from '../shard-batch.js';
import { type PeerLink, SECRET_METADATA } from './peer-link.js';

/** A peer as the member state records it: its id and its two addresses. */
export interface PeerRef {
  readonly nodeId: string;
  /** host:port of its API listener: the data plane. */
  readonly address: string;
  /** host:port of its gRPC listener: the control plane ('' while unknown). */
  readonly grpcAddress: string;
}

/** InternalService calls of the control plane: small requests and answers, one message each. */
export type ControlCall = 'HaveBlobs' | 'RangeDigest' | 'ListLeaf' | 'StoreManifest' | 'DeleteShard';

/** What a peer did with one column of a batch: stored (durably; `created` when it was not there), or refused with `error`. */
export interface ColumnOutcome {
  stored: boolean;
  created: boolean;
  error: string;
}

/** ClusterService calls between members (the spec's cluster operations). */
export type MembershipCall = 'Heartbeat' | 'Join';

export interface PeerTransportOptions {
  link: PeerLink;
  maxMessageBytes: number;
  /** HTTP/2 window this node announces on its gRPC channels. */
  windowBytes: number;
  /** Deadline of control calls, unless the caller names one. */
  callTimeoutMs: number;
  /** Data-plane read connections kept per peer (a 1 MiB buffer each). */
  readConnectionsPerPeer: number;
  /** A data-plane read that receives nothing for this long fails. */
  readIdleTimeoutMs: number;
}

export class PeerTransport {
  readonly link: PeerLink;
  private readonly grpc: PeerClients;
  private readonly reads: HttpFetcher;
  private readonly posts: HttpPoster;
  /** Idle data-plane connections, shared by the POSTs and the length-framed PUTs. */
  private readonly kept: KeptConnections;
  private readonly callTimeoutMs: number;

  constructor(options: PeerTransportOptions) {
    this.link = options.link;
    this.callTimeoutMs = options.callTimeoutMs;
    this.grpc = new PeerClients({ link: options.link, maxMessageBytes: options.maxMessageBytes, windowBytes: options.windowBytes, callTimeoutMs: options.callTimeoutMs });
    this.kept = new KeptConnections(options.link);
    this.posts = new HttpPoster(this.kept);
    // A new certificate: kept connections made with the old one go.
    options.link.onChange(() => this.kept.close());
    this.reads = new HttpFetcher({ link: options.link, connectionsPerPeer: options.readConnectionsPerPeer, idleTimeoutMs: options.readIdleTimeoutMs });
  }

  // The control plane (gRPC).

  /**
   * A control call to `peer` with the secret and a deadline; rejects with PeerCallError.
   */
  call<Res>(peer: PeerRef, method: ControlCall, request: unknown, timeoutMs?: number): Promise<Res> {
    return this.grpc.unary<Res>(this.grpc.get(peer.nodeId, peer.grpcAddress).internal, peer.nodeId, method, request, timeoutMs);
  }

  /** A membership call to a member (heartbeats, a rejoin a peer asked for). */
  membership<Res>(peer: PeerRef, method: MembershipCall, request: unknown, timeoutMs?: number): Promise<Res> {
    return this.grpc.unary<Res>(this.grpc.get(peer.nodeId, peer.grpcAddress).cluster, peer.nodeId, method, request, timeoutMs);
  }

  // The bootstrap calls (HTTP on the API address: all a node knows of its seeds).

  /** POST of a JSON body to a cluster path of the API listener at `address` (host:port or a seed's URL). */
  async postJson<T>(address: string, path: string, body: unknown, statuses: readonly number[], timeoutMs: number): Promise<T> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.link.secret !== '') headers[SECRET_METADATA] = this.link.secret;
    const res = await this.link.fetch(`${this.link.baseUrl(address)}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    if (!statuses.includes(res.status)) throw new Error(`${path} on ${address}: HTTP ${res.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  }

  // The data plane (HTTP on the API address).

  /**
   * Streams `range` (default: all) of a blob the peer holds to `sink` in chunks of at most 1 MiB
   * (the buffer is the connection's: reused once the sink returns). Checks the length, and that a range's answer is that range.
   */
  readBlob(peer: PeerRef, id: Buffer, range: ByteRange | undefined, sink: BytesSink, traceparent?: string): Promise<void> {
    return this.reads.fetchPath(peer.address, `/internal/v1/blobs/${id.toString('hex')}`, range, sink, traceparent);
  }

  /** As readBlob, bytes [range.start, range.end) of column `index` of blob `id`, read in place into `to`. */
  readColumn(peer: PeerRef, id: Buffer, index: number, range: ByteRange, to: BytesTarget, chunkValues = false): Promise<void> {
    return this.reads.fetchPath(peer.address, shardPath(id, index), range, to, undefined, chunkValues ? `${CHUNK_VALUES_HEADER}: 1\r\n` : '');
  }

  /**
   * What the peer holds of a blob (StatBlob's answer). On the data plane: a gRPC unary call cost
   * each end about a millisecond of CPU, and an EC read asks every candidate before its first
   * byte. Rejects with PeerCallError, DEADLINE_EXCEEDED when the peer did not answer in time.
   */
  async stat(peer: PeerRef, id: Buffer, timeoutMs = this.callTimeoutMs): Promise<StatBlobAnswer> {
    try {
      return statAnswerOfJson(await this.posts.post(peer, statHead(peer, id, this.link.secret), [], timeoutMs));
    } catch (err) {
      const late = err instanceof PeerPutError && err.timedOut;
      throw new PeerCallError(peer.nodeId, 'StatBlob', late ? grpc.status.DEADLINE_EXCEEDED : grpc.status.UNAVAILABLE, (err as Error).message);
    }
  }

  /** A large replica's PUT to the peer: its bytes are written to it as they are read. */
  replica(peer: PeerRef, meta: BlobMeta, repair: boolean, timeoutMs: number): HttpPut {
    const framing = bodyFraming(meta.size);
    return new HttpPut(peer, replicaHead(peer, meta, repair, this.link.secret, framing.header), { timeoutMs, kept: this.kept, length: framing.length });
  }

  /**
   * A batch of small replicas to the peer, as one POST (replica-batch.ts); resolves once it holds
   * them all durably, rejects with PeerPutError.
   */
  async replicaBatch(peer: PeerRef, body: ReplicaBatchBody, count: number, repair: boolean, timeoutMs: number): Promise<void> {
    const text = await this.posts.post(peer, replicaBatchHead(peer, body.bytes, repair, this.link.secret), body.parts, timeoutMs);
    const answer = JSON.parse(text) as { stored?: unknown };
    if (answer.stored !== count) throw new PeerPutError(`${peer.nodeId}: stored ${String(answer.stored)} of a batch of ${count}`);
  }

  /**
   * A batch of small whole columns to the peer, as one POST (shard-batch.ts); resolves with each
   * column's outcome once the peer has stored or refused every one (those stored are durable),
   * rejects with PeerPutError.
   */
  async shardBatch(peer: PeerRef, body: ShardBatchBody, count: number, timeoutMs: number): Promise<ColumnOutcome[]> {
    const text = await this.posts.post(peer, shardBatchHead(peer, body.bytes, this.link.secret), body.parts, timeoutMs);
    const results = (JSON.parse(text) as { results?: unknown }).results;
    if (!Array.isArray(results) || results.length !== count) throw new PeerPutError(`${peer.nodeId}: ${Array.isArray(results) ? results.length : 'no'} outcomes for a batch of ${count} columns`);
    return results.map((r: Partial<ColumnOutcome>) => ({ stored: r.stored === true, created: r.created === true, error: String(r.error ?? '') }));
  }

  /** A shard column's PUT to the peer (a store's, a repair's or a handoff's); see HttpColumnSender. */
  column(peer: PeerRef, header: ColumnHeader, columnBytes: number, options: { repair: boolean; timeoutMs: number; checksums: number; streamed?: { answerTimeoutMs: number } }): HttpColumnSender {
    return new HttpColumnSender(peer, header, columnBytes, { ...options, link: this.link, kept: this.kept });
  }

  // Connections.

  /** Control-plane channels connected now (grpc_connections_active). */
  connected(): number {
    return this.grpc.connected();
  }

  /** Drops the channels of peers not in `keep` (removed members). */
  retain(keep: ReadonlySet<string>): void {
    this.grpc.retain(keep);
  }

  close(): void {
    this.grpc.close();
    this.reads.close();
    this.kept.close();
  }
}
