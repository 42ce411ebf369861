/**
 * The LMDB index: one record per blob (`blobs`), per-segment space accounting (`segments`), and
 * small metadata (`meta`): the log checkpoint and the node's counters. Start-up reads only `meta`
 * and `segments`, never the blob records, so it does not grow with the number of blobs.
 * Writes go through `commit()`: one asynchronous LMDB transaction per group commit of the log.
 *
 * Erasure-coded blobs: `shards`, one record per shard column held here, keyed by the blob id and
 * the column index (src/engine/shard-info.ts), in the same entry format; `ecq`, the blobs whose
 * columns need repair (a store that lost up to m shard stores, a read or scrub that found one
 * missing or corrupt), kept until the repair is done.
 *
 * For the cluster: `replq`, the replication queue (an entry per blob this node took from a client
 * whose copies are not all on the owners yet, written in the same transaction as the blob's
 * record), and `deleted`, the ids a user deleted here (repair never copies those back). The
 * replicator's changes to the queue (owners that confirmed, entries done) ride along in the next
 * index transaction instead of one of their own: a lost change only repeats a copy (the owner
 * answers that it has it), and a transaction of their own cost each replication pass an LMDB
 * commit and flush, as many as the stores' own on the REPLICA3 bench.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { type IndexEntry, decodeEntry, encodeEntry } from './entry.js';

/** Every record before this log position has been applied to the index. */
export interface Checkpoint {
  segment: number;
  offset: number;
  /** The log sequence number the next record carries. */
  nextLsn: number;
}

export interface SegmentSpace {
  /** Bytes of records appended to the segment. */
  totalBytes: number;
  /** Bytes of records the index still points at. */
  liveBytes: number;
}

export interface Counters {
  blobCount: number;
  /** Sum of the sizes of the blobs stored. */
  storedBytes: number;
  /** Shards held (a column holds one shard per stripe) and the bytes of their columns. */
  shardCount: number;
  shardBytes: number;
}

export interface ListPage {
  ids: Buffer[];
  hasMore: boolean;
}

/** A user's delete kept for repair: when, and the policy the blob had (its owners follow from it). */
export interface DeletedEntry {
  atMs: number;
  policy: number;
}

/** A replication queue entry: when the blob was queued, and the owners that have it already. */
export interface QueueEntry {
  queuedAtMs: number;
  done: string[];
}

/** The queue's operations outside the index transaction (the replicator's view of it). */
export interface ReplicationQueue {
  readonly depth: number;
  page(limit: number, after?: Buffer): { id: Buffer; entry: QueueEntry }[];
  get(id: Buffer): QueueEntry | undefined;
  update(id: Buffer, entry: QueueEntry): Promise<unknown>;
  remove(id: Buffer): Promise<void>;
}

/** A blob whose shard columns need repair: its policy, and when it was queued. */
export interface EcRepairEntry {
  policy: number;
  queuedAtMs: number;
  /** Why (a failed shard store, a missing or corrupt column found by a read or the scrubber). */
  reason: string;
  /** Bytes the repair is estimated to rebuild (0: not known until it looks). */
  bytes?: number;
}

/** The EC repair queue (durable once put() resolves). */
export interface EcRepairQueue {
  readonly depth: number;
  page(limit: number, after?: Buffer): { id: Buffer; entry: EcRepairEntry }[];
  get(id: Buffer): EcRepairEntry | undefined;
  put(id: Buffer, entry: EcRepairEntry): Promise<void>;
  remove(id: Buffer): Promise<void>;
}

const ZERO = Buffer.from([0]);
const FF = Buffer.from([0xff]);

/**
 * How long the replicator's queue changes wait for an index transaction to ride along in (a busy
 * node commits every few ms) before they get one of their own.
 */
const QUEUE_WRITE_DELAY_MS = 50;

export class BlobIndex {
  private readonly root: RootDatabase;
  private readonly blobs: Database<Buffer, Buffer>;
  private readonly meta: Database<unknown, string>;
  private readonly segmentDb: Database<SegmentSpace, number>;
  private readonly queueDb: Database<QueueEntry, Buffer>;
  private readonly deletedDb: Database<DeletedEntry, Buffer>;
  private readonly shardDb: Database<Buffer, Buffer>;
  private readonly ecQueueDb: Database<EcRepairEntry, Buffer>;
  /** Entries in the replication queue and in `deleted` (counted at open, kept up to date). */
  queueDepth: number;
  private deletedCount: number;
  readonly segments = new Map<number, SegmentSpace>();
  private readonly dirtySegments = new Set<number>();
  counters: Counters;
  checkpoint: Checkpoint;

