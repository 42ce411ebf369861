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
 *
 * Reads see the overlay (overlay.ts): records acknowledged from the log whose transaction has not
 * committed yet. `direct` writes inside commit() and reads LMDB alone; `staged` writes the overlay.
 */
import type { Database, Key, RootDatabase } from 'lmdb';
import { openIndexEnv } from './index-env.js';
import { type IndexEntry, copyEntry, decodeEntry, encodeEntry } from './entry.js';
import { GatheredWrites } from './gathered-writes.js';
import { BlobJournal } from './blob-journal.js';
import { IdFilter } from './id-filter.js';
import { type Counters, type DeletedEntry, IndexOverlay, type IndexWriter, mergeRange, type QueueEntry, type SegmentSpace, type Staged } from './overlay.js';

export type { Counters, DeletedEntry, IndexWriter, QueueEntry, SegmentSpace } from './overlay.js';

/** Every record before this log position has been applied to the index. */
export interface Checkpoint {
  segment: number;
  offset: number;
  /** The log sequence number the next record carries. */
  nextLsn: number;
}

export interface ListPage {
  ids: Buffer[];
  hasMore: boolean;
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

/** Blob record changes the journal holds before they are merged into `blobs` (setting indexMergeRecords). */
export const DEFAULT_MERGE_RECORDS = 262_144;

export interface BlobIndexOptions {
  mergeRecords?: number;
  /** A failed merge (the journal keeps its records; the next commit tries again). */
  onMergeError?: (err: Error) => void;
}

/** Ids read from LMDB per turn of the event loop while the id filter is built, at most... */
const FILTER_SLICE_IDS = 2048;
/** ...and for at most this long (a slice of cold leaf pages read from disk took 25 ms). */
const FILTER_SLICE_MS = 2;

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
  /** Entries in the replication queue as reads see it (staged ones included; counted at open, kept up to date). */
  queueDepth: number;
  private deletedCount: number;
  /** Space accounting per segment, as committed (the overlay keeps none). */
  readonly segments = new Map<number, SegmentSpace>();
  private readonly dirtySegments = new Set<number>();
  /** Counters as committed in LMDB (written with each transaction). */
  private readonly committedCounters: Counters;
  /** Counters as reads see them: committed plus what staged records changed. */
  readonly counters: Counters;
  /**
   * The log position up to which every record is applied, as reads see the index (staged records
   * included). The checkpoint in LMDB lags behind it by the batches whose transaction is pending.
   */
  checkpoint: Checkpoint;
  /** The last checkpoint committed (with the records it covers, in one transaction). */
  committedCheckpoint: Checkpoint;
  readonly overlay = new IndexOverlay();
  /** The writes of an addsOnly commit (commit, `gathering`). */
  private readonly gathered: GatheredWrites;
  /** Blob records committed but not merged into `blobs` yet (blob-journal.ts). */
  readonly journal: BlobJournal;
  /** Which ids are certainly not held here (id-filter.ts): the one answering, and the one being built. */
  private filter: IdFilter | undefined;
  private building: IdFilter | undefined;
  private closed = false;
  private readonly journalDb: Database<Buffer, number>;

