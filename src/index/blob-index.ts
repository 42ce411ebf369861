/**
 * The LMDB index: one record per blob (blob-records.ts: the journal, then `blobs`), per-segment
 * space accounting (`segments`), and small metadata (`meta`): the log checkpoint and the node's
 * counters. Start-up reads only `meta` and `segments`, never the blob records, so it does not
 * grow with the number of blobs. Writes go through `commit()`: one asynchronous LMDB transaction
 * per group commit of the log.
 *
 * Erasure-coded blobs: `shards`, one record per shard column held here (shard-records.ts); `ecq`,
 * the blobs whose columns need repair (ec-repair-queue.ts). For the cluster: `replq`, the
 * replication queue (replication-queue.ts), and `deleted`, the ids a user deleted here
 * (delete-records.ts).
 *
 * Reads see the overlay (overlay.ts): records acknowledged from the log whose transaction has not
 * committed yet. `direct` writes inside commit() and reads LMDB alone; `staged` writes the overlay
 * (index-writers.ts).
 */
import type { Database, Key, RootDatabase } from 'lmdb';
import { openIndexEnv } from './index-env.js';
import type { IndexEntry } from './entry.js';
import { GatheredWrites } from './gathered-writes.js';
import { BlobJournal } from './blob-journal.js';
import { BlobRecords } from './blob-records.js';
import { DeleteRecords } from './delete-records.js';
import { type EcRepairQueue, ecRepairQueue } from './ec-repair-queue.js';
import { type EcManifests, ecManifests } from './ec-manifests.js';
import type { IdFilter } from './id-filter.js';
import { type ListPage, listPage } from './id-list.js';
import { directWriter, gatheringWriter, stagedWriter, type WriterParts } from './index-writers.js';
import { type Counters, type IdWatcher, IndexOverlay, type IndexWriter, type SegmentSpace } from './overlay.js';
import { type ChangesSettled, type ReplicationQueue, ReplicationQueueStore } from './replication-queue.js';
import { ShardRecords } from './shard-records.js';
import { UnheldDeletes } from './unheld-deletes.js';

export type { Counters, DeletedEntry, IdSet, IdWatcher, IndexWriter, QueueEntry, SegmentSpace } from './overlay.js';
export type { EcRepairEntry, EcRepairQueue } from './ec-repair-queue.js';
export type { EcManifest, EcManifests } from './ec-manifests.js';
export type { ListPage } from './id-list.js';
export type { ReplicationQueue } from './replication-queue.js';

/** Every record before this log position has been applied to the index. */
export interface Checkpoint {
  segment: number;
  offset: number;
  /** The log sequence number the next record carries. */
  nextLsn: number;
}

/** Blob record changes the journal holds before they are merged into `blobs` (setting indexMergeRecords). */
export const DEFAULT_MERGE_RECORDS = 262_144;

export interface BlobIndexOptions {
  mergeRecords?: number;
  /** The page size of an index created here (setting indexPageBytes; else LMDB's own); one that exists keeps its own. */
  pageBytes?: number;
  /** A failed merge (the journal keeps its records; the next commit tries again). */
  onMergeError?: (err: Error) => void;
}

export class BlobIndex {
  private readonly root: RootDatabase;
  private readonly meta: Database<unknown, string>;
  private readonly segmentDb: Database<SegmentSpace, number>;
  private readonly journalDb: Database<Buffer, number>;
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
  private readonly watch: { watcher: IdWatcher | undefined } = { watcher: undefined };
  /** The writes of an addsOnly commit (commit, `gathering`). */
  private readonly gathered: GatheredWrites;
  /** Blob records committed but not merged into `blobs` yet (blob-journal.ts). */
  readonly journal: BlobJournal;
  private readonly blobs: BlobRecords;
  private readonly shards: ShardRecords;
  private readonly deletes: DeleteRecords;
  private readonly queue: ReplicationQueueStore;
  /** The replication queue (the replicator's view of it). */
  readonly replication: ReplicationQueue;
  /** The EC repair queue: blobs whose columns need repair, with what is known of them. */
  readonly ecRepairs: EcRepairQueue;
  readonly ecManifests: EcManifests;
  /** Deletes of blobs held nothing of here (src/engine/delete-memory.ts). */
  readonly unheldDeletes: UnheldDeletes;
  /** Writes to LMDB inside commit(), reading LMDB alone (the transaction's own writes included). */
  readonly direct: IndexWriter;
  /** Writes of an addsOnly commit (commit()): gathered for one batch on lmdb-js's write thread. */
  private readonly gathering: IndexWriter;
  /** Writes to the overlay (a record acknowledged before its transaction), reading what reads see. */
  readonly staged: IndexWriter;

