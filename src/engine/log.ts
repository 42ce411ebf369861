/**
 * The segment log with group commit. Records appended during one event-loop turn form a batch:
 * one write at the segment's tail and one fdatasync (log-writer.ts). Batches are written and
 * synced up to `pipelineDepth` at a time. Once a batch and every one before it have synced, its
 * records are staged in the index overlay (reads see them at once, index/overlay.ts) and, with
 * durableAck=log, acknowledged (acks.ts): the fsynced record is what a crash replays. The index
 * committer (index-committer.ts) applies the staged batches, in log order, in one LMDB
 * transaction with the checkpoint, then drops them from the overlay; with durableAck=index
 * records are acknowledged once their transaction is flushed instead. At most `indexLagBatches`
 * batches wait for their commit; beyond it records wait in the queue. Segment space is allocated
 * ahead of the tail (log-space.ts).
 *
 *   append() -> queue -> batch: write -> fdatasync ─┐                      (durableAck=log)
 *                        batch: write -> fdatasync ─┼─> in log order: stage in overlay -> callbacks
 *                        ...                         ┘        └─> committer: [txn: records + checkpoint] -> drop from overlay
 *                                                                                       -> flush -> callbacks (durableAck=index)
 */
import { toBlobstoreError } from '../errors/errors.js';
import { assert } from '../util/assert.js';
import { NO_RECORDER } from '../metrics/recorder.js';
import type { Recorder } from '../metrics/recorder.js';
import { ticks } from '../metrics/clock.js';
import type { BlobIndex } from '../index/blob-index.js';
import { LOG_BLOCK_BYTES, MAX_PAD_BYTES, recordLength, sealHeader } from './record.js';
import { type OpenSegment, SegmentStore } from './segment-store.js';
import { punchHole } from './fs-util.js';
import { RecordQueue } from './record-queue.js';
import type { DiskSpace } from './disk-space.js';
import { RecordArena } from './record-arena.js';
import { type Batch, BatchPool } from './batch.js';
import { Acks } from './acks.js';
import { LogWriter } from './log-writer.js';
import { LogSpace } from './log-space.js';
import { type CommitHold, IndexCommitter } from './index-committer.js';
import type { LogHooks, LogRecord } from './log-record.js';

export interface LogOptions {
  groupCommitMaxBytes: number;
  /** Bytes of an arena chunk, where appended records wait to be written (at least the largest record). */
  arenaChunkBytes: number;
  /** Batches written and synced at once (setting logPipelineDepth). */
  pipelineDepth: number;
  /** Batches staged or in flight whose index transaction has not committed, at most. */
  indexLagBatches: number;
  /** The longest an index commit waits for its hold (setting indexCommitHoldMs; holdCommits); 0: never held. */
  commitHoldMaxMs?: number;
  /** With durableAck=log, index commits start at most this often (setting indexCommitIntervalMs); 0: back to back. */
  commitIntervalMs?: number;
  /** Acknowledge after the index flush (true) or once the record is fsynced and staged (false). */
  ackAfterIndexFlush: boolean;
  /** Segment space allocated ahead of the tail at a time. */
  allocBytes: number;
  /**
   * Direct writes: synced batches are read back into the page cache once this many bytes of them
   * have gathered, or once no batch is in flight (setting logReadBackBytes); 0: none.
   */
  readBackBytes?: number;
  space: DiskSpace;
  /**
   * Per record: `write` from append to the end of its batch's write (queueing included),
   * `fsync` the batch's fdatasync, `index` from then until acknowledged (durableAck=log: staged in
   * the overlay; index: committed and flushed).
   */
  recorder?: Recorder;
}

export class SegmentLog {
  private readonly queue = new RecordQueue<LogRecord>();
  /** Formed batches not yet committed, in log order; the first `stagedCount` are staged. */
  private readonly uncommitted: Batch[] = [];
  private stagedCount = 0;
  private scheduled = false;
  private rolling = false;
  /** seal() callers, resolved once the checkpoint names the segment after the sealed one. */
  private sealWaiters: (() => void)[] = [];
  private failure: Error | undefined;
  /** Write handles of sealed segments, closed once no uncommitted batch uses them. */
  private readonly sealed: OpenSegment[] = [];
  private readonly arena: RecordArena;
  private readonly pool: BatchPool;
  private readonly acks: Acks;
  private readonly writer: LogWriter;
  private readonly space: LogSpace;
  private readonly committer: IndexCommitter;

