/**
 * The log's answers to its appenders: a batch's records are acknowledged (their callbacks run)
 * once what the batch waits for is done (a deleted blob's file unlinked), or failed with the
 * error; a record refused before it was written gives its place in the arena back.
 */
import type { Recorder } from '../metrics/recorder.js';
import type { Ticks } from '../metrics/clock.js';
import type { Batch, BatchPool } from './batch.js';
import { type LogRecord, UNTIMED } from './log-record.js';

export class Acks {
  constructor(
    private readonly recorder: Recorder,
    private readonly batches: BatchPool,
    /** The log fails with `err` (the first failure stays). */
    private readonly fail: (err: Error) => void,
  ) {}

  /** Runs the batch's callbacks (once what it waits for is done). */
  answer(batch: Batch): void {
    batch.answered = true;
    if (batch.waits.length === 0) this.ack(batch);
    else this.ackAfterWaits(batch);
  }

  /** A method of its own: its closures would make answer() allocate a context on every call. */
  private ackAfterWaits(batch: Batch): void {
    Promise.all(batch.waits).then(() => this.ack(batch), (err: Error) => {
      this.fail(err);
      this.rejectBatch(batch, err);
    });
  }

  private ack(batch: Batch): void {
    this.timeStage(batch, 'index', batch.syncedAt);
    for (let i = 0; i < batch.count; i++) {
      const r = batch.record(i);
      r.callback(undefined, r);
    }
    batch.acked = true;
    if (batch.committed) this.batches.recycle(batch);
  }

  /** Records `stage` from `start` (ticks) until now for each timed record of the batch. */
  timeStage(batch: Batch, stage: 'fsync' | 'index', start: Ticks): void {
    for (let i = 0; i < batch.count; i++) if (batch.record(i).appendedAt !== UNTIMED) this.recorder.stage(stage, start);
  }

  /** Fails the records of the batches not answered yet. */
  rejectUnanswered(group: readonly Batch[], err: Error): void {
    for (const b of group) {
      if (b.answered) continue;
      b.answered = true;
      this.rejectBatch(b, err);
    }
  }

  /** Fails the batch's records. */
  private rejectBatch(batch: Batch, err: Error): void {
    for (let i = 0; i < batch.count; i++) {
      const r = batch.record(i);
      this.batches.arena.release(r);
      r.callback(err, r);
    }
  }

  /** Fails `records` (their places in the arena are free again if they were never written). */
  reject(records: readonly LogRecord[], err: Error): void {
    for (const r of records) {
      this.batches.arena.release(r);
      r.callback(err, r);
    }
  }
}
