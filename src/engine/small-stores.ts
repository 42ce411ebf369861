/**
 * The small store's fast path (Engine.putSmall, called by src/http/small-store.ts for raw bodies
 * up to 1 MiB on a node alone): the body is copied straight from the front end's buffer into its
 * place in the log's record arena before the call returns (SegmentLog.place); as the log's next
 * turn begins (its beforeBatch hook) the turn's small stores are hashed together, their 1 KiB
 * BLAKE3 chunks side by side in the hash kernels' lanes (hash-each.ts), then each is checked for
 * a copy under its id's lock and queued or answered and dropped. No promise or closure per store:
 * the lock is held without one (id-locks.ts), and a store whose id is busy takes the long way.
 */
import type { PutResult, StoreOrigin } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import { payloadTooLarge } from '../errors/errors.js';
import { HASH_EACH_MAX, type HashParts, hashEachInto } from '../hash/hash-each.js';
import type { Logger } from '../log/logger.js';
import { ticks } from '../metrics/clock.js';
import type { Recorder } from '../metrics/recorder.js';
import type { IdLocks } from './id-locks.js';
import type { LogRecord } from './log-record.js';
import type { SegmentLog } from './log.js';
import { RecordArena } from './record-arena.js';
import { RecordFlag } from './record.js';
import { SmallRecord, SmallRecords, type SmallStoreDone } from './small-record.js';
import { nowNs } from './wall-clock.js';

const EMPTY = Buffer.alloc(0);

export interface SmallStoreDeps {
  readonly log: Pick<SegmentLog, 'place' | 'enqueue' | 'discard'>;
  readonly locks: Pick<IdLocks, 'hold' | 'unhold'>;
  /** The id is stored here (staged or committed). */
  has(id: Buffer): boolean;
  /** The long way, for a store whose id is busy. */
  putInline(data: Buffer, policy: Policy, labels: Buffer, origin: StoreOrigin): Promise<PutResult>;
  readonly recorder: Recorder;
  readonly logger: Logger;
  readonly smallBlobMaxBytes: number;
}

export class SmallStores {
  /** Small stores placed in the log's arena since its last turn, waiting for hashPlaced. */
  private unhashed: (SmallRecord | undefined)[] = [];
  private unhashedCount = 0;
  /** The list hashPlaced works through while new stores go into the other (an answer's callback may store again). */
  private unhashedSpare: (SmallRecord | undefined)[] = [];
  private hashing = false;
  /** hashGroup's quads (hashEachInto) and the CRC-32Cs it gets back, reused. */
  private readonly hashParts: HashParts = [];
  private readonly hashCrcs = new Uint32Array(HASH_EACH_MAX);
  /** Small stores' records, reused (small-record.ts). */
  readonly records: SmallRecords;

  constructor(private readonly deps: SmallStoreDeps) {
    this.records = new SmallRecords(this.appended);
  }

  /**
   * `data` (at most smallBlobMaxBytes) may be a view of a buffer reused once this returns. Its
   * bytes are copied into their place in the log's arena before this returns. `done.stored` runs
   * once the record is durable, at the log's next turn for bytes already stored, or with the
   * error; when this throws (nothing placed: the log failed, no memory), it never runs.
   * `createdAtNs`: a replica's original time (now when undefined).
   */
  put(data: Uint8Array | ArrayBuffer, policy: Policy, labels: Buffer, done: SmallStoreDone, replicate: boolean, createdAtNs?: bigint): void {
    const size = data.byteLength;
    if (size > this.deps.smallBlobMaxBytes) return done.stored(payloadTooLarge('inline blob over smallBlobMaxBytes'), EMPTY, false);
    const r = this.records.take();
    r.policy = policy;
    r.flags = replicate ? RecordFlag.REPLICATE : 0;
    r.labels = labels;
    r.labelsLength = labels.length;
    r.dataLength = size;
    r.size = size;
    r.createdAtNs = createdAtNs ?? nowNs();
    r.appendedAt = ticks();
    r.done = done;
    try {
      this.deps.log.place(r, data);
    } catch (err) {
      this.records.unused(r);
      throw err;
    }
    this.unhashed[this.unhashedCount++] = r;
  }