  constructor(
    private readonly store: SegmentStore,
    private readonly index: BlobIndex,
    private readonly hooks: LogHooks,
    private readonly options: LogOptions,
    private active: OpenSegment,
    private offset: number,
    private nextLsn: number,
  ) {
    const recorder = options.recorder ?? NO_RECORDER;
    this.arena = new RecordArena(options.arenaChunkBytes);
    this.pool = new BatchPool(this.arena);
    const fail = (err: Error): void => void (this.failure ??= err);
    this.acks = new Acks(recorder, this.pool, fail);
    this.writer = new LogWriter(this.pool, recorder, options.readBackBytes ?? 0, (batch, err) => this.batchDone(batch, err), this.pump);
    this.space = new LogSpace(store, options.space, options.allocBytes, active, offset, this.pump, (err, keep) => this.refuse(err, keep));
    this.committer = new IndexCommitter(index, {
      headDone: () => this.headDone(),
      takeHead: () => this.takeHead(),
      failed: () => this.failure,
      fail,
      afterCommit: () => {
        this.closeSealed();
        this.pump();
      },
    }, hooks, this.acks, this.pool, options.space, {
      ackAfterIndexFlush: options.ackAfterIndexFlush, commitIntervalMs: options.commitIntervalMs ?? 0, holdMaxMs: options.commitHoldMaxMs ?? 0,
    });
    // A tail off a block boundary (a torn batch cut back, or a log of format 3, unpadded): the
    // block holds records a write must not touch again, so the log goes on in a new segment.
    if (offset % LOG_BLOCK_BYTES !== 0) this.rollOver();
  }

  /**
   * Every index commit (durableAck=log) waits for `hold` first, at most commitHoldMaxMs; not while
   * half of indexLagBatches wait for their commit (stores would soon wait for it).
   */
  holdCommits(hold: CommitHold): void {
    this.committer.holdCommits(() => (2 * this.uncommitted.length < this.options.indexLagBatches ? hold() : undefined));
  }

  get activeSegment(): number {
    return this.active.id;
  }

  /**
   * Queues a record; its callback runs once it is durable in the log (and, with durableAck=index,
   * the index). Its bytes are `data` (at least `dataLength` of them; by default its own `data`),
   * copied into its place in the arena before this returns: `data` may be reused afterwards.
   */
  append(record: LogRecord, data: Uint8Array | ArrayBuffer | undefined = record.data): void {
    if (this.failure) {
      record.callback(this.failure, record);
      return;
    }
    this.intoArena(record, data);
    this.queue.push(record);
    if (!this.scheduled) this.scheduleTurn();
  }

  /** The record's length on disk, and its bytes copied into its place in the arena. */
  private intoArena(record: LogRecord, data: Uint8Array | ArrayBuffer | undefined): void {
    record.length = recordLength(record.labels.length, record.dataLength);
    this.arena.place(record, data);
    record.data = undefined;
  }

  /**
   * Places a record's bytes in the arena as append() does, without queueing it: its owner queues
   * it (enqueue) or drops it (discard) from the beforeBatch hook of the log's next turn, which this
   * schedules. The small stores' path: their bodies are hashed together then (small-stores.ts).
   * Throws the log's failure, placing nothing.
   */
  place(record: LogRecord, data: Uint8Array | ArrayBuffer): void {
    if (this.failure) throw this.failure;
    this.intoArena(record, data);
    if (!this.scheduled) this.scheduleTurn();
  }

  /**
   * Queues a placed record (from the beforeBatch hook: the turn that forms batches follows at
   * once); its callback runs as append()'s does.
   */
  enqueue(record: LogRecord): void {
    if (this.failure) {
      this.arena.release(record);
      record.callback(this.failure, record);
      return;
    }
    this.queue.push(record);
  }

  /** A placed record goes no further: its place in the arena is free again. */
  discard(record: LogRecord): void {
    this.arena.release(record);
  }

  /** pump() once in the check phase, so every request of this turn joins the batch. */
  private scheduleTurn(): void {
    this.scheduled = true;
    this.writer.scheduleTurn();
  }

  private readonly pump = (): void => {
    // Cleared first: a record placed from the hook (an answer's callback storing again) schedules the next turn.
    this.scheduled = false;
    this.hooks.beforeBatch?.();
    if (this.sealWaiters.length > 0 && !this.rolling && !this.space.busy && !this.failure) {
      if (this.offset > 0) this.rollOver();
      else void this.commitCheckpoint();
    }
    while (
      this.writer.inFlight < this.options.pipelineDepth &&
      this.uncommitted.length < this.options.indexLagBatches &&
      this.queue.length > 0 &&
      !this.rolling &&
      !this.failure
    ) {
      const batch = this.takeBatch();
      if (!batch) break;
      this.writer.write(batch);
    }
    if (this.writer.readBack.due) this.writer.readBack.send();
    if (!this.rolling && !this.failure) this.space.ahead(this.offset);
  };

