/**
 * The segment log with group commit. Records appended during one event-loop turn form a batch:
 * one writev at the segment's tail, one fdatasync, then one LMDB transaction applies the batch to
 * the index together with the checkpoint (the log position it covers) and is flushed; only then
 * are the records acknowledged. Up to `pipelineDepth` batches are written and synced at once, so
 * the next batch is on its way to disk while the previous one syncs; index commits stay in log
 * order.
 *
 *   append() -> queue -> [batch: writev -> fdatasync] -> in order: [index txn + checkpoint -> flush] -> callbacks
 */
import { writev, fdatasync } from 'node:fs';
import { assert } from '../util/assert.js';
import type { BlobIndex, Checkpoint } from '../index/blob-index.js';
import { HEADER_BYTES, RECORD_ALIGN, type RecordHeader, recordLength, writeHeader } from './record.js';
import type { OpenSegment, SegmentStore } from './segment-store.js';

const PADDING = Array.from({ length: RECORD_ALIGN }, (_, n) => Buffer.alloc(n));

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
  synced: Promise<void>;
  markSynced: () => void;
}

export interface LogOptions {
  groupCommitMaxBytes: number;
  pipelineDepth: number;
  /** Acknowledge after the index flush (true) or once the index commit is visible (false). */
  ackAfterIndexFlush: boolean;
}

export class SegmentLog {
  private queue: LogRecord[] = [];
  private inflight = 0;
  private scheduled = false;
  private rolling = false;
  private applyChain: Promise<void> = Promise.resolve();
  private failure: Error | undefined;

  constructor(
    private readonly store: SegmentStore,
    private readonly index: BlobIndex,
    private readonly hooks: LogHooks,
    private readonly options: LogOptions,
    private active: OpenSegment,
    private offset: number,
    private nextLsn: number,
  ) {
    store.prepare(active.id + 1);
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
    while (this.inflight < this.options.pipelineDepth && this.queue.length > 0 && !this.rolling) {
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
      if (this.offset + length > this.active.sizeBytes) break;
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
      this.rollOver();
      return undefined;
    }
    let markSynced!: () => void;
    const synced = new Promise<void>((resolve) => (markSynced = resolve));
    const batch: Batch = { segment: this.active, records, endOffset: this.offset, nextLsn: this.nextLsn, synced, markSynced };
    this.applyChain = this.applyChain.then(() => synced).then(() => this.commit(batch));
    return batch;
  }

  private write(batch: Batch): void {
    this.inflight++;
    const iov: Buffer[] = [];
    for (const r of batch.records) {
      const header = Buffer.allocUnsafe(HEADER_BYTES + r.labels.length);
      writeHeader(header, 0, r, r.labels);
      iov.push(header);
      if (r.data !== undefined && r.data.length > 0) iov.push(r.data);
      const pad = r.length - HEADER_BYTES - r.labels.length - r.dataLength;
      if (pad > 0) iov.push(PADDING[pad]!);
    }
    const first = batch.records[0]!;
    writev(batch.segment.fd, iov, first.offset, (err) => {
      if (err) return this.fail(batch, err);
      fdatasync(batch.segment.fd, (syncErr) => {
        if (syncErr) return this.fail(batch, syncErr);
        batch.markSynced();
      });
    });
  }

  /**
   * A batch counts as in flight until its index commit is done: records arriving meanwhile queue
   * up and form the next batch, so batches grow with the load instead of one commit per record.
   */
  private async commit(batch: Batch): Promise<void> {
    try {
      await this.commitBatch(batch);
    } finally {
      this.inflight--;
      this.pump();
    }
  }

  /**
   * Applies a batch in one index transaction (in log order), then acknowledges its records once
   * the transaction is flushed. Only the transactions are serialised: with lmdb-js's
   * overlappingSync the next batch commits while this one's flush is still under way.
   */
  private async commitBatch(batch: Batch): Promise<void> {
    if (this.failure) return this.reject(batch.records, this.failure);
    const checkpoint: Checkpoint = { segment: batch.segment.id, offset: batch.endOffset, nextLsn: batch.nextLsn };
    try {
      await this.hooks.beforeCommit(batch.records);
      await this.index.commit(checkpoint, () => {
        for (const r of batch.records) this.hooks.apply(r);
      });
    } catch (err) {
      this.failure = err as Error;
      return this.reject(batch.records, err as Error);
    }
    if (!this.options.ackAfterIndexFlush) {
      // The records are fsynced in the log; recovery replays them past the last flushed checkpoint.
      for (const r of batch.records) r.callback(undefined, r);
      return;
    }
    this.index.flushed().then(
      () => {
        for (const r of batch.records) r.callback(undefined, r);
      },
      (err: Error) => {
        this.failure ??= err;
        this.reject(batch.records, err);
      },
    );
  }

  /**
   * A failed write or sync leaves the tail unknown: the log stops taking records (the node reports
   * the backend unhealthy); recovery at the next start cuts the tail back to the last whole record.
   */
  private fail(batch: Batch, err: Error): void {
    this.failure ??= err;
    batch.markSynced();
    const queued = this.queue;
    this.queue = [];
    this.reject(queued, err);
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
    this.store
      .create(sealed.id + 1)
      .then((next) => {
        this.active = next;
        this.offset = 0;
        this.rolling = false;
        this.store.prepare(next.id + 1);
        // The sealed segment's write handle closes once its last batch is committed.
        void this.applyChain.then(() => sealed.handle.close()).catch(() => undefined);
        this.pump();
      })
      .catch((err: Error) => {
        this.rolling = false;
        this.failure ??= err;
        const queued = this.queue;
        this.queue = [];
        this.reject(queued, err);
      });
  }

  /** Resolves when every appended record has been committed (or failed). */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.inflight > 0 || this.rolling || this.scheduled) {
      await new Promise((r) => setTimeout(r, 2));
    }
    await this.applyChain;
  }

  async close(): Promise<void> {
    await this.drain();
    await this.store.settle();
    await this.active.handle.close().catch(() => undefined);
  }
}
