/**
 * The segment log with group commit. Records appended during one event-loop turn form a batch:
 * one writev at the segment's tail (on the main thread) and one fdatasync (in the thread pool).
 * Batches are written and synced up to `pipelineDepth` at a time. Once a batch and every one
 * before it have synced, its records are staged in the index overlay (reads see them at once,
 * index/overlay.ts) and, with durableAck=log, acknowledged: the fsynced record is what a crash
 * replays. One committer applies every staged batch, in log order, in a single LMDB transaction
 * together with the checkpoint (the log position it covers), then drops them from the overlay: an
 * index transaction costs ~0.66 ms here whatever its size (it waits for the previous one's sync),
 * so one per batch would cap the rate, while one per group of staged batches lets it grow with the
 * load; with durableAck=log it starts at most every `commitIntervalMs` (an LMDB transaction's fixed
 * cost grows with the free-page list of a grown index, docs/adr/0012-hot-path.md). With durableAck=index
 * records are acknowledged once their transaction is flushed instead.
 * At most `indexLagBatches` batches wait for their commit; beyond it records wait in the queue.
 *
 *   append() -> queue -> batch: writev -> fdatasync ─┐                      (durableAck=log)
 *                        batch: writev -> fdatasync ─┼─> in log order: stage in overlay -> callbacks
 *                        ...                          ┘        └─> committer: [txn: records + checkpoint] -> drop from overlay
 *                                                                                        -> flush -> callbacks (durableAck=index)
 */
import { fdatasync } from 'node:fs';
import { toBlobstoreError } from '../errors/errors.js';
import { assert } from '../util/assert.js';
import { NO_RECORDER, type Recorder } from '../metrics/recorder.js';
import { type Ticks, ticks } from '../metrics/clock.js';
import type { BlobIndex, Checkpoint, IndexWriter } from '../index/blob-index.js';
import type { IndexEntry } from '../index/entry.js';
import { LOG_BLOCK_BYTES, MAX_PAD_BYTES, padLength, type RecordHeader, recordLength, sealHeader, writePad } from './record.js';
import { type OpenSegment, SegmentStore } from './segment-store.js';
import { batchWriter, punchHole, writeError, writevFullySync } from './fs-util.js';
import { RecordQueue } from './record-queue.js';
import type { DiskSpace } from './disk-space.js';
import { type ArenaChunk, type ArenaRecord, RecordArena } from './record-arena.js';

/**
 * Test hook: every index commit is held back this long (the tests kill a node whose acknowledged
 * records are in the overlay only). Never set in production.
 */
const TEST_COMMIT_DELAY_MS = Number(process.env.BLOBSTORE_TEST_INDEX_COMMIT_DELAY_MS ?? 0);

/** Allocation steps are whole multiples of this (file systems allocate in pages or blocks). */
const ALLOC_ALIGN_BYTES = 64 * 1024;
const alignUp = (n: number, to: number): number => Math.ceil(n / to) * to;

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

/**
 * Records written, synced, staged and committed together. Batches are reused with their arrays
 * (a batch per event-loop turn of stores made a few hundred bytes of garbage: dozens per store):
 * `records` holds `count` records (the array keeps its capacity: setting its length to 0 would
 * drop it), `parts` the triples the batch writer takes.
 */
class Batch {
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
    /** Its number in the log's `batches`: the batch writer's callback names it by this. */
    readonly token: number,
  ) {}

  record(i: number): LogRecord {
    return this.records[i]!;
  }
}