  /** Takes queued records that fit in the active segment, assigning offsets and sequence numbers. */
  private takeBatch(): Batch | undefined {
    const batch = this.pool.take();
    const allocatedEnd = this.space.end;
    let bytes = 0;
    let taken = 0;
    for (; taken < this.queue.length; taken++) {
      const r = this.queue.at(taken);
      const length = r.length;
      // Room for the record and the longest PAD after it, so any batch can end on a block boundary.
      if (this.offset + length + MAX_PAD_BYTES > allocatedEnd) break;
      if (taken > 0 && bytes + length > this.options.groupCommitMaxBytes) break;
      r.segment = this.active.id;
      r.offset = this.offset;
      r.lsn = this.nextLsn++;
      sealHeader(r.chunk!.buf, r.at, r);
      this.offset += length;
      bytes += length;
      batch.records[taken] = r;
    }
    this.queue.drop(taken);
    if (taken === 0) {
      this.pool.untaken(batch);
      // A step under way: the records wait for it (its end pumps again).
      if (this.space.busy) return undefined;
      const head = this.queue.at(0);
      const length = head.length + MAX_PAD_BYTES;
      if (this.offset + length > this.active.sizeBytes) this.rollOver();
      else this.space.extend(head, this.offset, length);
      return undefined;
    }
    this.nextLsn = this.pool.pad(batch, this.offset, this.nextLsn);
    this.offset += batch.padLength;
    batch.begin(this.active, taken, this.offset, this.nextLsn);
    this.uncommitted.push(batch);
    return batch;
  }

  /** The writer's answer: the batch is written and synced, or failed with `err`. */
  private batchDone(batch: Batch, err: Error | null): void {
    if (err) {
      // The tail is unknown now: the log stops taking records (the backend reports unhealthy);
      // recovery at the next start cuts it back to the last whole record.
      batch.state = 'failed';
      this.failure ??= err;
      this.acks.reject(this.queue.takeAll(), err);
    } else {
      batch.state = 'synced';
      this.acks.timeStage(batch, 'fsync', batch.writtenAt);
      batch.syncedAt = ticks();
    }
    this.stageSynced();
    this.pump();
    // An async function's call is a promise even when it returns at once: only when it would run.
    if (!this.committer.committing) void this.committer.run();
  }

  /**
   * Space for the head of the queue could not be had: the records waiting for it are refused
   * (507), except maintenance records when `keepMaintenance` (they may take the reserve next).
   */
  private refuse(err: unknown, keepMaintenance: boolean): void {
    const error = toBlobstoreError(err);
    if (error.kind !== 'insufficient_storage') {
      // Not a full disk (an I/O error): the log stops as it does on a failed write.
      this.failure ??= err instanceof Error ? err : error;
      this.acks.reject(this.queue.takeAll(), this.failure);
      return;
    }
    this.acks.reject(keepMaintenance ? this.queue.keepOnly((r) => r.maintenance) : this.queue.takeAll(), error);
  }

  /**
   * Stages the synced batches at the head of the log that are not staged yet, in log order (a
   * batch synced before an earlier one waits for it: recovery ends the log at the first unwritten
   * bytes), and with durableAck=log acknowledges them.
   */
  private stageSynced(): void {
    while (this.stagedCount < this.uncommitted.length && !this.failure) {
      const batch = this.uncommitted[this.stagedCount]!;
      if (batch.state !== 'synced') return;
      this.stagedCount++;
      for (let i = 0; i < batch.count; i++) {
        const wait = this.hooks.stage(batch.record(i));
        if (wait) batch.waits.push(wait);
      }
      batch.staged = true;
      this.index.checkpoint = { segment: batch.segment!.id, offset: batch.endOffset, nextLsn: batch.nextLsn };
      this.writer.readBack.gather(batch.segment!, batch.record(0).offset, batch.endOffset, this.active);
      if (!this.options.ackAfterIndexFlush) this.acks.answer(batch);
    }
    // Nothing in flight: no batch may come soon to take the read-back along (pump sends it alone).
    if (this.writer.inFlight === 0) this.writer.readBack.idle();
  }