  /**
   * The log's turn begins (its beforeBatch hook), or the engine closes: the small stores placed
   * since are hashed together, their bodies sharing the hash kernels' lanes (hash-each.ts), then
   * each goes on to the log or is answered. Each store's 'hash' stage is its group's hashing.
   * Stores placed meanwhile (from an answer's callback) wait for the next turn, which place()
   * schedules.
   */
  hashPlaced(): void {
    if (this.hashing || this.unhashedCount === 0) return;
    this.hashing = true;
    const list = this.unhashed;
    const n = this.unhashedCount;
    this.unhashed = this.unhashedSpare;
    this.unhashedSpare = list;
    this.unhashedCount = 0;
    try {
      for (let from = 0; from < n; from += HASH_EACH_MAX) this.hashGroup(list, from, Math.min(HASH_EACH_MAX, n - from));
    } finally {
      this.hashing = false;
    }
  }

  /** list[from, from + count): hashed in one call, then each admitted (or answered with the call's failure). */
  private hashGroup(list: (SmallRecord | undefined)[], from: number, count: number): void {
    const parts = this.hashParts;
    const hashStart = ticks();
    for (let i = 0; i < count; i++) {
      const r = list[from + i]!;
      parts[4 * i] = r.chunk!.buf;
      parts[4 * i + 1] = RecordArena.dataAt(r);
      parts[4 * i + 2] = r.dataLength;
      parts[4 * i + 3] = r.checksum;
    }
    let failure: Error | undefined;
    try {
      hashEachInto(parts, count, this.hashCrcs);
    } catch (err) {
      failure = err as Error;
    }
    // No references kept to arena chunks or records past this call.
    for (let i = 0; i < count; i++) {
      parts[4 * i] = 0;
      parts[4 * i + 3] = 0;
    }
    for (let i = 0; i < count; i++) {
      const r = list[from + i]!;
      list[from + i] = undefined;
      try {
        if (failure) {
          this.drop(r, failure, false);
          continue;
        }
        // Read from its slot into the record's field: as a returned number it would be a heap number.
        r.dataCrc = this.hashCrcs[i]!;
        this.deps.recorder.stage('hash', hashStart);
        this.admit(r);
      } catch (err) {
        // An answer's callback threw: the other stores of the group still go on.
        this.deps.logger.error({ err }, `a small store's answer failed: ${(err as Error).message}`);
      }
    }
  }

  /** A hashed small store goes on to the log under its id's lock, unless its bytes are here already. */
  private admit(r: SmallRecord): void {
    const { locks } = this.deps;
    const id = r.id;
    if (!locks.hold(id)) return this.putBusy(r);
    let held: boolean;
    try {
      held = this.deps.has(id);
    } catch (err) {
      locks.unhold(id);
      return this.drop(r, err as Error, false);
    }
    if (held) {
      locks.unhold(id);
      return this.drop(r, undefined, true);
    }
    this.deps.log.enqueue(r);
  }

  /**
   * A placed small store that goes no further: its place in the arena goes, its store is answered
   * (`existed`: its bytes were here already; or the error), its record goes back.
   */
  private drop(r: SmallRecord, err: Error | undefined, existed: boolean): void {
    this.deps.log.discard(r);
    // The answer reads the id before it returns: the record may go back after.
    r.done!.stored(err, err ? EMPTY : r.id, existed);
    this.records.unused(r);
  }

  /**
   * A small store whose id is busy (rare): the long way, putInline, with bytes (copied out of the
   * arena) and an id of its own; the record goes back. A method of its own: a closure in
   * admit() that captured `done` would make it allocate a context on every call.
   */
  private putBusy(r: SmallRecord): void {
    const at = RecordArena.dataAt(r);
    const data = Buffer.from(r.chunk!.buf.subarray(at, at + r.dataLength));
    const { policy, labels } = r;
    // The same store the long way: its replicate flag and time go with it.
    const origin: StoreOrigin = { replicate: (r.flags & RecordFlag.REPLICATE) !== 0, createdAtNs: r.createdAtNs };
    const done = r.done!;
    const id = Buffer.from(r.id);
    this.deps.log.discard(r);
    this.records.unused(r);
    this.deps.putInline(data, policy, labels, origin).then((p) => done.stored(undefined, p.id, !p.created), (err: Error) => done.stored(err, id, false));
  }

  /** A small store's record is durable (or failed): its lock goes, its store is answered. */
  private readonly appended = (err: Error | undefined, record: LogRecord): void => {
    const r = record as SmallRecord;
    this.deps.locks.unhold(r.id);
    r.done!.stored(err, r.id, r.existed);
    this.records.answer(r, err !== undefined);
  };
}