  constructor(path: string) {
    // overlappingSync: a commit resolves before its flush; callers that need durability await flushed().
    this.root = open({ path, compression: false, maxDbs: 8, overlappingSync: true, mapSize: 1024 ** 3 });
    this.blobs = this.root.openDB<Buffer, Buffer>({ name: 'blobs', keyEncoding: 'binary', encoding: 'binary' });
    this.meta = this.root.openDB<unknown, string>({ name: 'meta' });
    this.segmentDb = this.root.openDB<SegmentSpace, number>({ name: 'segments', keyEncoding: 'uint32' });
    this.queueDb = this.root.openDB<QueueEntry, Buffer>({ name: 'replq', keyEncoding: 'binary' });
    this.deletedDb = this.root.openDB<DeletedEntry, Buffer>({ name: 'deleted', keyEncoding: 'binary' });
    this.shardDb = this.root.openDB<Buffer, Buffer>({ name: 'shards', keyEncoding: 'binary', encoding: 'binary' });
    this.ecQueueDb = this.root.openDB<EcRepairEntry, Buffer>({ name: 'ecq', keyEncoding: 'binary' });
    this.queueDepth = this.queueDb.getCount();
    this.deletedCount = this.deletedDb.getCount();
    // Data dirs from before erasure coding have no shard counters.
    this.counters = { blobCount: 0, storedBytes: 0, shardCount: 0, shardBytes: 0, ...(this.meta.get('counters') as Partial<Counters> | undefined) };
    this.checkpoint = (this.meta.get('checkpoint') as Checkpoint | undefined) ?? { segment: 1, offset: 0, nextLsn: 1 };
    for (const { key, value } of this.segmentDb.getRange()) this.segments.set(key, { ...value });
  }

  get(id: Buffer): IndexEntry | undefined {
    const raw = this.blobs.getBinaryFast(id);
    return raw === undefined ? undefined : decodeEntry(raw);
  }

  /**
   * The raw index record of `id` (entry.ts layout), without decoding or copying it: a buffer
   * lmdb-js reuses, valid until the next read of the index. The GET fast path reads it in place.
   */
  peek(id: Buffer): Buffer | undefined {
    return this.blobs.getBinaryFast(id);
  }

  has(id: Buffer): boolean {
    return this.blobs.doesExist(id);
  }

  /** Inside commit(): writes happen in the open transaction. */
  put(id: Buffer, entry: IndexEntry): void {
    this.blobs.putSync(id, encodeEntry(entry));
  }

  remove(id: Buffer): void {
    this.blobs.removeSync(id);
  }

  /** The record of a shard column (key: shardKey(id, index)). */
  getShard(key: Buffer): IndexEntry | undefined {
    const raw = this.shardDb.getBinaryFast(key);
    return raw === undefined ? undefined : decodeEntry(raw);
  }

  hasShard(key: Buffer): boolean {
    return this.shardDb.doesExist(key);
  }

  /** Inside commit(). */
  putShard(key: Buffer, entry: IndexEntry): void {
    this.shardDb.putSync(key, encodeEntry(entry));
  }

  /** Inside commit(). */
  removeShard(key: Buffer): void {
    this.shardDb.removeSync(key);
  }

  /** The columns of blob `id` held here, by column index. */
  shardsOf(id: Buffer): { index: number; entry: IndexEntry }[] {
    const out: { index: number; entry: IndexEntry }[] = [];
    for (const { key, value } of this.shardDb.getRange({ start: Buffer.concat([id, ZERO]), end: Buffer.concat([id, FF, FF]) })) {
      out.push({ index: (key as Buffer)[16]!, entry: decodeEntry(value as Uint8Array) });
    }
    return out;
  }

  /**
   * Every shard column held here from blob id `start` (inclusive) in byte order, with its blob
   * id (valid only during the call), column index, policy and column size, until `visit` returns false.
   */
  scanShards(start: Buffer | undefined, visit: (id: Buffer, index: number, policy: number, size: number) => boolean): void {
    for (const { key, value } of this.shardDb.getRange({ start })) {
      const raw = value as Uint8Array;
      const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      const k = key as Buffer;
      if (!visit(k.subarray(0, 16), k[16]!, b[1]!, Number(b.readBigUInt64LE(16)))) return;
    }
  }

  /** The EC repair queue: blobs whose columns need repair, with what is known of them. */
  readonly ecRepairs: EcRepairQueue = ((index: BlobIndex) => ({
    get depth(): number {
      return index.ecQueueDb.getCount();
    },
    page: (limit: number, after?: Buffer) => {
      const out: { id: Buffer; entry: EcRepairEntry }[] = [];
      for (const { key, value } of index.ecQueueDb.getRange({ start: after, limit: limit + 1 })) {
        if (after && (key as Buffer).equals(after)) continue;
        if (out.length === limit) break;
        out.push({ id: Buffer.from(key as Buffer), entry: value });
      }
      return out;
    },
    get: (id: Buffer) => index.ecQueueDb.get(id),
    put: async (id: Buffer, entry: EcRepairEntry) => {
      await index.ecQueueDb.put(id, entry);
      await index.root.flushed;
    },
    remove: async (id: Buffer) => void (await index.ecQueueDb.remove(id)),
  }))(this);

