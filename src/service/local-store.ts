/**
 * The local store: what this node's storage engine offers the blob service (the coordinator of a
 * store or read) and the cluster's InternalService handlers, which call it directly so that a
 * replica is stored here and never replicated again. The engine (src/engine) implements it; no
 * transport reaches past this interface.
 */
import type { BufferPool } from '../pool/buffer-pool.js';
import type { EngineStats } from '../engine/engine.js';
import type { BlobMeta, ListResult, PutResult, StoreOrigin } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import type { EcManifests, EcRepairQueue, ReplicationQueue } from '../index/blob-index.js';
import type { ShardMeta, ShardWrite } from '../blob/shard.js';
import type { CachedRecord } from '../engine/verified-cache.js';
import type { HeldIdWatcher, SmallStoreDone } from '../engine/engine.js';

import type { ByteRange, ChunkSink, ChunkValues } from '../engine/blob-reader.js';
import type { ChunkCv, FileSink } from '../engine/blob-file.js';
import type { FileKind } from '../engine/large-blobs.js';

export type { ByteRange, ChunkSink, ChunkValues } from '../engine/blob-reader.js';
export type { ChunkCv, FileSink } from '../engine/blob-file.js';
export type { FileKind } from '../engine/large-blobs.js';
export type { CachedRecord } from '../engine/verified-cache.js';
export type { HeldIdWatcher, SmallStoreDone } from '../engine/engine.js';

export interface LocalStore {
  /** Buffers of 1 MiB for chunks in flight (uploads, downloads, replication). */
  readonly pool: BufferPool;
  /** A 1 MiB chunk's chaining value in its blob's BLAKE3 tree, in line or on the worker pool (setting chunkDigests). */
  readonly chunkCv: ChunkCv;

  putInline(data: Buffer, policy: Policy, labels: Buffer, origin?: StoreOrigin): Promise<PutResult>;
  /**
   * A client's small store without a promise (Engine.putSmall); `replicate`: its record carries
   * the replicate flag (the cluster's replication queue takes it with its index record).
   * `createdAtNs`: a replica's original time (now when absent).
   */
  putSmall(data: Uint8Array | ArrayBuffer, policy: Policy, labels: Buffer, done: SmallStoreDone, replicate?: boolean, createdAtNs?: bigint): void;
  /** 507 before a body the disk cannot hold is read. */
  checkSpace(bytes: number): void;
  /** A file of its own for a large blob, or (`column`) an erasure-coded column (settings blobFileWrites, columnFileWrites). */
  beginFile(kind?: FileKind): Promise<FileSink>;
  commitFile(file: FileSink, checksum: Buffer, policy: Policy, labels: Buffer, origin?: StoreOrigin): Promise<PutResult>;

  stat(id: Buffer): BlobMeta | undefined;
  /**
   * The blob (or `range` of it) in verified chunks of at most 1 MiB; corrupt bytes are never
   * handed on. With `values`, the chunks' chaining values first, and chunks the reader checks
   * against them (ChunkValues).
   */
  read(meta: BlobMeta, sink: ChunkSink, range?: ByteRange, values?: ChunkValues): Promise<void>;
  /** A segment blob's bytes, verified. */
  readInline(meta: BlobMeta): Promise<Buffer>;
  /** readInline on the calling thread for small records in memory (a view of a scratch buffer; undefined when too large or not in memory). */
  readInlineSync(meta: BlobMeta): Buffer | undefined;
  /** A small segment blob's verified record: from the read cache without allocating (id may be a scratch buffer), or read and cached now. */
  cachedRecord(id: Buffer): CachedRecord | undefined;

  /** A local delete; `handoff` drops a copy the owners hold (not remembered as a user's delete). */
  delete(id: Buffer, handoff?: boolean): Promise<void>;
  list(prefix: string, cursor: string | undefined, limit: number): ListResult;
  /** When a user deleted the blob here, if one did (repair does not copy it back). */
  deletedAt(id: Buffer): number | undefined;
  /** Every stored id from `start` in byte order with its policy and size, until `visit` returns false. */
  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean): void;
  /** Every id a user deleted here, from `start`, with the policy it had, until `visit` returns false. */
  scanDeleted(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void;

  /**
   * Tells `watcher` (one at a time; undefined stops) of every id entering or leaving what this
   * node holds, from now on, as reads see it: a whole blob, a blob with a column here (its first
   * column in, its last out), a user's delete remembered here. `key` places the id on the ring
   * (a column's placement key). The id is valid only during the call.
   */
  watchIds(watcher: HeldIdWatcher | undefined): void;

  /** The replication queue (entries are written by stores with origin.replicate). */
  readonly replication: ReplicationQueue;
  /**
   * Index commits (durableAck=log) wait for `hold` first, at most indexCommitHoldMs: the
   * replicator's way to remove the queue entries of copies it sent before they are written.
   */
  holdIndexCommits(hold: () => Promise<void> | undefined): void;

  // Shard columns of erasure-coded blobs (src/engine/shards.ts).
  /** Every column of blob `id` held here. */
  shardsOf(id: Buffer): ShardMeta[];
  /** A small column held in memory, checked against its checksum; created false when held already. */
  putShardInline(w: ShardWrite, data: Buffer): Promise<{ created: boolean }>;
  /** A column written with beginFile() (finish() checked its checksum). */
  commitShardFile(file: FileSink, w: ShardWrite): Promise<{ created: boolean }>;
  /** Drops column `index` (every column of the blob when undefined); `handoff`: not a user's delete. */
  deleteShards(id: Buffer, index: number | undefined, handoff: boolean): Promise<void>;
  /** Every column held here from blob id `start`, until `visit` returns false. */
  scanShards(start: Buffer | undefined, visit: (id: Buffer, index: number, policy: number, size: number) => boolean): void;
  /** Blobs whose columns need repair. */
  readonly ecRepairs: EcRepairQueue;
  /** Manifests of EC blobs stored as they streamed in, kept here as one of their id's owners. */
  readonly ecManifests: EcManifests;

  stats(): Promise<EngineStats>;
  /** Why stores cannot be taken now, if they cannot. */
  readonly failure: Error | undefined;
}
