/**
 * What the segment log carries and whom it calls: a record waiting in the log (built by the
 * engine, completed by the log as it is placed, written and staged), and the hooks the log runs
 * as each record is staged, applied and committed.
 */
import { crc32c } from '../hash/crc32c.js';
import { type Ticks, ticks } from '../metrics/clock.js';
import type { IndexWriter } from '../index/overlay.js';
import type { IndexEntry } from '../index/entry.js';
import { isDeleteRecord, type RecordHeader, RecordType } from './record.js';
import type { ArenaChunk, ArenaRecord } from './record-arena.js';

/** LogRecord.appendedAt of a record whose stages are not timed (compaction's relocations). */
export const UNTIMED = -1 as Ticks;

/** A record waiting in the log; the engine builds it and is called back once it is durable. */
export interface LogRecord extends RecordHeader, ArenaRecord {
  labels: Buffer;
  /**
   * Inline bytes (PUT_INLINE) as the appender gives them; undefined for PUT_FILE and DELETE, and
   * once appended (they are copied into the record's place in the arena then).
   */
  data: Buffer | undefined;
  /** Set by the log: where the record landed. */
  segment: number;
  offset: number;
  /** Its length on disk (set by append). */
  length: number;
  /** Where it waits until written (record-arena.ts; set by append). */
  chunk: ArenaChunk | undefined;
  at: number;
  /** Its index entry, made once when it is staged and used again at its commit (apply.ts). */
  entry: IndexEntry | undefined;
  /** CRC-32C of a whole blob's inline bytes (PUT_INLINE), for its index entry; undefined otherwise. */
  dataCrc: number | undefined;
  /** Set by the engine's applier: the id already existed. */
  existed: boolean;
  /**
   * A plain put whose appender found the id absent while holding the id's lock (Engine.exclusive),
   * which it holds until the record is acknowledged: staging need not look the id up again.
   */
  absent: boolean;
  /** The clock at append (ticks), for the stage metrics; UNTIMED for compaction's records. */
  appendedAt: Ticks;
  /** A tombstone or a relocation: frees space, so it may use the disk's reserve. */
  maintenance: boolean;
  callback: (err: Error | undefined, record: LogRecord) => void;
}

/** What an appender gives the log; the log and the applier fill in the rest of the LogRecord. */
export type RecordInput = Omit<LogRecord, 'callback' | 'segment' | 'offset' | 'length' | 'existed' | 'absent' | 'lsn' | 'appendedAt' | 'maintenance' | 'chunk' | 'at' | 'entry' | 'dataCrc'>;

/** Appends a record; resolves once it is durable (engine.ts). */
export type AppendRecord = (record: RecordInput, timed?: boolean, absent?: boolean, dataCrc?: number) => Promise<LogRecord>;

/**
 * Completes `record` and appends it to `log`; resolves once it is durable. Stores are `timed`
 * (they report the log's stages); compaction's relocations are not. Tombstones and relocations
 * are maintenance: they may use the reserve. `absent`: a plain put whose id the caller found
 * absent under its lock (LogRecord.absent).
 */
export function appendTo(log: { append(record: LogRecord): void }, record: RecordInput, timed = true, absent = false, dataCrc?: number): Promise<LogRecord> {
  return new Promise((resolve, reject) => {
    const r = record as LogRecord;
    r.appendedAt = timed ? ticks() : UNTIMED;
    r.maintenance = isDeleteRecord(record.type) || record.relocatedFromSegment !== 0;
    r.segment = 0;
    r.offset = 0;
    r.length = 0;
    r.chunk = undefined;
    r.at = 0;
    r.lsn = 0;
    r.existed = false;
    r.absent = absent;
    r.entry = undefined;
    // A client's bytes are hashed here; a relocation's carry the CRC its source was checked against.
    r.dataCrc = record.type !== RecordType.PUT_INLINE || record.data === undefined ? undefined : (dataCrc ?? crc32c(record.data));
    r.callback = (err, done) => (err ? reject(err) : resolve(done));
    log.append(r);
  });
}

export interface LogHooks {
  /**
   * Runs in log order once the record's batch and every one before it are synced: stages the
   * record in the index overlay. Returns a promise the record's acknowledgement and commit wait
   * for, if there is something to do first (a deleted blob's file to unlink).
   */
  stage(record: LogRecord): Promise<void> | undefined;
  /** Runs in log order inside the index commit of the record's batch, writing through `index`. */
  apply(record: LogRecord, index: IndexWriter): void;
  /**
   * The record only adds a key that no other record of its commit touches (a plain put staged as
   * absent): a commit of such records alone queues its writes (BlobIndex.commit, addsOnly).
   */
  addsOnly(record: LogRecord): boolean;
  /** Runs for each record once its index transaction has committed (the overlay no longer holds it). */
  committed(record: LogRecord): void;
  /**
   * Runs as each of the log's turns begins, before it forms batches: records placed since the
   * last (place()) are queued now (enqueue()) or dropped (discard()).
   */
  beforeBatch?(): void;
}