  readonly replication: ReplicationQueue = ((index: BlobIndex) => ({
    get depth(): number {
      return index.queueDepth;
    },
    page: (limit: number, after?: Buffer) => index.queued(limit, after),
    get: (id: Buffer) => index.queueEntry(id),
    update: (id: Buffer, entry: QueueEntry) => index.updateQueued(id, entry),
    remove: (id: Buffer) => index.dequeue(id),
  }))(this);

  /**
   * Queue changes not yet written, by id (hex): an entry to put, or null to remove it. Reads of the
   * queue see them at once; the next commit() writes them, or a transaction of their own once
   * QUEUE_WRITE_DELAY_MS passed without one.
   */
  private readonly queueChanges = new Map<string, { id: Buffer; entry: QueueEntry | null }>();
  private queueTimer: NodeJS.Timeout | undefined;

  /** A small value of this node's own (the cluster keeps its member state here), or undefined. */
  getMeta<T>(key: string): T | undefined {
    return this.meta.get(`x:${key}`) as T | undefined;
  }

  /** Writes it in a transaction of its own; resolves once it is flushed to disk. */
  async putMeta(key: string, value: unknown): Promise<void> {
    await this.meta.put(`x:${key}`, value);
    await this.root.flushed;
  }

  /** Inside commit(): queues the blob's copies for the owners (after the pending changes, so it wins). */
  enqueue(id: Buffer, queuedAtMs: number): void {
    if (!this.queueDb.doesExist(id)) this.queueDepth++;
    this.queueDb.putSync(id, { queuedAtMs, done: [] });
  }

  /** The oldest-first page of the replication queue is not kept in order: entries by id, from `after`. */
  queued(limit: number, after?: Buffer): { id: Buffer; entry: QueueEntry }[] {
    const out: { id: Buffer; entry: QueueEntry }[] = [];
    // Removals not yet written are skipped, so a page may come short while there are more: read on.
    for (const { key, value } of this.queueDb.getRange({ start: after })) {
      if (after && key.equals(after)) continue;
      if (out.length === limit) break;
      const change = this.queueChanges.get(key.toString('hex'));
      if (change?.entry === null) continue;
      out.push({ id: Buffer.from(key), entry: change?.entry ?? value });
    }
    return out;
  }

  queueEntry(id: Buffer): QueueEntry | undefined {
    const change = this.queueChanges.get(id.toString('hex'));
    if (change) return change.entry ?? undefined;
    return this.queueDb.get(id);
  }

  /** Records owners that confirmed a copy (written with the next index transaction). */
  updateQueued(id: Buffer, entry: QueueEntry): Promise<void> {
    const key = id.toString('hex');
    if (this.queueChanges.get(key)?.entry !== null) this.queueChanges.set(key, { id: Buffer.from(id), entry });
    this.scheduleQueueWrite();
    return Promise.resolve();
  }

  /** Every owner has the blob: the entry goes (written with the next index transaction). */
  dequeue(id: Buffer): Promise<void> {
    const key = id.toString('hex');
    if (this.queueChanges.get(key)?.entry === null || !this.queueDb.doesExist(id)) return Promise.resolve();
    this.queueChanges.set(key, { id: Buffer.from(id), entry: null });
    this.queueDepth--;
    this.scheduleQueueWrite();
    return Promise.resolve();
  }

  private scheduleQueueWrite(): void {
    if (this.queueTimer) return;
    this.queueTimer = setTimeout(() => {
      this.queueTimer = undefined;
      if (this.queueChanges.size > 0) void this.root.transaction(() => this.writeQueueChanges());
    }, QUEUE_WRITE_DELAY_MS);
    this.queueTimer.unref();
  }

  /** Inside a write transaction: the pending queue changes. */
  private writeQueueChanges(): void {
    for (const { id, entry } of this.queueChanges.values()) {
      if (entry === null) this.queueDb.removeSync(id);
      else if (this.queueDb.doesExist(id)) this.queueDb.putSync(id, entry);
    }
    this.queueChanges.clear();
  }

  /** Inside commit(): a user deleted the blob here (repair must not copy it back). */
  markDeleted(id: Buffer, atMs: number, policy: number): void {
    if (!this.deletedDb.doesExist(id)) this.deletedCount++;
    this.deletedDb.putSync(id, { atMs, policy });
  }