  constructor(path: string, options: BlobIndexOptions = {}) {
    const env = openIndexEnv(path);
    this.root = env.root;
    this.blobs = env.blobs;
    this.journalDb = env.journal;
    this.meta = this.root.openDB<unknown, string>({ name: 'meta' });
    this.segmentDb = this.root.openDB<SegmentSpace, number>({ name: 'segments', keyEncoding: 'uint32' });
    this.queueDb = this.root.openDB<QueueEntry, Buffer>({ name: 'replq', keyEncoding: 'binary' });
    this.deletedDb = this.root.openDB<DeletedEntry, Buffer>({ name: 'deleted', keyEncoding: 'binary' });
    this.shardDb = this.root.openDB<Buffer, Buffer>({ name: 'shards', keyEncoding: 'binary', encoding: 'binary' });
    this.ecQueueDb = this.root.openDB<EcRepairEntry, Buffer>({ name: 'ecq', keyEncoding: 'binary' });
    this.queueDepth = this.queueDb.getCount();
    this.deletedCount = this.deletedDb.getCount();
    // Data dirs from before erasure coding have no shard counters.
    this.committedCounters = { blobCount: 0, storedBytes: 0, shardCount: 0, shardBytes: 0, ...(this.meta.get('counters') as Partial<Counters> | undefined) };
    this.counters = { ...this.committedCounters };
    this.committedCheckpoint = (this.meta.get('checkpoint') as Checkpoint | undefined) ?? { segment: 1, offset: 0, nextLsn: 1 };
    this.checkpoint = this.committedCheckpoint;
    for (const { key, value } of this.segmentDb.getRange()) this.segments.set(key, { ...value });
    this.gathered = new GatheredWrites(this.root);
    this.journal = new BlobJournal(path, this.journalDb, options.mergeRecords ?? DEFAULT_MERGE_RECORDS, options.onMergeError ?? (() => undefined));
  }

  get(id: Buffer): IndexEntry | undefined {
    const slot = this.overlay.blobs.lookup(id);
    // A copy: the overlay's entry may be a pooled record, reused once its commit is in (copyEntry).
    if (slot) return slot.value === null ? undefined : copyEntry(slot.value);
    return this.direct.get(id);
  }

  /** The committed record of `id` (a view valid until the next read or commit): the journal's, else LMDB's. */
  private committedRaw(id: Buffer): Buffer | undefined {
    const journaled = this.journal.get(id);
    if (journaled !== undefined) return journaled ?? undefined;
    return this.blobs.getBinaryFast(id);
  }

  /**
   * The raw index record of `id` (entry.ts layout), without decoding or copying it: a buffer
   * lmdb-js reuses, valid until the next read of the index. The GET fast path reads it in place.
   */
  peek(id: Buffer): Buffer | undefined {
    // A record in the overlay (stored or deleted, not yet committed) is not LMDB's to answer: the
    // caller takes the long path (get), which sees it. Empty in a read-only workload: one size check.
    if (this.overlay.blobs.lookup(id)) return undefined;
    return this.committedRaw(id);
  }

  has(id: Buffer): boolean {
    // Every id staged or committed was added to the filter: a "no" needs no lookup.
    if (this.filter !== undefined && !this.filter.mayHave(id)) return false;
    const slot = this.overlay.blobs.lookup(id);
    if (slot) return slot.value !== null;
    return this.hasCommitted(id);
  }

  private hasCommitted(id: Buffer): boolean {
    const journaled = this.journal.get(id);
    if (journaled !== undefined) return journaled !== null;
    return this.blobs.doesExist(id);
  }

  /** The record of a shard column (key: shardKey(id, index)). */
  getShard(key: Buffer): IndexEntry | undefined {
    const slot = this.overlay.shards.lookup(key);
    if (slot) return slot.value ?? undefined;
    return this.direct.getShard(key);
  }

  hasShard(key: Buffer): boolean {
    const slot = this.overlay.shards.lookup(key);
    if (slot) return slot.value !== null;
    return this.shardDb.doesExist(key);
  }

  /** The columns of blob `id` held here, by column index. */
  shardsOf(id: Buffer): { index: number; entry: IndexEntry }[] {
    const out: { index: number; entry: IndexEntry }[] = [];
    const start = Buffer.concat([id, ZERO]);
    mergeRange(this.shardDb.getRange({ start, end: Buffer.concat([id, FF, FF]) }), this.overlay.shards, start,
      (key, value) => out.push({ index: key[16]!, entry: decodeEntry(value) }) > 0,
      () => true);
    for (const { key, slot } of this.overlay.shards.withPrefix(id)) if (slot.value) out.push({ index: key[16]!, entry: slot.value });
    return out.sort((a, b) => a.index - b.index);
  }

