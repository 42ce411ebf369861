/**
 * The segment log with group commit. Records appended during one event-loop turn form a batch:
 * one writev at the segment's tail and one fdatasync. Batches are written and synced up to
 * `pipelineDepth` at a time. One committer applies every batch that has synced, in log order, in
 * a single LMDB transaction together with the checkpoint (the log position it covers): an index
 * transaction costs ~0.66 ms here whatever its size, so one per batch would cap the rate, while
 * one per group of synced batches lets it grow with the load. Records are acknowledged once their
 * transaction is flushed (durableAck=index) or committed (durableAck=log).
 *
 *   append() -> queue -> batch: writev -> fdatasync ─┐
 *                        batch: writev -> fdatasync ─┼─> committer: [txn: records + checkpoint] -> flush -> callbacks
 *                        ...                          ┘
 */
import { fdatasync } from 'node:fs';
import { toBlobstoreError } from '../errors/errors.js';
import { assert } from '../util/assert.js';
import { NO_RECORDER, type Recorder } from '../metrics/recorder.js';
import type { BlobIndex, Checkpoint } from '../index/blob-index.js';
import { HEADER_BYTES, RECORD_ALIGN, type RecordHeader, recordLength, writeHeader } from './record.js';
import type { OpenSegment, SegmentStore } from './segment-store.js';
import { punchHole, writevFully } from './fs-util.js';
import type { DiskSpace } from './disk-space.js';

const PADDING = Array.from({ length: RECORD_ALIGN }, (_, n) => Buffer.alloc(n));

/** Allocation steps are whole multiples of this (file systems allocate in pages or blocks). */
const ALLOC_ALIGN_BYTES = 64 * 1024;
const alignUp = (n: number, to: number): number => Math.ceil(n / to) * to;

/** A record waiting in the log; the engine builds it and is called back once it is durable. */
export interface LogRecord extends RecordHeader {
  labels: Buffer;
  /** Inline bytes (PUT_INLINE); undefined for PUT_FILE and DELETE. */
  data: Buffer | undefined;
  /** Set by the log: where the record landed. */
  segment: number;
  offset: number;
  length: number;
  /** Set by the engine's applier: the id already existed. */
  existed: boolean;
  /** performance.now() at append, for the stage metrics; -1 = not timed (compaction). */
  appendedMs: number;
  /** A tombstone or a relocation: frees space, so it may use the disk's reserve. */
  maintenance: boolean;
  callback: (err: Error | undefined, record: LogRecord) => void;
}

export interface LogHooks {
  /** Runs in log order inside the index transaction of the record's batch. */
  apply(record: LogRecord): void;
  /** Runs before a batch's index transaction (file unlinks that must precede the commit). */
  beforeCommit(records: readonly LogRecord[]): Promise<void>;
}

interface Batch {
  segment: OpenSegment;
  records: LogRecord[];
  endOffset: number;
  nextLsn: number;
  state: 'writing' | 'synced' | 'failed';
  /** performance.now() when the writev ended and when the fdatasync ended (stage metrics). */
  writtenMs: number;
  syncedMs: number;
}

export interface LogOptions {
  groupCommitMaxBytes: number;
  /** Batches written and synced at once (setting logPipelineDepth). */
  pipelineDepth: number;
  /** Batches formed but not yet committed, at most; beyond it records wait in the queue (setting logUncommittedBatchesMax). */
  uncommittedBatchesMax: number;
  /** Acknowledge after the index flush (true) or once the index commit is visible (false). */
  ackAfterIndexFlush: boolean;
  /** Segment space allocated ahead of the tail at a time. */
  allocBytes: number;
  space: DiskSpace;
  /**
   * Per record: `write` from append to the end of its batch's writev (queueing included),
   * `fsync` the batch's fdatasync, `index` from then until acknowledged (commit and flush).
   */
  recorder?: Recorder;
}

export class SegmentLog {
  private queue: LogRecord[] = [];
  /** Formed batches not yet committed, in log order. */
  private readonly uncommitted: Batch[] = [];
  /** Batches being written or synced. */
  private writing = 0;
  private committing = false;
  private scheduled = false;
  private rolling = false;
  /** The active segment has real blocks up to here (fallocate); records go in only below it. */
  private allocatedEnd: number;
  private allocating = false;
  /** seal() callers, resolved once the checkpoint names the segment after the sealed one. */
  private sealWaiters: (() => void)[] = [];
  private failure: Error | undefined;
  /** Write handles of sealed segments, closed once no uncommitted batch uses them. */
  private readonly sealed: OpenSegment[] = [];
  private readonly recorder: Recorder;

  constructor(
    private readonly store: SegmentStore,
    private readonly index: BlobIndex,
    private readonly hooks: LogHooks,
    private readonly options: LogOptions,
    private active: OpenSegment,
    private offset: number,
    private nextLsn: number,
  ) {
    this.recorder = options.recorder ?? NO_RECORDER;
    // What lies past the tail at start is unknown (recovery gave it back): allocate from the tail.
    this.allocatedEnd = offset;
  }

