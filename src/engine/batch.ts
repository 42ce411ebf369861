/**
 * A batch of the log: the records written, synced, staged and committed together. Batches are
 * reused with their arrays (a batch per event-loop turn of stores made a few hundred bytes of
 * garbage: dozens per store), so those made are as many as were ever under way at once.
 */
import type { Ticks } from '../metrics/clock.js';
import type { LogRecord } from './log-record.js';
import type { RecordArena } from './record-arena.js';
import { MAX_PAD_BYTES, padLength, writePad } from './record.js';
import type { OpenSegment } from './segment-store.js';

/**
 * `records` holds `count` records (the array keeps its capacity: setting its length to 0 would
 * drop it), `parts` the triples the batch writer takes.
 */
export class Batch {
  segment: OpenSegment | undefined = undefined;
  readonly records: (LogRecord | undefined)[] = [];
  count = 0;
  /** The PAD record that ends the batch on a block boundary (a pooled MAX_PAD_BYTES buffer, its first `padLength` bytes), or undefined when it ends on one. */
  pad: Buffer | undefined = undefined;
  padLength = 0;
  endOffset = 0;
  nextLsn = 0;
  state: 'writing' | 'synced' | 'failed' = 'writing';
  /** Its records are in the index overlay. */
  staged = false;
  /** Its records' callbacks have run (or are due once `waits` settle). */
  answered = false;
  /** Its records' callbacks have run, and its index transaction has committed: reused once both hold. */
  acked = false;
  committed = false;
  /** What the batch's acknowledgement and commit wait for (file unlinks of deletes). */
  readonly waits: Promise<void>[] = [];
  /** The clock (ticks) when the write ended and when the fdatasync ended (stage metrics). */
  writtenAt = 0 as Ticks;
  syncedAt = 0 as Ticks;
  /** [buffer, offset, length] triples of its bytes (BatchWriter.write). */
  readonly parts: (Buffer | number)[] = [];

  constructor(
    /** Its number in the pool's `all`: the batch writer's callback names it by this. */
    readonly token: number,
  ) {}

  record(i: number): LogRecord {
    return this.records[i]!;
  }

  /** Its first `count` records are in place: it goes on in `segment`, up to `endOffset`, as a new batch. */
  begin(segment: OpenSegment, count: number, endOffset: number, nextLsn: number): void {
    this.count = count;
    this.segment = segment;
    this.endOffset = endOffset;
    this.nextLsn = nextLsn;
    this.state = 'writing';
    this.staged = false;
    this.answered = false;
    this.acked = false;
    this.committed = false;
    this.writtenAt = 0 as Ticks;
    this.syncedAt = 0 as Ticks;
  }
}

/** Every batch made and those free for reuse, with the PAD records' buffers. */
export class BatchPool {
  /** Every batch made, by token (batches are reused: this holds them all). */
  readonly all: Batch[] = [];
  private readonly free: Batch[] = [];
  /** PAD records' buffers not in a batch being written (a PAD is a header and zeros: only the header changes). */
  private readonly pads: Buffer[] = [];

  constructor(
    /** Where the records wait until written. */
    readonly arena: RecordArena,
  ) {}

  take(): Batch {
    const reused = this.free.pop();
    if (reused) return reused;
    const batch = new Batch(this.all.length);
    this.all.push(batch);
    return batch;
  }

  /** A batch taken that got no records. */
  untaken(batch: Batch): void {
    this.free.push(batch);
  }

  /**
   * A batch is done with (acknowledged and committed, in either order): it and its arrays serve
   * another. Every batch goes back (a failed log keeps its last ones).
   */
  recycle(batch: Batch): void {
    for (let i = 0; i < batch.count; i++) batch.records[i] = undefined;
    batch.count = 0;
    batch.segment = undefined;
    if (batch.waits.length > 0) batch.waits.length = 0;
    this.free.push(batch);
  }

  /**
   * The PAD record (with sequence number `lsn`) that takes a batch ending at `end` to a block
   * boundary, if it needs one; returns the next sequence number.
   */
  pad(batch: Batch, end: number, lsn: number): number {
    const length = padLength(end);
    batch.padLength = length;
    if (length === 0) return lsn;
    const buf = this.pads.pop() ?? Buffer.alloc(MAX_PAD_BYTES);
    writePad(buf, 0, length, lsn);
    batch.pad = buf;
    return lsn + 1;
  }

  /** The batch is written (or failed): its records' places in the arena and its PAD are free again. */
  release(batch: Batch): void {
    for (let i = 0; i < batch.count; i++) this.arena.release(batch.record(i));
    if (batch.pad) this.pads.push(batch.pad);
    batch.pad = undefined;
    batch.padLength = 0;
  }
}