  constructor(path: string, options: BlobIndexOptions = {}) {
    const env = openIndexEnv(path, options.pageBytes);
    this.root = env.root;
    this.journalDb = env.journal;
    this.meta = this.root.openDB<unknown, string>({ name: 'meta' });
    this.segmentDb = this.root.openDB<SegmentSpace, number>({ name: 'segments', keyEncoding: 'uint32' });
    this.queue = new ReplicationQueueStore(this.root, this.overlay.queue);
    this.replication = this.queue;
    this.deletes = new DeleteRecords(this.root, this.overlay.deleted);
    this.shards = new ShardRecords(this.root, this.overlay.shards);
    this.ecRepairs = ecRepairQueue(this.root);
    this.ecManifests = ecManifests(this.root);
    this.unheldDeletes = new UnheldDeletes(this.root);
    // Data dirs from before erasure coding have no shard counters.
    this.committedCounters = { blobCount: 0, storedBytes: 0, shardCount: 0, shardBytes: 0, ...(this.meta.get('counters') as Partial<Counters> | undefined) };
    this.counters = { ...this.committedCounters };
    this.committedCheckpoint = (this.meta.get('checkpoint') as Checkpoint | undefined) ?? { segment: 1, offset: 0, nextLsn: 1 };
    this.checkpoint = this.committedCheckpoint;
    for (const { key, value } of this.segmentDb.getRange()) this.segments.set(key, { ...value });
    this.gathered = new GatheredWrites(this.root);
    this.journal = new BlobJournal(path, this.journalDb, options.mergeRecords ?? DEFAULT_MERGE_RECORDS, options.onMergeError ?? (() => undefined));
    this.blobs = new BlobRecords(env.blobs, this.journal, this.overlay.blobs, () => this.counters.blobCount);
    const parts: WriterParts = {
      blobs: this.blobs, journal: this.journal, shards: this.shards, deletes: this.deletes, queue: this.queue,
      overlay: this.overlay, gathered: this.gathered, committedCounters: this.committedCounters, counters: this.counters,
      spaceToCommit: (segment) => this.spaceToCommit(segment), watch: this.watch,
    };
    this.direct = directWriter(parts);
    this.gathering = gatheringWriter(parts);
    this.staged = stagedWriter(parts, this);
  }

  get(id: Buffer): IndexEntry | undefined {
    return this.blobs.get(id);
  }

  /**
   * The raw index record of `id` (entry.ts layout), without decoding or copying it: a buffer
   * lmdb-js reuses, valid until the next read of the index. The GET fast path reads it in place.
   */
  peek(id: Buffer): Buffer | undefined {
    return this.blobs.peek(id);
  }

  has(id: Buffer): boolean {
    return this.blobs.has(id);
  }

  /** The record of a shard column (key: shardKey(id, index)). */
  getShard(key: Buffer): IndexEntry | undefined {
    return this.shards.get(key);
  }

  hasShard(key: Buffer): boolean {
    return this.shards.has(key);
  }

  /** The columns of blob `id` held here, by column index. */
  shardsOf(id: Buffer): { index: number; entry: IndexEntry }[] {
    return this.shards.of(id);
  }

  /** Every shard column held here from blob id `start`, until `visit` returns false (shard-records.ts). */
  scanShards(start: Buffer | undefined, visit: (id: Buffer, index: number, policy: number, size: number) => boolean): void {
    this.shards.scan(start, visit);
  }

  /** A small value of this node's own (the cluster keeps its member state here), or undefined. */
  getMeta<T>(key: string): T | undefined {
    return this.meta.get(`x:${key}`) as T | undefined;
  }

  /** Writes it in a transaction of its own; resolves once it is flushed to disk. */
  async putMeta(key: string, value: unknown): Promise<void> {
    await this.meta.put(`x:${key}`, value);
    await this.root.flushed;
  }

  /** When a user deleted the blob here, if one did. */
  deletedAt(id: Buffer): number | undefined {
    return this.deletes.deletedAt(id);
  }

  /** Forgets deletes older than `beforeMs` (repair may bring those blobs back); how many went. */
  pruneDeleted(beforeMs: number): Promise<number> {
    return this.deletes.prune(beforeMs, this.watch.watcher);
  }

  /**
   * Tells `watcher` (one at a time; undefined for none) of every id entering or leaving the id
   * sets from now on, as staged records change what reads see (IdWatcher). A replay at start
   * stages nothing: a watcher takes the sets as they are by a scan, then follows them.
   */
  watchIds(watcher: IdWatcher | undefined): void {
    this.watch.watcher = watcher;
  }

  /**
   * Calls `visit` with every stored id from `start` (inclusive) in byte order, with its policy and
   * size, until it returns false. The id is valid only during the call (copy it to keep it).
   */
  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean): void {
    this.blobs.scan(start, visit);
  }

  /** Ids a user deleted here, from `start` in byte order, with their policy, until `visit` returns false. */
  scanDeleted(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void {
    this.deletes.scan(start, visit);
  }

  /**
   * Ids in byte order after `after` (exclusive) whose hex form starts with `prefix`: whole blobs
   * and blobs a shard column of which is held here, each once (staged ones included).
   */
  list(prefix: string, after: Buffer | undefined, limit: number): ListPage {
    return listPage(prefix, after, limit, (start) => this.blobs.keysFrom(start), (start) => this.shards.keysFrom(start));
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
   * replicator's queue changes (which a failed commit hands back to the queue). Otherwise a child
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
    // The queue's changes this commit took: read as pending until it ends, taken again if it fails.
    let queueSettled: ChangesSettled = () => undefined;
    try {
      if (addsOnly) {
        try {
          queueSettled = this.queue.writeChanges(this.gathered);
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
          queueSettled = this.queue.writeChanges();
          apply(this.direct);
          journaled = this.journal.take();
          if (journaled) this.journalDb.putSync(journaled.key, journaled.value);
          this.writeCommitState(checkpoint, true);
        });
      }
    } catch (err) {
      queueSettled(false);
      this.journal.abort();
      throw err;
    }
    queueSettled(true);
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
   * Builds the id filter (id-filter.ts) in the background; once done it answers has(). Start it
   * once the index holds everything recovery replayed (blob-records.ts).
   */
  startFilter(): void {
    this.blobs.startFilter();
  }

  /** The id filter, if one answers (tests and metrics). */
  get idFilter(): IdFilter | undefined {
    return this.blobs.idFilter;
  }

  async close(): Promise<void> {
    this.blobs.close();
    await this.journal.close();
    await this.queue.close();
    await this.root.flushed;
    await this.root.close();
  }
}