  get activeSegment(): number {
    return this.active.id;
  }

  /** Queues a record; its callback runs once it is durable in the log and the index. */
  append(record: LogRecord): void {
    if (this.failure) {
      record.callback(this.failure, record);
      return;
    }
    this.queue.push(record);
    if (!this.scheduled) {
      this.scheduled = true;
      // Defer to the check phase so every request of this turn joins the batch.
      setImmediate(this.pump);
    }
  }

  private readonly pump = (): void => {
    this.scheduled = false;
    if (this.sealWaiters.length > 0 && !this.rolling && !this.allocating && !this.failure) {
      if (this.offset > 0) this.rollOver();
      else void this.commitCheckpoint();
    }
    while (
      this.writing < this.options.pipelineDepth &&
      this.uncommitted.length < this.options.uncommittedBatchesMax &&
      this.queue.length > 0 &&
      !this.rolling &&
      !this.allocating &&
      !this.failure
    ) {
      const batch = this.takeBatch();
      if (!batch) break;
      this.write(batch);
    }
  };

  /** Takes queued records that fit in the active segment, assigning offsets and sequence numbers. */
  private takeBatch(): Batch | undefined {
    const records: LogRecord[] = [];
    let bytes = 0;
    let taken = 0;
    for (; taken < this.queue.length; taken++) {
      const r = this.queue[taken]!;
      const length = recordLength(r.labels.length, r.dataLength);
      if (this.offset + length > this.allocatedEnd) break;
      if (records.length > 0 && bytes + length > this.options.groupCommitMaxBytes) break;
      r.segment = this.active.id;
      r.offset = this.offset;
      r.length = length;
      r.lsn = this.nextLsn++;
      this.offset += length;
      bytes += length;
      records.push(r);
    }
    this.queue = taken === this.queue.length ? [] : this.queue.slice(taken);
    if (records.length === 0) {
      const head = this.queue[0]!;
      const length = recordLength(head.labels.length, head.dataLength);
      if (this.offset + length > this.active.sizeBytes) this.rollOver();
      else this.extend(head, length);
      return undefined;
    }
    const batch: Batch = { segment: this.active, records, endOffset: this.offset, nextLsn: this.nextLsn, state: 'writing', writtenMs: 0, syncedMs: 0 };
    this.uncommitted.push(batch);
    return batch;
  }

  private write(batch: Batch): void {
    this.writing++;
    const iov: Buffer[] = [];
    for (const r of batch.records) {
      const header = Buffer.allocUnsafe(HEADER_BYTES + r.labels.length);
      writeHeader(header, 0, r, r.labels);
      iov.push(header);
      if (r.data !== undefined && r.data.length > 0) iov.push(r.data);
      const pad = r.length - HEADER_BYTES - r.labels.length - r.dataLength;
      if (pad > 0) iov.push(PADDING[pad]!);
    }
    const done = (err: Error | null): void => {
      this.writing--;
      if (err) {
        // The tail is unknown now: the log stops taking records (the backend reports unhealthy);
        // recovery at the next start cuts it back to the last whole record.
        batch.state = 'failed';
        this.failure ??= err;
        const queued = this.queue;
        this.queue = [];
        this.reject(queued, err);
      } else {
        batch.state = 'synced';
        this.timeStage(batch.records, 'fsync', batch.writtenMs);
        batch.syncedMs = performance.now();
      }
      this.pump();
      void this.commitSynced();
    };
    writevFully(batch.segment.fd, iov, batch.records[0]!.offset, (err) => {
      if (err) return done(err);
      for (const r of batch.records) if (r.appendedMs >= 0) this.recorder.stage('write', r.appendedMs);
      batch.writtenMs = performance.now();
      fdatasync(batch.segment.fd, done);
    });
  }

