/**
 * A small store's log record (Engine.putSmall), pooled: a store on the fast path allocates no
 * record, index entry, digest or id of its own. One object is all three: the log record, its
 * index entry while the overlay holds it (index/overlay.ts; `entry` is the record itself), and
 * the owner of its digest's and id's bytes.
 *
 * A record goes back to the pool only once both have happened:
 *   - its store was answered (its callback ran: nobody waits on it any more), and
 *   - its index transaction committed (the log's `committed` hook): the overlay no longer holds
 *     it, and the journal has its bytes, copied.
 * Until then nothing else refers to it: BlobIndex.get hands readers a copy of an overlay entry
 * (they may keep it across an await), never the entry itself. A record that failed is left to the
 * collector: after a failure nobody can say who still holds it.
 */
import type { Policy } from '../blob/policy.js';
import type { Ticks } from '../metrics/clock.js';
import { ID_BYTES } from '../hash/blake3.js';
import { type IndexEntry, Location, type LocationValue } from '../index/entry.js';
import type { ArenaChunk } from './record-arena.js';
import type { LogRecord } from './log-record.js';
import { RecordType, type RecordTypeValue } from './record.js';

/** Who waits for a small store (Engine.putSmall): called once, `existed` when the bytes were stored already. */
export interface SmallStoreDone {
  stored(err: Error | undefined, id: Buffer, existed: boolean): void;
}

const NO_LABELS = Buffer.alloc(0);

export class SmallRecord implements LogRecord, IndexEntry {
  // RecordHeader
  readonly type: RecordTypeValue = RecordType.PUT_INLINE;
  policy: Policy = 0;
  labelsLength = 0;
  dataLength = 0;
  readonly relocatedFromSegment = 0;
  readonly relocatedFromOffset = 0;
  size = 0;
  createdAtNs = 0n;
  /** BLAKE3-256 of the bytes, written in place (blake3Into); the id is its first 16 bytes, a view made once. */
  readonly checksum = Buffer.alloc(32);
  readonly id = this.checksum.subarray(0, ID_BYTES);
  lsn = 0;
  /** RecordFlag.REPLICATE when the cluster copies it to its owners (Engine.putSmall). */
  flags = 0;
  // LogRecord
  labels: Buffer = NO_LABELS;
  data: Buffer | undefined = undefined;
  segment = 0;
  offset = 0;
  length = 0;
  chunk: ArenaChunk | undefined = undefined;
  at = 0;
  /** The record is its own index entry. */
  readonly entry: IndexEntry = this;
  dataCrc: number | undefined = 0;
  existed = false;
  /** The appender found the id absent, under its lock. */
  readonly absent = true;
  appendedAt = 0 as Ticks;
  readonly maintenance = false;
  readonly callback: (err: Error | undefined, record: LogRecord) => void;
  // IndexEntry
  readonly location: LocationValue = Location.SEGMENT;
  // The pool's
  done: SmallStoreDone | undefined = undefined;
  /** Its store was answered without an error. */
  answered = false;
  /** Its index transaction committed. */
  committed = false;

  constructor(
    /** The pool it goes back to. */
    readonly pool: SmallRecords,
    callback: (err: Error | undefined, record: LogRecord) => void,
  ) {
    this.callback = callback;
  }
}

/** At most this many idle records are kept (enough for every store in flight at ~50k/s with 5 ms commits, several times over). */
const POOL_MAX = 8192;

export class SmallRecords {
  private readonly free: SmallRecord[] = [];

  constructor(private readonly callback: (err: Error | undefined, record: LogRecord) => void) {}

  /** A record whose checksum the caller writes next (and gives back with `unused` if it goes no further). */
  take(): SmallRecord {
    const r = this.free.pop() ?? new SmallRecord(this, this.callback);
    r.answered = false;
    r.committed = false;
    return r;
  }

  /** A record taken and never appended. */
  unused(r: SmallRecord): void {
    r.done = undefined;
    this.release(r);
  }

  /** Its store was answered (`failed`: with an error; the record is then never reused). */
  answer(r: SmallRecord, failed: boolean): void {
    r.done = undefined;
    if (failed) return;
    r.answered = true;
    if (r.committed) this.release(r);
  }

  /** Its index transaction committed (the log's hook). */
  commit(r: SmallRecord): void {
    r.committed = true;
    if (r.answered) this.release(r);
  }

  private release(r: SmallRecord): void {
    r.labels = NO_LABELS;
    if (this.free.length < POOL_MAX) this.free.push(r);
  }

  /** Idle records (tests). */
  get idle(): number {
    return this.free.length;
  }
}