  /** Inside commit(): the blob is stored here again (nothing to look up while no delete is kept). */
  clearDeleted(id: Buffer): void {
    if (this.deletedCount > 0 && this.deletedDb.removeSync(id)) this.deletedCount--;
  }

  /** When a user deleted the blob here, if one did. */
  deletedAt(id: Buffer): number | undefined {
    return this.deletedCount === 0 ? undefined : this.deletedDb.get(id)?.atMs;
  }

  /** Forgets deletes older than `beforeMs` (repair may bring those blobs back); how many went. */
  async pruneDeleted(beforeMs: number): Promise<number> {
    const old: Buffer[] = [];
    for (const { key, value } of this.deletedDb.getRange()) if (value.atMs < beforeMs) old.push(Buffer.from(key));
    const removed = await Promise.all(old.map((id) => this.deletedDb.remove(id)));
    this.deletedCount -= removed.filter(Boolean).length;
    return old.length;
  }

  /**
   * Calls `visit` with every stored id from `start` (inclusive) in byte order, with its policy and
   * size, until it returns false. The id is valid only during the call (copy it to keep it).
   */
  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean): void {
    for (const { key, value } of this.blobs.getRange({ start })) {
      const raw = value as Uint8Array;
      const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      if (!visit(key, b[1]!, Number(b.readBigUInt64LE(16)))) return;
    }
  }

  /** Ids a user deleted here, from `start` in byte order, with their policy, until `visit` returns false. */
  scanDeleted(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void {
    if (this.deletedCount === 0) return;
    for (const { key, value } of this.deletedDb.getRange({ start })) if (!visit(key, value.policy)) return;
  }

  space(segment: number): SegmentSpace {
    let s = this.segments.get(segment);
    if (!s) {
      s = { totalBytes: 0, liveBytes: 0 };
      this.segments.set(segment, s);
    }
    this.dirtySegments.add(segment);
    return s;
  }

  dropSegment(segment: number): Promise<unknown> {
    this.segments.delete(segment);
    this.dirtySegments.delete(segment);
    return this.segmentDb.remove(segment);
  }

  /**
   * Runs `apply` in one write transaction with the new checkpoint, counters and segment space,
   * resolving once committed (visible to reads); flushed() tells when it is on disk.
   */
  async commit(checkpoint: Checkpoint, apply: () => void): Promise<void> {
    await this.root.transaction(() => {
      this.writeQueueChanges();
      apply();
      this.checkpoint = checkpoint;
      this.meta.putSync('checkpoint', checkpoint);
      this.meta.putSync('counters', this.counters);
      for (const segment of this.dirtySegments) {
        const s = this.segments.get(segment);
        if (s) this.segmentDb.putSync(segment, s);
      }
      this.dirtySegments.clear();
    });
  }

  /** Resolves once every transaction committed so far is flushed to disk. */
  flushed(): Promise<unknown> {
    return this.root.flushed;
  }

  /**
   * Ids in byte order after `after` (exclusive) whose hex form starts with `prefix`: whole blobs
   * and blobs a shard column of which is held here, each once.
   */
  list(prefix: string, after: Buffer | undefined, limit: number): ListPage {
    const start = after ?? Buffer.from(prefix.padEnd(32, '0').slice(0, 32), 'hex');
    const blobs = this.blobs.getKeys({ start })[Symbol.iterator]();
    // Column keys (id + index) sort right after their id: from the id's last column on.
    const shards = this.shardDb.getKeys({ start: after ? Buffer.concat([after, FF]) : start })[Symbol.iterator]();
    const next = (it: Iterator<Buffer>): Buffer | undefined => {
      const r = it.next();
      return r.done ? undefined : Buffer.from(r.value.subarray(0, 16));
    };
    let b = next(blobs);
    let s = next(shards);
    const ids: Buffer[] = [];
    let hasMore = false;
    for (;;) {
      if (after && b?.equals(after)) b = next(blobs);
      const cmp = b && s ? Buffer.compare(b, s) : b ? -1 : s ? 1 : 0;
      if (!b && !s) break;
      const id = cmp <= 0 ? b! : s!;
      if (!id.toString('hex').startsWith(prefix)) break;
      if (ids.length === limit) {
        hasMore = true;
        break;
      }
      ids.push(id);
      // Skip every other key of the same id (the blob and its columns, or several columns).
      while (b && b.equals(id)) b = next(blobs);
      while (s && s.equals(id)) s = next(shards);
    }
    return { ids, hasMore };
  }

  async close(): Promise<void> {
    clearTimeout(this.queueTimer);
    if (this.queueChanges.size > 0) await this.root.transaction(() => this.writeQueueChanges());
    await this.root.flushed;
    await this.root.close();
  }
}
