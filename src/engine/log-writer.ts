/**
 * The log's batch writer: a batch's bytes (its records back to back in the arena, then its PAD)
 * written at the segment's tail and fdatasynced, then the log is told (`written`). With
 * `--log-writes direct` the write and the sync are one thread-pool job through the segment's
 * O_DIRECT descriptor (the addon's writeBatchTo, answered with the batch's token: no promise or
 * other object per batch), and a read-back due goes along; `buffered` writes into the page cache
 * on this thread and syncs in the pool.
 */
import { fdatasync } from 'node:fs';
import { ticks } from '../metrics/clock.js';
import type { Recorder } from '../metrics/recorder.js';
import type { Batch, BatchPool } from './batch.js';
import { batchWriter, type BatchWriter, writeError, writevFullySync } from './fs-util.js';
import { type LogRecord, UNTIMED } from './log-record.js';
import { ReadBack } from './read-back.js';
import { RecordArena } from './record-arena.js';

export class LogWriter {
  /** Batches being written or synced. */
  inFlight = 0;
  /** The addon's one-job write + fdatasync, for segments with an O_DIRECT descriptor; null without the addon. */
  readonly native: BatchWriter | null;
  /** Staged batches' blocks to read back into the page cache (direct writes). */
  readonly readBack: ReadBack;

  constructor(
    private readonly batches: BatchPool,
    private readonly recorder: Recorder,
    readBackBytes: number,
    /** The batch is written and synced, or failed with `err`. */
    private readonly written: (batch: Batch, err: Error | null) => void,
    /** Runs once per scheduled turn (scheduleTurn). */
    private readonly turn: () => void,
  ) {
    this.native = batchWriter((token, errno) => this.batchWritten(token, errno), turn);
    this.readBack = new ReadBack(readBackBytes, this.native);
  }

  /** `turn` once in the check phase, so every request of this turn joins the batch. */
  scheduleTurn(): void {
    if (this.native !== null) this.native.scheduleTurn();
    else setImmediate(this.turn);
  }

  write(batch: Batch): void {
    this.inFlight++;
    // The batch's records lie back to back in the arena, as on disk: one range, or a few where a
    // chunk ended; then its PAD. The batch is whole blocks from a block boundary.
    const parts = batch.parts;
    let triples = RecordArena.rangesInto(batch.records as LogRecord[], batch.count, parts, 0);
    if (batch.pad) {
      parts[3 * triples] = batch.pad;
      parts[3 * triples + 1] = 0;
      parts[3 * triples + 2] = batch.padLength;
      triples++;
    }
    const at = batch.record(0).offset;
    const segment = batch.segment!;
    const direct = segment.direct;
    if (direct !== undefined && this.native !== null) {
      // Past the page cache (logWrites=direct): the write and the fdatasync in one thread-pool job,
      // answered by batchWritten. A new page-cache page costs a fault on its first touch where the
      // host takes freed memory back (a VM); a log that only grows touches new pages all the time
      // (docs/adr/0012-hot-path.md). 'write' then times the job's write and sync together; 'fsync' the hop back.
      // A read-back due goes along: the job reads it back after its own write and sync (no hop of its own).
      const rb = this.readBack;
      const due = rb.due;
      const errno = this.native.write(
        batch.token, segment.fd, parts, triples, at, direct.fd,
        due ? rb.fd : 0, due ? rb.position : 0, due ? rb.length : 0,
      );
      if (errno !== 0) return this.writeRefused(batch, errno);
      if (due) rb.taken();
      return;
    }
    this.writeBuffered(batch, triples, at);
  }

  /** Nothing was queued (bad arguments): answered as a failed write, after this pump (a method: a closure in write() would make it allocate a context per call). */
  private writeRefused(batch: Batch, errno: number): void {
    queueMicrotask(() => this.batchWritten(batch.token, errno));
  }

  /**
   * Through the page cache, on this thread: copying a batch there costs less than a thread-pool
   * hop (under load each hop waits for a CPU); only the fdatasync goes to the pool. (A method of
   * its own: its callback's closure would make write() allocate a context on every call.)
   */
  private writeBuffered(batch: Batch, triples: number, at: number): void {
    const { parts } = batch;
    const segment = batch.segment!;
    const views: Buffer[] = [];
    for (let i = 0; i < triples; i++) {
      const buf = parts[3 * i] as Buffer;
      const start = parts[3 * i + 1] as number;
      views.push(buf.subarray(start, start + (parts[3 * i + 2] as number)));
    }
    let error: Error | null = null;
    try {
      writevFullySync(segment.fd, views, at);
    } catch (err) {
      error = err as Error;
    }
    this.batches.release(batch);
    if (error) return this.done(batch, error);
    this.wrote(batch);
    fdatasync(segment.fd, (err) => this.done(batch, err));
  }

  /** The addon's answer: the batch `token` is written and synced, or failed with `errno`. */
  private batchWritten(token: number, errno: number): void {
    const batch = this.batches.all[token]!;
    const err = writeError(errno);
    this.batches.release(batch);
    if (!err) this.wrote(batch);
    this.done(batch, err);
  }

  /** The batch's bytes are written: its records' 'write' stage ends now. */
  private wrote(batch: Batch): void {
    for (let i = 0; i < batch.count; i++) {
      const r = batch.record(i);
      if (r.appendedAt !== UNTIMED) this.recorder.stage('write', r.appendedAt);
    }
    batch.writtenAt = ticks();
  }

  private done(batch: Batch, err: Error | null): void {
    this.inFlight--;
    this.written(batch, err);
  }
}