export interface LogOptions {
  groupCommitMaxBytes: number;
  /** Bytes of an arena chunk, where appended records wait to be written (at least the largest record). */
  arenaChunkBytes: number;
  /** Batches written and synced at once (setting logPipelineDepth). */
  pipelineDepth: number;
  /** Batches staged or in flight whose index transaction has not committed, at most. */
  indexLagBatches: number;
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
   * Per record: `write` from append to the end of its batch's writev (queueing included),
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
  /** settled() callers, woken after each commit. */
  private commitWaiters: (() => void)[] = [];
  /** Batches being written or synced. */
  private writing = 0;
  private committing = false;
  /** performance.now() when the last index commit started (commitIntervalMs). */
  private commitStartMs = -Infinity;
  private scheduled = false;
  private rolling = false;
  /** The active segment has real blocks up to here (fallocate); records go in only below it. */
  private allocatedEnd: number;
  /** An allocation step is under way (one at a time; records that fit below allocatedEnd go on meanwhile). */
  private allocating = false;
  /** The last step taken ahead of need failed: the next is taken only when records need it. */
  private aheadRefused = false;
  /** seal() callers, resolved once the checkpoint names the segment after the sealed one. */
  private sealWaiters: (() => void)[] = [];
  private failure: Error | undefined;
  /** Write handles of sealed segments, closed once no uncommitted batch uses them. */
  private readonly sealed: OpenSegment[] = [];
  private readonly recorder: Recorder;
  private readonly arena: RecordArena;
  /** PAD records' buffers not in a batch being written (a PAD is a header and zeros: only the header changes). */
  private readonly pads: Buffer[] = [];
  /** The addon's one-job write + fdatasync, for segments with an O_DIRECT descriptor; it answers batchWritten. */
  private readonly writeBatch = batchWriter((token, errno) => this.batchWritten(token, errno), () => this.pump());
  /** Every batch made, by token (batches are reused: this holds them all). */
  private readonly batches: Batch[] = [];
  /** Batches free for reuse. */
  private readonly freeBatches: Batch[] = [];
  /**
   * Staged batches written past the page cache and not read back into it yet: [readBackStart,
   * readBackEnd) of readBackSegment. Each read-back is a device request (a VM exit to submit, a
   * read, page-cache pages to insert): one per ~1 MiB costs the pool threads what one per batch did
   * for a few dozen KiB. `readBackDue`: the next batch written takes it along, or pump() sends it alone.
   */
  private readBackSegment: OpenSegment | undefined = undefined;
  private readBackStart = 0;
  private readBackEnd = 0;
  private readBackDue = false;
  /** The records of the commit under way (one at a time: reused). */
  private readonly commitRecords: (LogRecord | undefined)[] = [];
  private commitCount = 0;

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
    this.arena = new RecordArena(options.arenaChunkBytes);
    // What lies past the tail at start is unknown (recovery gave it back): allocate from the tail.
    this.allocatedEnd = offset;
    // A tail off a block boundary (a torn batch cut back, or a log of format 3, unpadded): the
    // block holds records a write must not touch again, so the log goes on in a new segment.
    if (offset % LOG_BLOCK_BYTES !== 0) this.rollOver();
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
   * schedules. The small stores' path: their bodies are hashed together then (Engine.hashSmall).
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
    if (this.writeBatch !== null) this.writeBatch.scheduleTurn();
    else setImmediate(this.pump);
  }

  private readonly pump = (): void => {
    // Cleared first: a record placed from the hook (an answer's callback storing again) schedules the next turn.
    this.scheduled = false;
    this.hooks.beforeBatch?.();
    if (this.sealWaiters.length > 0 && !this.rolling && !this.allocating && !this.failure) {
      if (this.offset > 0) this.rollOver();
      else void this.commitCheckpoint();
    }
    while (
      this.writing < this.options.pipelineDepth &&
      this.uncommitted.length < this.options.indexLagBatches &&
      this.queue.length > 0 &&
      !this.rolling &&
      !this.failure
    ) {
      const batch = this.takeBatch();
      if (!batch) break;
      this.write(batch);
    }
    if (this.readBackDue) this.readBackNow();
    this.allocateAhead();
  };

  /** Takes queued records that fit in the active segment, assigning offsets and sequence numbers. */
  private takeBatch(): Batch | undefined {
    const batch = this.freeBatches.pop() ?? this.newBatch();
    let bytes = 0;
    let taken = 0;
    for (; taken < this.queue.length; taken++) {
      const r = this.queue.at(taken);
      const length = r.length;
      // Room for the record and the longest PAD after it, so any batch can end on a block boundary.
      if (this.offset + length + MAX_PAD_BYTES > this.allocatedEnd) break;
      if (taken > 0 && bytes + length > this.options.groupCommitMaxBytes) break;
      r.segment = this.active.id;
      r.offset = this.offset;
      r.length = length;
      r.lsn = this.nextLsn++;
      sealHeader(r.chunk!.buf, r.at, r);
      this.offset += length;
      bytes += length;
      batch.records[taken] = r;
    }
    this.queue.drop(taken);
    if (taken === 0) {
      this.freeBatches.push(batch);
      // A step under way: the records wait for it (its end pumps again).
      if (this.allocating) return undefined;
      const head = this.queue.at(0);
      const length = head.length + MAX_PAD_BYTES;
      if (this.offset + length > this.active.sizeBytes) this.rollOver();
      else this.extend(head, length);
      return undefined;
    }
    batch.count = taken;
    batch.segment = this.active;
    this.padAt(batch, this.offset);
    this.offset += batch.padLength;
    batch.endOffset = this.offset;
    batch.nextLsn = this.nextLsn;
    batch.state = 'writing';
    batch.staged = false;
    batch.answered = false;
    batch.acked = false;
    batch.committed = false;
    batch.writtenAt = 0 as Ticks;
    batch.syncedAt = 0 as Ticks;
    this.uncommitted.push(batch);
    return batch;
  }

  private newBatch(): Batch {
    const batch = new Batch(this.batches.length);
    this.batches.push(batch);
    return batch;
  }

  /**
   * A batch is done with (acknowledged and committed, in either order): it and its arrays serve
   * another. Every batch goes back (a failed log keeps its last ones), so the batches made are
   * as many as were ever under way at once.
   */
  private recycle(batch: Batch): void {
    for (let i = 0; i < batch.count; i++) batch.records[i] = undefined;
    batch.count = 0;
    batch.segment = undefined;
    if (batch.waits.length > 0) batch.waits.length = 0;
    this.freeBatches.push(batch);
  }

  /** The PAD record (with the next sequence number) that takes a batch ending at `end` to a block boundary, if it needs one. */
  private padAt(batch: Batch, end: number): void {
    const length = padLength(end);
    batch.padLength = length;
    if (length === 0) return;
    const buf = this.pads.pop() ?? Buffer.alloc(MAX_PAD_BYTES);
    writePad(buf, 0, length, this.nextLsn++);
    batch.pad = buf;
  }

  /** The batch's bytes are written: its records' 'write' stage ends now. */
  private wrote(batch: Batch): void {
    for (let i = 0; i < batch.count; i++) {
      const r = batch.record(i);
      if (r.appendedAt !== UNTIMED) this.recorder.stage('write', r.appendedAt);
    }
    batch.writtenAt = ticks();
  }

  /** The batch is written (or failed): its records' places in the arena and its PAD are free again. */
  private release(batch: Batch): void {
    for (let i = 0; i < batch.count; i++) this.arena.release(batch.record(i));
    if (batch.pad) this.pads.push(batch.pad);
    batch.pad = undefined;
    batch.padLength = 0;
  }

  private write(batch: Batch): void {
    this.writing++;
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
    if (direct !== undefined && this.writeBatch !== null) {
      // Past the page cache (logWrites=direct): the write and the fdatasync in one thread-pool job,
      // answered by batchWritten. A new page-cache page costs a fault on its first touch where the
      // host takes freed memory back (a VM); a log that only grows touches new pages all the time
      // (docs/adr/0012-hot-path.md). 'write' then times the job's write and sync together; 'fsync' the hop back.
      // A read-back due goes along: the job reads it back after its own write and sync (no hop of its own).
      const due = this.readBackDue;
      const errno = this.writeBatch.write(
        batch.token, segment.fd, parts, triples, at, direct.fd,
        due ? this.readBackSegment!.fd : 0, due ? this.readBackStart : 0, due ? this.readBackEnd - this.readBackStart : 0,
      );
      if (errno !== 0) return this.writeRefused(batch, errno);
      if (due) this.readBackTaken();
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
    this.release(batch);
    if (error) return this.batchDone(batch, error);
    this.wrote(batch);
    fdatasync(segment.fd, (err) => this.batchDone(batch, err));
  }

  /** The batch writer's answer: the batch `token` is written and synced, or failed with `errno`. */
  private batchWritten(token: number, errno: number): void {
    const batch = this.batches[token]!;
    const err = writeError(errno);
    this.release(batch);
    if (!err) this.wrote(batch);
    this.batchDone(batch, err);
  }

  private batchDone(batch: Batch, err: Error | null): void {
    this.writing--;
    if (err) {
      // The tail is unknown now: the log stops taking records (the backend reports unhealthy);
      // recovery at the next start cuts it back to the last whole record.
      batch.state = 'failed';
      this.failure ??= err;
      this.reject(this.queue.takeAll(), err);
    } else {
      batch.state = 'synced';
      this.timeStage(batch, 'fsync', batch.writtenAt);
      batch.syncedAt = ticks();
    }
    this.stageSynced();
    this.pump();
    // An async function's call is a promise even when it returns at once: only when it would run.
    if (!this.committing) void this.commitSynced();
  }

  /**
   * Takes the next allocation step while less than half a step is left ahead of the tail, so
   * records seldom wait for one (with logSpace=zeroed a step is written with zeros too: ~2 ms per
   * 4 MiB here). A whole step or nothing: when the disk cannot give it, records ask again once
   * they need the space (extend), and are refused then if it is not there.
   */
  private allocateAhead(): void {
    if (this.allocating || this.rolling || this.failure || this.aheadRefused) return;
    const room = this.active.sizeBytes - this.allocatedEnd;
    if (room <= 0 || this.allocatedEnd - this.offset >= this.options.allocBytes / 2) return;
    const bytes = Math.min(room, this.options.allocBytes);
    this.allocateStep(bytes, bytes, false, this.refusedAhead);
  }

  /** A bound function, not an arrow in allocateAhead: a closure there makes its context on every call, for every pump. */
  private readonly refusedAhead = (): void => {
    this.aheadRefused = true;
  };

  /**
   * Allocates segment space for `head` (and a step beyond it), then takes records again. A store
   * at the head may not take the reserve: when the disk cannot give it, every store waiting is
   * refused (507) and the maintenance records behind them get their turn.
   */
  private extend(head: LogRecord, length: number): void {
    const room = this.active.sizeBytes - this.allocatedEnd;
    const minBytes = Math.min(room, alignUp(this.offset + length - this.allocatedEnd, ALLOC_ALIGN_BYTES));
    const wantBytes = Math.max(minBytes, Math.min(room, this.options.allocBytes));
    this.allocateStep(minBytes, wantBytes, head.maintenance, (err) => this.refuse(err, !head.maintenance));
  }

  /** Gives the active segment real blocks from allocatedEnd (SegmentStore.allocateTail), then pumps. */
  private allocateStep(minBytes: number, wantBytes: number, maintenance: boolean, failed: (err: unknown) => void): void {
    this.allocating = true;
    const segment = this.active;
    const from = this.allocatedEnd;
    this.store.allocateTail(segment, from, minBytes, wantBytes, maintenance, this.options.space).then(
      (got) => {
        this.aheadRefused = false;
        if (this.active === segment) this.allocatedEnd = from + got;
      },
      failed,
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
      this.reject(this.queue.takeAll(), this.failure);
      return;
    }
    this.reject(keepMaintenance ? this.queue.keepOnly((r) => r.maintenance) : this.queue.takeAll(), error);
  }

  /** Records `stage` from `start` (ticks) until now for each timed record of the batch. */
  private timeStage(batch: Batch, stage: 'fsync' | 'index', start: Ticks): void {
    for (let i = 0; i < batch.count; i++) if (batch.record(i).appendedAt !== UNTIMED) this.recorder.stage(stage, start);
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
      this.gatherReadBack(batch);
      if (!this.options.ackAfterIndexFlush) this.answer(batch);
    }
    // Nothing in flight: no batch may come soon to take the read-back along (pump sends it alone).
    if (this.writing === 0 && this.readBackEnd > this.readBackStart) this.readBackDue = true;
  }

  /**
   * Adds a staged batch's blocks to the read-back range (direct writes only: a buffered write left
   * them in the page cache). A batch of a sealed segment is read back at once: its descriptor is
   * closed once its batches are committed, after the read-back's job started (the thread pool
   * starts jobs in order), never before.
   */
  private gatherReadBack(batch: Batch): void {
    const limit = this.options.readBackBytes ?? 0;
    const segment = batch.segment!;
    if (limit <= 0 || segment.direct === undefined || this.writeBatch === null) return;
    const start = batch.record(0).offset;
    if (segment !== this.readBackSegment || start !== this.readBackEnd) {
      this.readBackNow();
      this.readBackSegment = segment;
      this.readBackStart = start;
    }
    this.readBackEnd = batch.endOffset;
    if (this.readBackEnd - this.readBackStart >= limit || segment !== this.active) this.readBackDue = true;
  }

  /** Sends the read-back range, if any, in a thread-pool job of its own. */
  private readBackNow(): void {
    if (this.readBackEnd > this.readBackStart && this.writeBatch !== null) {
      this.writeBatch.readBack(this.readBackSegment!.fd, this.readBackStart, this.readBackEnd - this.readBackStart);
    }
    this.readBackTaken();
  }

  private readBackTaken(): void {
    this.readBackSegment = undefined;
    this.readBackStart = 0;
    this.readBackEnd = 0;
    this.readBackDue = false;
  }

  /** Runs the batch's callbacks (once what it waits for is done). */
  private answer(batch: Batch): void {
    batch.answered = true;
    if (batch.waits.length === 0) this.ack(batch);
    else this.ackAfterWaits(batch);
  }

  /** A method of its own: its closures would make answer() allocate a context on every call. */
  private ackAfterWaits(batch: Batch): void {
    Promise.all(batch.waits).then(() => this.ack(batch), (err: Error) => {
      this.failure ??= err;
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
    if (batch.committed) this.recycle(batch);
  }

  /**
   * The committer: applies every staged batch at the head of the log in one index transaction,
   * and repeats while more have been staged meanwhile. Only one runs at a time. After a failure it
   * answers the batches left with the error.
   */
  private async commitSynced(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    try {
      while (this.headDone()) {
        // Acknowledged already (durableAck=log): the commit may wait, and take the batches staged meanwhile.
        const wait = this.options.ackAfterIndexFlush ? 0 : this.commitStartMs + (this.options.commitIntervalMs ?? 0) - performance.now();
        if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
        this.commitStartMs = performance.now();
        const group: Batch[] = [];
        while (this.headDone()) {
          const b = this.uncommitted.shift()!;
          if (b.staged) this.stagedCount--;
          group.push(b);
        }
        await this.commitGroup(group);
        for (const wake of this.commitWaiters.splice(0)) wake();
        this.closeSealed();
        this.pump();
      }
    } finally {
      this.committing = false;
      for (const wake of this.commitWaiters.splice(0)) wake();
    }
  }

  /** The oldest uncommitted batch is staged (or, once the log failed, done writing). */
  private headDone(): boolean {
    const head = this.uncommitted[0];
    return head !== undefined && (head.staged || (this.failure !== undefined && head.state !== 'writing'));
  }

  private async commitGroup(group: readonly Batch[]): Promise<void> {
    if (this.failure) return this.rejectUnanswered(group, this.failure);
    // The group's records, in log order, in the reused array (commits run one at a time).
    const records = this.commitRecords;
    let n = 0;
    let addsOnly = true;
    for (const b of group) {
      for (let i = 0; i < b.count; i++) {
        const r = b.record(i);
        records[n++] = r;
        if (addsOnly && !this.hooks.addsOnly(r)) addsOnly = false;
      }
    }
    this.commitCount = n;
    const last = group[group.length - 1]!;
    const checkpoint: Checkpoint = { segment: last.segment!.id, offset: last.endOffset, nextLsn: last.nextLsn };
    try {
      for (const b of group) if (b.waits.length > 0) await Promise.all(b.waits);
      if (TEST_COMMIT_DELAY_MS > 0) await new Promise((resolve) => setTimeout(resolve, TEST_COMMIT_DELAY_MS));
      // An index commit needs free pages: on a disk someone else filled, the ballast goes first.
      await this.options.space.makeRoom();
      await this.index.commit(checkpoint, this.applyCommit, addsOnly);
    } catch (err) {
      this.failure ??= err as Error;
      return this.rejectUnanswered(group, err as Error);
    } finally {
      for (let i = 0; i < n; i++) records[i] = undefined;
    }
    for (const b of group) {
      for (let i = 0; i < b.count; i++) this.hooks.committed(b.record(i));
      b.committed = true;
      if (b.acked) this.recycle(b);
    }
    // durableAck=log: answered when staged; the fsynced records are replayed past the last flushed checkpoint.
    if (!this.options.ackAfterIndexFlush) return;
    this.index.flushed().then(
      () => {
        for (const b of group) this.answer(b);
      },
      (err: Error) => {
        this.failure ??= err;
        this.rejectUnanswered(group, err);
      },
    );
  }

  /** The commit's writes: each record of the group applied in log order (one function for every commit). */
  private readonly applyCommit = (w: IndexWriter): void => {
    const records = this.commitRecords;
    for (let i = 0; i < this.commitCount; i++) this.hooks.apply(records[i]!, w);
  };

  private rejectUnanswered(group: readonly Batch[], err: Error): void {
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
      this.arena.release(r);
      r.callback(err, r);
    }
  }

  /**
   * Resolves once every record taken into a batch before the call is committed to the index and
   * flushed (or the log failed): what compaction waits for before it removes a segment.
   */
  async settled(): Promise<void> {
    const target = this.nextLsn;
    // A group the committer has taken out of `uncommitted` is not committed until its
    // transaction is: it may still wait for a file's unlink or the ballast (commitGroup).
    while (this.index.committedCheckpoint.nextLsn < target && (this.uncommitted.length > 0 || this.committing) && !this.failure) {
      await new Promise<void>((resolve) => this.commitWaiters.push(resolve));
    }
    await this.index.flushed();
  }

  /** Fails `records` (their places in the arena are free again if they were never written). */
  private reject(records: readonly LogRecord[], err: Error): void {
    for (const r of records) {
      this.arena.release(r);
      r.callback(err, r);
    }
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
      .then(async (next) => {
        await this.store.openDirect(next);
        return next;
      })
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
      if (!this.scheduled) this.scheduleTurn();
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
      void SegmentStore.close(segment);
    }
  }

  /** Resolves when every appended record has been committed (or failed). */
  async drain(): Promise<void> {
    // An allocation step under way writes through the segment's descriptors: close() must wait for it.
    while (this.queue.length > 0 || this.uncommitted.length > 0 || this.writing > 0 || this.rolling || this.scheduled || this.committing || this.allocating) {
      if (this.failure && this.writing === 0 && !this.committing && !this.allocating) {
        this.reject(this.queue.takeAll(), this.failure);
        this.rejectUnanswered(this.uncommitted.splice(0), this.failure);
        this.stagedCount = 0;
        for (const wake of this.commitWaiters.splice(0)) wake();
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
}