  /**
   * Every shard column held here from blob id `start` (inclusive) in byte order, with its blob
   * id (valid only during the call), column index, policy and column size, until `visit` returns false.
   */
  scanShards(start: Buffer | undefined, visit: (id: Buffer, index: number, policy: number, size: number) => boolean): void {
    mergeRange(this.shardDb.getRange({ start }), this.overlay.shards, start,
      (k, raw) => {
        const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        return visit(k.subarray(0, 16), k[16]!, b[1]!, Number(b.readBigUInt64LE(16)));
      },
      (k, e) => visit(k.subarray(0, 16), k[16]!, e.policy, e.size));
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

  /** The oldest-first page of the replication queue is not kept in order: entries by id, from `after`. */
  queued(limit: number, after?: Buffer): { id: Buffer; entry: QueueEntry }[] {
    const out: { id: Buffer; entry: QueueEntry }[] = [];
    // Removals not yet written are skipped, so a page may come short while there are more: read on.
    mergeRange(this.queueDb.getRange({ start: after }), this.overlay.queue, after,
      (key, value) => {
        if (after && key.equals(after)) return true;
        if (out.length === limit) return false;
        const change = this.queueChanges.get(key.toString('hex'));
        if (change?.entry !== null) out.push({ id: Buffer.from(key), entry: change?.entry ?? value });
        return true;
      },
      (key, entry) => {
        if (after && key.equals(after)) return true;
        if (out.length === limit) return false;
        out.push({ id: key, entry });
        return true;
      });
    return out;
  }

  queueEntry(id: Buffer): QueueEntry | undefined {
    // A staged entry is kept up to date by the replicator's changes (they also go to queueChanges once written).
    const slot = this.overlay.queue.lookup(id);
    if (slot) return slot.value ?? undefined;
    const change = this.queueChanges.get(id.toString('hex'));
    if (change) return change.entry ?? undefined;
    return this.queueDb.get(id);
  }

  /** Records owners that confirmed a copy (written with the next index transaction). */
  updateQueued(id: Buffer, entry: QueueEntry): Promise<void> {
    const slot = this.overlay.queue.lookup(id);
    if (slot) {
      if (slot.value === null) return Promise.resolve();
      slot.value = entry;
      // Not written yet: the record's transaction writes the entry as it is then.
      if (!slot.written) return Promise.resolve();
    }
    const key = id.toString('hex');
    if (this.queueChanges.get(key)?.entry !== null) this.queueChanges.set(key, { id: Buffer.from(id), entry });
    this.scheduleQueueWrite();
    return Promise.resolve();
  }

  /** Every owner has the blob: the entry goes (written with the next index transaction). */
  dequeue(id: Buffer): Promise<void> {
    const key = id.toString('hex');
    const slot = this.overlay.queue.lookup(id);
    if (slot) {
      if (slot.value === null) return Promise.resolve();
      slot.value = null;
      this.queueDepth--;
      if (!slot.written) return Promise.resolve();
    } else {
      if (this.queueChanges.get(key)?.entry === null || !this.queueDb.doesExist(id)) return Promise.resolve();
      this.queueDepth--;
    }
    this.queueChanges.set(key, { id: Buffer.from(id), entry: null });
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

  /**
   * The pending queue changes: inside a write transaction, or gathered for a commit's batch
   * (`gathered`). They come first in a commit and touch distinct ids, so what they read is what
   * LMDB held before the commit either way.
   */
  private writeQueueChanges(gathered = false): void {
    for (const { id, entry } of this.queueChanges.values()) {
      if (entry === null) {
        if (gathered) this.gathered.remove(this.queueDb, id);
        else this.queueDb.removeSync(id);
      } else if (this.queueDb.doesExist(id)) {
        if (gathered) this.gathered.put(this.queueDb, id, entry);
        else this.queueDb.putSync(id, entry);
      }
    }
    this.queueChanges.clear();
  }

  /** When a user deleted the blob here, if one did. */
  deletedAt(id: Buffer): number | undefined {
    const slot = this.overlay.deleted.lookup(id);
    if (slot) return slot.value?.atMs;
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
    mergeRange(this.committedFrom(start), this.overlay.blobs, start,
      (key, raw) => {
        const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        return visit(key, b[1]!, Number(b.readBigUInt64LE(16)));
      },
      (key, e) => visit(key, e.policy, e.size));
  }

  /** Ids a user deleted here, from `start` in byte order, with their policy, until `visit` returns false. */
  scanDeleted(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void {
    if (this.deletedCount === 0 && this.overlay.deleted.size === 0) return;
    mergeRange(this.deletedDb.getRange({ start }), this.overlay.deleted, start, (key, value) => visit(key, value.policy), (key, e) => visit(key, e.policy));
  }

  dropSegment(segment: number): Promise<unknown> {
    this.segments.delete(segment);
    this.dirtySegments.delete(segment);
    return this.segmentDb.remove(segment);
  }

  /** A segment's committed space accounting, marked to be written with the commit under way. */
  private spaceToCommit(segment: number): SegmentSpace {
    let s = this.segments.get(segment);
    if (!s) {
      s = { totalBytes: 0, liveBytes: 0 };
      this.segments.set(segment, s);
    }
    this.dirtySegments.add(segment);
    return s;
  }

  /** Writes to LMDB inside commit(), reading LMDB alone (the transaction's own writes included). */
  readonly direct: IndexWriter = ((index: BlobIndex) => ({
    get counters(): Counters {
      return index.committedCounters;
    },
    space: (segment: number): SegmentSpace => index.spaceToCommit(segment),
    // Blob records go through the journal (written with the commit), shard columns straight to LMDB.
    get: (id: Buffer) => {
      const own = index.journal.pendingGet(id);
      const raw = own === undefined ? index.committedRaw(id) : own ?? undefined;
      return raw === undefined ? undefined : decodeEntry(raw);
    },
    has: (id: Buffer) => {
      const own = index.journal.pendingGet(id);
      return own === undefined ? index.hasCommitted(id) : own !== null;
    },
    put: (id: Buffer, entry: IndexEntry) => index.journal.put(id, entry),
    remove: (id: Buffer) => index.journal.remove(id),
    getShard: (key: Buffer) => {
      const raw = index.shardDb.getBinaryFast(key);
      return raw === undefined ? undefined : decodeEntry(raw);
    },
    hasShard: (key: Buffer) => index.shardDb.doesExist(key),
    putShard: (key: Buffer, entry: IndexEntry) => void index.shardDb.putSync(key, encodeEntry(entry)),
    removeShard: (key: Buffer) => void index.shardDb.removeSync(key),
    markDeleted: (id: Buffer, atMs: number, policy: number) => {
      if (!index.deletedDb.doesExist(id)) index.deletedCount++;
      index.deletedDb.putSync(id, { atMs, policy });
    },
    // Nothing to look up while no delete is kept.
    clearDeleted: (id: Buffer) => {
      if (index.deletedCount > 0 && index.deletedDb.removeSync(id)) index.deletedCount--;
    },
    // Queues the blob's copies for the owners (after the pending changes, so it wins). An entry
    // staged before was counted then, and the replicator may have changed it since: that goes in.
    enqueue: (id: Buffer, queuedAtMs: number) => {
      const slot = index.overlay.queue.lookup(id);
      if (slot) {
        slot.written = true;
        if (slot.value) index.queueDb.putSync(id, slot.value);
        else index.queueDb.removeSync(id);
        return;
      }
      if (!index.queueDb.doesExist(id)) index.queueDepth++;
      index.queueDb.putSync(id, { queuedAtMs, done: [] });
    },
  }))(this);

  /**
   * Writes of an addsOnly commit (commit()): gathered for one batch on lmdb-js's write thread.
   * Its records only add keys no other record of the commit touches, so nothing it would read
   * was written by the commit itself: what LMDB holds is the answer. A record that reads a key
   * (a delete, a relocation, a put whose existence is not known) does not belong in it.
   */
  private readonly gathering: IndexWriter = ((index: BlobIndex) => {
    const g = {
      put: <K extends Key, V>(db: Database<V, K>, key: K, value: V) => index.gathered.put(db, key, value),
      remove: <K extends Key, V>(db: Database<V, K>, key: K) => index.gathered.remove(db, key),
    };
    const reads = (): never => {
      throw new Error('an index commit of added keys only read a key');
    };
    return {
      get counters(): Counters {
        return index.committedCounters;
      },
      space: (segment: number): SegmentSpace => index.spaceToCommit(segment),
      get: reads,
      has: reads,
      put: (id: Buffer, entry: IndexEntry) => index.journal.put(id, entry),
      remove: (id: Buffer) => index.journal.remove(id),
      getShard: reads,
      hasShard: reads,
      putShard: (key: Buffer, entry: IndexEntry) => g.put(index.shardDb, key, encodeEntry(entry)),
      removeShard: (key: Buffer) => g.remove(index.shardDb, key),
      markDeleted: reads,
      clearDeleted: (id: Buffer) => {
        if (index.deletedCount > 0 && index.deletedDb.doesExist(id)) {
          index.deletedCount--;
          g.remove(index.deletedDb, id);
        }
      },
      enqueue: (id: Buffer, queuedAtMs: number) => {
        const slot = index.overlay.queue.lookup(id);
        if (slot) {
          slot.written = true;
          if (slot.value) g.put(index.queueDb, id, slot.value);
          else g.remove(index.queueDb, id);
          return;
        }
        if (!index.queueDb.doesExist(id)) index.queueDepth++;
        g.put(index.queueDb, id, { queuedAtMs, done: [] });
      },
    };
  })(this);

  /** Writes to the overlay (a record acknowledged before its transaction), reading what reads see. */
  readonly staged: IndexWriter = ((index: BlobIndex, o: IndexOverlay) => {
    const scratch: SegmentSpace = { totalBytes: 0, liveBytes: 0 };
    return {
      get counters(): Counters {
        return index.counters;
      },
      space: () => scratch,
      get: (id: Buffer) => index.get(id),
      has: (id: Buffer) => index.has(id),
      put: (id: Buffer, entry: IndexEntry) => {
        const filter = index.filter;
        if (filter !== undefined) {
          filter.add(id);
          // Full: a bigger one is built (this one answers meanwhile).
          if (filter.added > filter.capacity) index.startFilter();
        }
        index.building?.add(id);
        o.blobs.set(id, entry, o.lsn);
      },
      remove: (id: Buffer) => o.blobs.set(id, null, o.lsn),
      getShard: (key: Buffer) => index.getShard(key),
      hasShard: (key: Buffer) => index.hasShard(key),
      putShard: (key: Buffer, entry: IndexEntry) => o.shards.set(key, entry, o.lsn),
      removeShard: (key: Buffer) => o.shards.set(key, null, o.lsn),
      markDeleted: (id: Buffer, atMs: number, policy: number) => o.deleted.set(id, { atMs, policy }, o.lsn),
      clearDeleted: (id: Buffer) => {
        if (index.deletedAt(id) !== undefined) o.deleted.set(id, null, o.lsn);
      },
      enqueue: (id: Buffer, queuedAtMs: number) => {
        if (index.queueEntry(id) === undefined) index.queueDepth++;
        o.queue.set(id, { queuedAtMs, done: [] }, o.lsn);
      },
    };
  })(this, this.overlay);

  /** Stages one record (its LSN) in the overlay: `apply(staged, arg)` writes through `staged`. */
  stage<T>(lsn: number, apply: (w: IndexWriter, arg: T) => void, arg: T): void {
    this.overlay.lsn = lsn;
    apply(this.staged, arg);
    this.overlay.stagedLsn = lsn;
  }

  /**
   * Runs `apply` (writing through the writer it is given) in one write transaction with the new
   * checkpoint, counters and segment space, resolving once committed (visible to reads); flushed()
   * tells when it is on disk. The overlay's slots staged up to the checkpoint go then.
   *
   * `addsOnly`: every record of the commit only adds a key no other record of it touches (a plain
   * put found absent when it was staged). Its writes are then gathered and queued to lmdb-js's
   * write thread as one batch (GatheredWrites), the hot path of small stores, with the
   * replicator's queue changes (a failed commit loses those, as a failed transaction does: a lost
   * change only repeats a copy). Otherwise a child
   * transaction runs on this thread, where `apply` reads its own writes; if `apply` throws part
   * way, none of its writes commit (lmdb-js commits what a plain transaction callback wrote before
   * it threw, which would leave records without their checkpoint and counters). A gathered commit
   * queues nothing until `apply` has returned.
   */
  async commit(checkpoint: Checkpoint, apply: (w: IndexWriter) => void, addsOnly = false): Promise<void> {
    // Merges that keep failing: a commit waits for one rather than let the journal's tables grow (blob-journal.ts).
    if (this.journal.backlogged) await this.journal.relieve();
    const lsn = checkpoint.nextLsn - 1;
    let journaled: { key: number; value: Buffer } | undefined;
    this.journal.begin(lsn, !addsOnly);
    try {
      if (addsOnly) {
        try {
          this.writeQueueChanges(true);
          apply(this.gathering);
          journaled = this.journal.take();
        } catch (err) {
          this.gathered.clear();
          throw err;
        }
        await this.gathered.queue(() => {
          if (journaled) void this.journalDb.put(journaled.key, journaled.value);
          this.writeCommitState(checkpoint, false);
        });
      } else {
        await this.root.childTransaction(() => {
          this.writeQueueChanges();
          apply(this.direct);
          journaled = this.journal.take();
          if (journaled) this.journalDb.putSync(journaled.key, journaled.value);
          this.writeCommitState(checkpoint, true);
        });
      }
    } catch (err) {
      this.journal.abort();
      throw err;
    }
    if (journaled) this.journal.committed(journaled);
    this.committedCheckpoint = checkpoint;
    if (checkpoint.nextLsn >= this.checkpoint.nextLsn) this.checkpoint = checkpoint;
    this.overlay.dropThrough(checkpoint.nextLsn - 1);
    // Nothing staged is left: the counters reads see are the committed ones (also after a replay).
    if (this.overlay.stagedLsn < checkpoint.nextLsn) Object.assign(this.counters, this.committedCounters);
  }

  /** The checkpoint, counters and changed segment space, written with every commit's records. */
  private writeCommitState(checkpoint: Checkpoint, sync: boolean): void {
    const put = <K extends Key, V>(db: Database<V, K>, key: K, value: V): void => void (sync ? db.putSync(key, value) : db.put(key, value));
    put(this.meta, 'checkpoint', checkpoint);
    put(this.meta, 'counters', this.committedCounters);
    for (const segment of this.dirtySegments) {
      const s = this.segments.get(segment);
      if (s) put(this.segmentDb, segment, s);
    }
    this.dirtySegments.clear();
  }

  /** Resolves once every transaction committed so far is flushed to disk. */
  flushed(): Promise<unknown> {
    return this.root.flushed;
  }

  /**
   * Ids in byte order after `after` (exclusive) whose hex form starts with `prefix`: whole blobs
   * and blobs a shard column of which is held here, each once (staged ones included).
   */
  list(prefix: string, after: Buffer | undefined, limit: number): ListPage {
    const start = after ?? Buffer.from(prefix.padEnd(32, '0').slice(0, 32), 'hex');
    // Column keys (id + index) sort right after their id: from the id's last column on.
    const shardStart = after ? Buffer.concat([after, FF]) : start;
    const blobs = mergedKeys(keysOf(this.committedFrom(start)), this.overlay.blobs, start);
    const shards = mergedKeys(this.shardDb.getKeys({ start: shardStart }), this.overlay.shards, shardStart);
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

  /**
   * Builds the id filter (id-filter.ts) in the background: the ids of the journal and the overlay
   * at once, then LMDB's a slice per turn of the event loop; ids staged meanwhile are added as
   * they come. Once done it answers has(); a bigger one is built the same way once it fills up.
   * Start it once the index holds everything recovery replayed.
   */
  startFilter(): void {
    if (this.building !== undefined || this.closed) return;
    const filter = new IdFilter(Math.max(this.counters.blobCount, this.filter?.added ?? 0) * 2);
    this.building = filter;
    // In no order (a filter needs none): the journal's ids in order would sort every bucket of its
    // tables first (~150 ms of event loop for 262,144 changes; this pass ~20-30 ms). In one turn:
    // sliced, a merge could move ids the pass has not reached into LMDB behind the LMDB pass.
    this.journal.forEachIdAt((ids, at) => filter.addAt(ids, at));
    for (const { key } of this.overlay.blobs.sortedFrom(undefined)) filter.add(key);
    let after: Buffer | undefined;
    // The last id read, copied into one buffer (lmdb-js may reuse a key's): where the next slice starts.
    const last = Buffer.alloc(16);
    const slice = (): void => {
      if (this.closed || this.building !== filter) return;
      let n = 0;
      const until = performance.now() + FILTER_SLICE_MS;
      for (const key of this.blobs.getKeys({ start: after, limit: FILTER_SLICE_IDS + 1 })) {
        // Only the first key of a slice can be the last one of the slice before.
        if (n === 0 && after !== undefined && key.equals(after)) continue;
        filter.add(key);
        key.copy(last);
        n++;
        if ((n & 63) === 0 && performance.now() > until) break;
      }
      after = last;
      if (n > 0) {
        setImmediate(slice);
        return;
      }
      filter.complete = true;
      this.filter = filter;
      this.building = undefined;
    };
    setImmediate(slice);
  }

  /** The id filter, if one answers (tests and metrics). */
  get idFilter(): IdFilter | undefined {
    return this.filter;
  }

  /**
   * The committed blob records from `start` (inclusive) in id order: LMDB's, with the journal's
   * changes over them (a journaled removal hides its key). Keys and values are valid until the next step.
   */
  private *committedFrom(start: Buffer | undefined): Generator<{ key: Buffer; value: Buffer }> {
    const base = this.blobs.getRange({ start });
    if (this.journal.size === 0) {
      yield* base;
      return;
    }
    // Both sides are read lazily: a page of a list needs only the records up to its end.
    const extra = this.journal.from(start);
    let next = extra.next();
    for (const entry of base) {
      for (; !next.done && Buffer.compare(next.value.id, entry.key) < 0; next = extra.next()) {
        if (next.value.record !== null) yield { key: next.value.id, value: next.value.record };
      }
      if (!next.done && next.value.id.equals(entry.key)) {
        if (next.value.record !== null) yield { key: next.value.id, value: next.value.record };
        next = extra.next();
        continue;
      }
      yield entry;
    }
    for (; !next.done; next = extra.next()) if (next.value.record !== null) yield { key: next.value.id, value: next.value.record };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.journal.close();
    clearTimeout(this.queueTimer);
    if (this.queueChanges.size > 0) await this.root.transaction(() => this.writeQueueChanges());
    await this.root.flushed;
    await this.root.close();
  }
}

function* keysOf(entries: Iterable<{ key: Buffer }>): Generator<Buffer> {
  for (const { key } of entries) yield key;
}

/** The keys of an LMDB range from `start` merged with the staged ones (a staged removal hides its key). */
function* mergedKeys(base: Iterable<Buffer>, staged: Staged<IndexEntry>, start: Buffer): Generator<Buffer> {
  if (staged.size === 0) {
    yield* base;
    return;
  }
  const extra = staged.sortedFrom(start);
  let i = 0;
  for (const key of base) {
    for (; i < extra.length && Buffer.compare(extra[i]!.key, key) <= 0; i++) {
      if (extra[i]!.slot.value !== null) yield extra[i]!.key;
    }
    if (i > 0 && extra[i - 1]!.key.equals(key)) continue;
    yield key;
  }
  for (; i < extra.length; i++) if (extra[i]!.slot.value !== null) yield extra[i]!.key;
}