  /**
   * Allocates segment space for `head` (and a step beyond it), then takes records again. A store
   * at the head may not take the reserve: when the disk cannot give it, every store waiting is
   * refused (507) and the maintenance records behind them get their turn.
   */
  private extend(head: LogRecord, length: number): void {
    this.allocating = true;
    const segment = this.active;
    const from = this.allocatedEnd;
    const room = segment.sizeBytes - from;
    const minBytes = Math.min(room, alignUp(this.offset + length - from, ALLOC_ALIGN_BYTES));
    const wantBytes = Math.max(minBytes, Math.min(room, this.options.allocBytes));
    this.store.allocateTail(segment, from, minBytes, wantBytes, head.maintenance, this.options.space).then(
      (got) => {
        if (this.active === segment) this.allocatedEnd = from + got;
      },
      (err: unknown) => this.refuse(err, !head.maintenance),
    ).finally(() => {
      this.allocating = false;
      this.pump();
    });
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
      this.reject(this.queue.splice(0), this.failure);
      return;
    }
    const queued = this.queue;
    this.queue = keepMaintenance ? queued.filter((r) => r.maintenance) : [];
    this.reject(keepMaintenance ? queued.filter((r) => !r.maintenance) : queued, error);
  }

  /** Records `stage` from `startMs` until now for each timed record. */
  private timeStage(records: readonly LogRecord[], stage: 'fsync' | 'index', startMs: number): void {
    for (const r of records) if (r.appendedMs >= 0) this.recorder.stage(stage, startMs);
  }

  private acknowledge(group: readonly Batch[]): void {
    for (const b of group) this.timeStage(b.records, 'index', b.syncedMs);
    for (const b of group) for (const r of b.records) r.callback(undefined, r);
  }

  /**
   * The committer: applies every synced batch at the head of the log in one index transaction,
   * and repeats while more have synced meanwhile. Only one runs at a time.
   */
  private async commitSynced(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    try {
      while (this.headDone()) {
        const group: Batch[] = [];
        while (this.headDone()) group.push(this.uncommitted.shift()!);
        await this.commitGroup(group);
        this.closeSealed();
        this.pump();
      }
    } finally {
      this.committing = false;
    }
  }

  /** The oldest uncommitted batch is synced (or failed). */
  private headDone(): boolean {
    const head = this.uncommitted[0];
    return head !== undefined && head.state !== 'writing';
  }

  private async commitGroup(group: readonly Batch[]): Promise<void> {
    const records = group.length === 1 ? group[0]!.records : group.flatMap((b) => b.records);
    if (this.failure) return this.reject(records, this.failure);
    const last = group[group.length - 1]!;
    const checkpoint: Checkpoint = { segment: last.segment.id, offset: last.endOffset, nextLsn: last.nextLsn };
    try {
      await this.hooks.beforeCommit(records);
      // An index commit needs free pages: on a disk someone else filled, the ballast goes first.
      await this.options.space.makeRoom();
      await this.index.commit(checkpoint, () => {
        for (const r of records) this.hooks.apply(r);
      });
    } catch (err) {
      this.failure ??= err as Error;
      return this.reject(records, err as Error);
    }
    if (!this.options.ackAfterIndexFlush) {
      // The records are fsynced in the log; recovery replays them past the last flushed checkpoint.
      this.acknowledge(group);
      return;
    }
    this.index.flushed().then(
      () => this.acknowledge(group),
      (err: Error) => {
        this.failure ??= err;
        this.reject(records, err);
      },
    );
  }

  private reject(records: readonly LogRecord[], err: Error): void {
    for (const r of records) r.callback(err, r);
  }

  get failed(): Error | undefined {
    return this.failure;
  }

  private rollOver(): void {
    assert(!this.rolling, 'roll over while rolling');
    this.rolling = true;
    const sealed = this.active;
    const unused = this.allocatedEnd - this.offset;
    // The allocated space past the last record goes back first (batches in flight write below it).
    punchHole(sealed.handle, this.offset, unused)
      .catch(() => false)
      .then(() => this.store.create(sealed.id + 1))
      .then((next) => {
        this.sealed.push(sealed);
        this.active = next;
        this.offset = 0;
        this.allocatedEnd = 0;
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
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.pump);
      }
    });
  }

  /**
   * Once every formed batch is committed, commits a checkpoint at the tail of the active segment
   * (so a sealed segment nothing else was written after is no longer the checkpoint's), then
   * resolves the seal() callers.
   */
  private async commitCheckpoint(): Promise<void> {
    while (this.uncommitted.length > 0 || this.committing || this.rolling) await new Promise((r) => setTimeout(r, 2));
    if (this.rolling || this.failure) return;
    if (this.index.checkpoint.segment !== this.active.id) {
      this.committing = true;
      try {
        await this.index.commit({ segment: this.active.id, offset: this.offset, nextLsn: this.nextLsn }, () => undefined);
      } catch (err) {
        this.failure ??= err as Error;
      } finally {
        this.committing = false;
      }
      void this.commitSynced();
    }
    for (const resolve of this.sealWaiters.splice(0)) resolve();
  }

  private closeSealed(): void {
    for (let i = this.sealed.length - 1; i >= 0; i--) {
      const segment = this.sealed[i]!;
      if (this.uncommitted.some((b) => b.segment === segment)) continue;
      this.sealed.splice(i, 1);
      void segment.handle.close().catch(() => undefined);
    }
  }

  /** Resolves when every appended record has been committed (or failed). */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.uncommitted.length > 0 || this.writing > 0 || this.rolling || this.scheduled || this.committing) {
      if (this.failure && this.writing === 0 && !this.committing) {
        this.reject(this.queue.splice(0), this.failure);
        for (const b of this.uncommitted.splice(0)) this.reject(b.records, this.failure);
        break;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    await this.index.flushed();
  }

  async close(): Promise<void> {
    await this.drain();
    this.closeSealed();
    await this.active.handle.close().catch(() => undefined);
  }
}