  /** The oldest uncommitted batch is staged (or, once the log failed, done writing). */
  private headDone(): boolean {
    const head = this.uncommitted[0];
    return head !== undefined && (head.staged || (this.failure !== undefined && head.state !== 'writing'));
  }

  private takeHead(): Batch {
    const b = this.uncommitted.shift()!;
    if (b.staged) this.stagedCount--;
    return b;
  }

  /**
   * Resolves once every record taken into a batch before the call is committed to the index and
   * flushed (or the log failed): what compaction waits for before it removes a segment.
   */
  async settled(): Promise<void> {
    const target = this.nextLsn;
    // A group the committer has taken out of `uncommitted` is not committed until its
    // transaction is: it may still wait for a file's unlink or the ballast (IndexCommitter).
    while (this.index.committedCheckpoint.nextLsn < target && (this.uncommitted.length > 0 || this.committer.committing) && !this.failure) {
      await this.committer.nextCommit();
    }
    await this.index.flushed();
  }

  get failed(): Error | undefined {
    return this.failure;
  }

  private rollOver(): void {
    assert(!this.rolling, 'roll over while rolling');
    this.rolling = true;
    const sealed = this.active;
    const unused = this.space.end - this.offset;
    // The allocated space past the last record goes back first (batches in flight write below it).
    punchHole(sealed.handle, this.offset, unused)
      .catch(() => false)
      .then(() => this.store.create(sealed.id + 1))
      .then(async (next) => {
        await this.store.openDirect(next);
        return next;
      })
      .then((next) => {
        this.sealed.push(sealed);
        this.active = next;
        this.offset = 0;
        this.space.restart(next);
        this.rolling = false;
        this.closeSealed();
        if (this.sealWaiters.length > 0) void this.commitCheckpoint();
        this.pump();
      })
      .catch((err: unknown) => {
        this.rolling = false;
        // No room for a new segment file: the waiting records are refused, the log goes on.
        this.refuse(err, false);
        this.pump();
      });
  }

  /**
   * Ends the active segment so compaction may take it (a mostly dead head on a full disk);
   * resolves once the index checkpoint names the next segment.
   */
  seal(): Promise<void> {
    return new Promise((resolve) => {
      this.sealWaiters.push(resolve);
      if (!this.scheduled) this.scheduleTurn();
    });
  }

  /**
   * Once every formed batch is committed, commits a checkpoint at the tail of the active segment
   * (so a sealed segment nothing else was written after is no longer the checkpoint's), then
   * resolves the seal() callers.
   */
  private async commitCheckpoint(): Promise<void> {
    while (this.uncommitted.length > 0 || this.committer.committing || this.rolling) await new Promise((r) => setTimeout(r, 2));
    if (this.rolling || this.failure) return;
    if (this.index.checkpoint.segment !== this.active.id) {
      await this.committer.commitAlone({ segment: this.active.id, offset: this.offset, nextLsn: this.nextLsn });
    }
    for (const resolve of this.sealWaiters.splice(0)) resolve();
  }

  private closeSealed(): void {
    for (let i = this.sealed.length - 1; i >= 0; i--) {
      const segment = this.sealed[i]!;
      if (this.uncommitted.some((b) => b.segment === segment)) continue;
      this.sealed.splice(i, 1);
      void SegmentStore.close(segment);
    }
  }

  /** Resolves when every appended record has been committed (or failed). */
  async drain(): Promise<void> {
    const { writer, committer, space } = this;
    // An allocation step under way writes through the segment's descriptors: close() must wait for it.
    while (this.queue.length > 0 || this.uncommitted.length > 0 || writer.inFlight > 0 || this.rolling || this.scheduled || committer.committing || space.busy) {
      if (this.failure && writer.inFlight === 0 && !committer.committing && !space.busy) {
        this.acks.reject(this.queue.takeAll(), this.failure);
        this.acks.rejectUnanswered(this.uncommitted.splice(0), this.failure);
        this.stagedCount = 0;
        committer.wake();
        break;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    await this.index.flushed();
  }

  async close(): Promise<void> {
    await this.drain();
    this.closeSealed();
    await SegmentStore.close(this.active);
  }

  // What the engine's tests take hold of: the committer's run and its flag, the addon's writer
  // (to watch what the log asks of it), and every batch made (to count them).

  get committing(): boolean {
    return this.committer.committing;
  }

  set committing(on: boolean) {
    this.committer.committing = on;
  }

  commitSynced(): Promise<void> {
    return this.committer.run();
  }

  get writeBatch(): LogWriter['native'] {
    return this.writer.native;
  }

  get batches(): readonly Batch[] {
    return this.pool.all;
  }
}
