/**
 * The single-node storage engine: small blobs as records in the segment log (group commit),
 * large blobs in their own files, one LMDB index over both. Operations on one id run one after
 * another (a put racing a delete of the same bytes sees a consistent order); different ids never
 * wait for each other.
 */
import { promises as fsp } from 'node:fs';
import { type BlobMeta, type ListResult, LOCAL_STORE, type PutResult, type StoreOrigin } from '../blob/meta.js';
import { join } from 'node:path';
import { largestRecordBytes, type NodeConfig } from '../config/settings.js';
import { BlobstoreError, payloadTooLarge } from '../errors/errors.js';
import { blake3 } from '../hash/blake3.js';
import { HASH_EACH_MAX, type HashParts, hashEachInto } from '../hash/hash-each.js';
import { crc32c } from '../hash/crc32c.js';
import { RecordArena } from './record-arena.js';
import { BlobIndex } from '../index/blob-index.js';
import { applyRecord } from './apply.js';
import { idOfDigest } from '../blob/id.js';
import { blobFilePath, BlobFileWriter, type ChunkCv, type ChunkDigester, type ChunkHashers, type FileSink } from './blob-file.js';
import { chunkCvOf } from '../hash/blake3-tree.js';
import { type ByteRange, type ChunkSink, readBlob } from './blob-reader.js';
import type { EcRepairQueue, IndexWriter, ReplicationQueue } from '../index/blob-index.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { NO_RECORDER, type Recorder } from '../metrics/recorder.js';
import { ticks, TICKS_MASK } from '../metrics/clock.js';
import { WorkerPool } from '../pool/pool.js';
import { BufferPool } from '../pool/buffer-pool.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { Compactor } from './compactor.js';
import { CursorCodec } from '../blob/cursor.js';
import { DiskSpace } from './disk-space.js';
import { type DataDir, openDataDir, removeStrayTemps } from './data-dir.js';
import { fsyncDir, mkdirDurable } from './fs-util.js';
import { SegmentLog } from './log.js';
import { type LogRecord, type RecordInput, UNTIMED } from './log-record.js';
import type { Policy } from '../blob/policy.js';
import { HEADER_BYTES, isDeleteRecord, isFileRecord, RecordFlag, RecordType } from './record.js';
import { appendShardDeletes, commitShardFile, deleteShards, putShardInline, shardMetaOf } from './shards.js';
import { type ShardMeta, type ShardWrite } from '../blob/shard.js';
import { shardFilePath } from './shard-info.js';
import { fileIntact, unlinkFileOf, unlinkReplayedDeletes } from './record-files.js';
import { recoverLog } from './recovery.js';
import { SegmentReader } from './segment-reader.js';
import { SegmentStore } from './segment-store.js';
import { type ScannedRecord, scanBufferBytes } from './scan.js';
import { type CachedRecord, VerifiedCache } from './verified-cache.js';
import { entryDataCrc, type IndexEntry, Location } from '../index/entry.js';
import { IdLocks } from './id-locks.js';
import { SmallRecord, SmallRecords, type SmallStoreDone } from './small-record.js';
import { bytesOf } from '../util/copy-bytes.js';

export type { SmallStoreDone } from './small-record.js';

export interface EngineStats {
  capacityBytes: number;
  freeBytes: number;
  usedBytes: number;
  storedBytes: number;
  blobCount: number;
  /** Shards of erasure-coded blobs held (a column holds one per stripe). */
  shardCount: number;
  corruptionsDetected: number;
}

/** Queued log records wait in arena chunks of this size (record-arena.ts), or of the largest record's if larger. */
const ARENA_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Now in ns (ms resolution): the wall clock is read, and a BigInt made, once per millisecond of
 * the monotonic clock (ticks: a small integer), not per record (Date.now() answers a heap number).
 */
let nowTicksCached = 0;
let nowNsCached = -1n;
const nowNs = (): bigint => {
  const t = ticks();
  if (nowNsCached < 0n || ((t - nowTicksCached) & TICKS_MASK) >= 1000) {
    nowTicksCached = t;
    nowNsCached = BigInt(Date.now()) * 1_000_000n;
  }
  return nowNsCached;
};

/** Whether an inline blob's bytes are the ones its index entry names: its CRC-32C where the entry has one, else BLAKE3. */
function inlineIntact(data: Uint8Array, dataCrc: number | undefined, checksum: Buffer): boolean {
  return dataCrc !== undefined ? crc32c(data) === dataCrc : blake3(data).equals(checksum);
}

/** Stages a record in the index overlay (one function for every record: no closure per record). */
const stageRecord = (w: IndexWriter, r: LogRecord): void => {
  r.existed = applyRecord(w, r, r.absent ? false : undefined);
};

export class Engine implements ChunkHashers {
  readonly pool: BufferPool;
  /** Large uploads whose temp file may still exist. */
  private readonly uploads = new Set<BlobFileWriter>();
  readonly cursors: CursorCodec;
  /** Operations on one id run one after another (id-locks.ts). */
  private readonly locks = new IdLocks();
  corruptionsDetected = 0;
  private compactor: Compactor | undefined;
  private closed = false;
  private readonly workers: WorkerPool | undefined;
  /** BLAKE3 of a 1 MiB chunk of a format-1 blob file: inline, or in the worker pool (setting chunkDigests). */
  readonly digestChunk: ChunkDigester;
  /** A chunk's chaining value in its blob's tree (blob files now): inline, or in the worker pool. */
  readonly chunkCv: ChunkCv;

  private constructor(
    readonly config: NodeConfig,
    readonly dataDir: DataDir,
    readonly index: BlobIndex,
    readonly store: SegmentStore,
    readonly reader: SegmentReader,
    private readonly segmentLog: SegmentLog,
    /** Stage timings (hash, write, fsync, index, read, verify) go here. */
    readonly recorder: Recorder,
    /** Free space and the reserve kept for deletes, compaction and restarts. */
    readonly space: DiskSpace,
    readonly log: Logger,
    /** Small blobs already read and verified (readCacheBytes); the log's staging drops deleted ones. */
    readonly cache: VerifiedCache,
  ) {
    this.pool = new BufferPool(Math.floor(config.chunkPoolBytes / CHUNK_BYTES));
    this.cursors = new CursorCodec(dataDir.secret, dataDir.nodeId);
    if (config.chunkDigests === 'pool') {
      const workers = new WorkerPool(config.poolThreads, config.poolQueueMax);
      this.workers = workers;
      this.digestChunk = (chunk) => workers.digest(chunk);
      this.chunkCv = (chunk, offset, withRoot) => workers.chunkCv(chunk, offset, withRoot);
    } else {
      this.digestChunk = (chunk) => Promise.resolve(blake3(chunk));
      this.chunkCv = (chunk, offset, withRoot) => Promise.resolve(chunkCvOf(chunk, offset, withRoot));
    }
  }

  static async open(config: NodeConfig, recorder: Recorder = NO_RECORDER, log: Logger = silentLogger()): Promise<Engine> {
    const dataDir = await openDataDir(config.dataDir, config.nodeId);
    try {
      await removeStrayTemps(dataDir.path);
      const space = await DiskSpace.open(dataDir.path, config.diskReserveBytes, log);
      const index = new BlobIndex(join(dataDir.path, 'index'), {
        mergeRecords: config.indexMergeRecords,
        onMergeError: (err) => log.error({ err }, `index journal merge failed (its records stay in the journal; the next commit tries again): ${err.message}`),
      });
      const store = new SegmentStore(dataDir.path, config.segmentSizeBytes, config.logWrites === 'direct', config.logSpace === 'zeroed');
      const largestRecord = largestRecordBytes(config);
      const batchBytes = Math.max(config.groupCommitMaxBytes, largestRecord);
      const recovered = await recoverLog(store, index, {
        scanBufferBytes: scanBufferBytes(largestRecord),
        tornSpanBytes: config.logPipelineDepth * batchBytes + largestRecord,
        fileIntact: (record) => fileIntact(dataDir.path, record),
      });
      const reader = new SegmentReader(store, config.syncReadMaxBytes);
      const cache = new VerifiedCache(config.readCacheBytes, Math.min(config.readCacheRecordMaxBytes, config.syncReadMaxBytes));
      // Set before any record is placed (the log's hooks call it only for placed small stores).
      let engine!: Engine;
      const hooks = {
        // Once fsynced (in log order): into the overlay, where reads see it until its commit.
        stage: (r: LogRecord): Promise<void> | undefined => {
          // Before anyone can read the delete: the read cache finds records by id alone (getById).
          if (r.type === RecordType.DELETE) cache.invalidate(r.id);
          const unlink = unlinkFileOf(dataDir.path, index, r);
          index.stage(r.lsn, stageRecord, r);
          return unlink;
        },
        // Every record is staged before its commit (log.ts), so staging's answer holds here.
        apply: (r: LogRecord, w: IndexWriter): void => void applyRecord(w, r, r.existed),
        // A put of a whole blob staged as new; one staged as a duplicate writes nothing.
        // A small store's record may be reused once its commit is in (and its store answered).
        committed: (r: LogRecord): void => {
          if (r instanceof SmallRecord) r.pool.commit(r);
        },
        addsOnly: (r: LogRecord): boolean => (r.type === RecordType.PUT_INLINE || r.type === RecordType.PUT_FILE) && r.relocatedFromSegment === 0,
        // Small stores placed since the last turn are hashed together, then queued (or answered).
        beforeBatch: (): void => engine.hashSmall(),
      };
      if (recovered.replay.length > 0) {
        const last = recovered.replay[recovered.replay.length - 1]!;
        const replayed = recovered.replay.map((s) => ({
          ...s.header, labels: s.labels, segment: s.segment, offset: s.offset, length: s.length,
          dataCrc: s.header.type === RecordType.PUT_INLINE && s.data !== undefined ? crc32c(s.data) : undefined,
        }));
        await unlinkReplayedDeletes(dataDir.path, index, replayed);
        await index.commit(
          { segment: replayed[replayed.length - 1]!.segment, offset: last.offset + last.length, nextLsn: recovered.nextLsn },
          (w) => replayed.forEach((r) => applyRecord(w, r)),
        );
        await index.flushed();
      }
      await store.openDirect(recovered.active);
      const segmentLog = new SegmentLog(store, index, hooks, {
        groupCommitMaxBytes: config.groupCommitMaxBytes, arenaChunkBytes: Math.max(ARENA_CHUNK_BYTES, largestRecord), pipelineDepth: config.logPipelineDepth, indexLagBatches: config.indexLagBatches, commitIntervalMs: config.indexCommitIntervalMs, readBackBytes: config.logReadBackBytes,
        ackAfterIndexFlush: config.durableAck === 'index',
        allocBytes: config.segmentAllocBytes, space, recorder,
      }, recovered.active, recovered.offset, recovered.nextLsn);
      engine = new Engine(config, dataDir, index, store, reader, segmentLog, recorder, space, log, cache);
      // After the replay: the filter is built from everything the index holds now, and learns the rest as it is staged.
      index.startFilter();
      engine.compactor = new Compactor(engine, config.compactionLiveRatio / 100, config.compactionIntervalMs, config.compactionWindowBytes);
      return engine;
    } catch (err) {
      await dataDir.unlock();
      throw err;
    }
  }

  /** Runs `fn` after every earlier operation on the same id has finished (engine-internal: shards.ts). */
  exclusive<T>(id: Buffer, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(id, fn);
  }

  /**
   * Appends to the log. Stores are `timed` (they report the log's stages); compaction's
   * relocations are not. Tombstones and relocations are maintenance: they may use the reserve.
   * `absent`: a plain put whose id the caller found absent under its lock (LogRecord.absent).
   * Engine-internal (shards.ts appends shard records).
   */
  appendRecord(record: RecordInput, timed = true, absent = false, dataCrc?: number): Promise<LogRecord> {
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
      this.segmentLog.append(r);
    });
  }

  /**
   * The fast path of a small store (src/http/small-store.ts): `data` (at most smallBlobMaxBytes)
   * may be a view of a buffer reused once this returns. Its bytes are copied into their place in
   * the log's arena before this returns; at the start of the log's next turn the small stores
   * placed meanwhile are hashed together (hashSmall), and each goes on under its id's lock unless
   * its bytes are stored here already. `done.stored` runs once the record is durable, at that turn
   * for bytes already stored, or with the error; when this throws (nothing placed: the log failed,
   * no memory), it never runs. No promise or closure per call: the id's lock is held without one
   * (id-locks.ts), and a store whose id is busy (another operation on it under way) takes the long
   * way, putInline.
   */
  putSmall(data: Uint8Array | ArrayBuffer, policy: Policy, labels: Buffer, done: SmallStoreDone, replicate = false): void {
    const size = data.byteLength;
    if (size > this.config.smallBlobMaxBytes) return done.stored(payloadTooLarge('inline blob over smallBlobMaxBytes'), EMPTY, false);
    const r = this.smallRecords.take();
    r.policy = policy;
    r.flags = replicate ? RecordFlag.REPLICATE : 0;
    r.labels = labels;
    r.labelsLength = labels.length;
    r.dataLength = size;
    r.size = size;
    r.createdAtNs = nowNs();
    r.appendedAt = ticks();
    r.done = done;
    try {
      this.segmentLog.place(r, data);
    } catch (err) {
      this.smallRecords.unused(r);
      throw err;
    }
    this.unhashed[this.unhashedCount++] = r;
  }

  /** Small stores placed in the log's arena since its last turn, waiting for hashSmall. */
  private unhashed: (SmallRecord | undefined)[] = [];
  private unhashedCount = 0;
  /** The list hashSmall works through while new stores go into the other (an answer's callback may store again). */
  private unhashedSpare: (SmallRecord | undefined)[] = [];
  private hashing = false;
  /** hashSmall's quads (hashEachInto) and the CRC-32Cs it gets back, reused. */
  private readonly hashParts: HashParts = [];
  private readonly hashCrcs = new Uint32Array(HASH_EACH_MAX);

  /**
   * The log's turn begins (its beforeBatch hook), or the engine closes: the small stores placed
   * since are hashed together, their bodies sharing the hash kernels' lanes (hash-each.ts), then
   * each goes on to the log or is answered. Each store's 'hash' stage is its group's hashing.
   * Stores placed meanwhile (from an answer's callback) wait for the next turn, which place()
   * schedules.
   */
  private hashSmall(): void {
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
          this.dropSmall(r, failure, false);
          continue;
        }
        // Read from its slot into the record's field: as a returned number it would be a heap number.
        r.dataCrc = this.hashCrcs[i]!;
        this.recorder.stage('hash', hashStart);
        this.admitSmall(r);
      } catch (err) {
        // An answer's callback threw: the other stores of the group still go on.
        this.log.error({ err }, `a small store's answer failed: ${(err as Error).message}`);
      }
    }
  }

  /** A hashed small store goes on to the log under its id's lock, unless its bytes are here already. */
  private admitSmall(r: SmallRecord): void {
    const id = r.id;
    if (!this.locks.hold(id)) return this.putSmallBusy(r);
    let held: boolean;
    try {
      held = this.index.has(id);
    } catch (err) {
      this.locks.unhold(id);
      return this.dropSmall(r, err as Error, false);
    }
    if (held) {
      this.locks.unhold(id);
      return this.dropSmall(r, undefined, true);
    }
    this.segmentLog.enqueue(r);
  }

  /**
   * A placed small store that goes no further: its place in the arena goes, its store is answered
   * (`existed`: its bytes were here already; or the error), its record goes back.
   */
  private dropSmall(r: SmallRecord, err: Error | undefined, existed: boolean): void {
    this.segmentLog.discard(r);
    // The answer reads the id before it returns: the record may go back after.
    r.done!.stored(err, err ? EMPTY : r.id, existed);
    this.smallRecords.unused(r);
  }

  /**
   * A small store whose id is busy (rare): the long way, putInline, with bytes (copied out of the
   * arena) and an id of its own; the record goes back. A method of its own: a closure in
   * admitSmall that captured `done` would make it allocate a context on every call.
   */
  private putSmallBusy(r: SmallRecord): void {
    const at = RecordArena.dataAt(r);
    const data = Buffer.from(r.chunk!.buf.subarray(at, at + r.dataLength));
    const { policy, labels } = r;
    const done = r.done!;
    const id = Buffer.from(r.id);
    this.segmentLog.discard(r);
    this.smallRecords.unused(r);
    this.putInline(data, policy, labels).then((p) => done.stored(undefined, p.id, !p.created), (err: Error) => done.stored(err, id, false));
  }

  /** A small store's record is durable (or failed): its lock goes, its store is answered. */
  private readonly smallAppended = (err: Error | undefined, record: LogRecord): void => {
    const r = record as SmallRecord;
    this.locks.unhold(r.id);
    r.done!.stored(err, r.id, r.existed);
    this.smallRecords.answer(r, err !== undefined);
  };

  /** Small stores' records, reused (small-record.ts). */
  private readonly smallRecords = new SmallRecords(this.smallAppended);

  /** Stores a blob held in memory (at most smallBlobMaxBytes) as a segment record. */
  putInline(data: Buffer, policy: Policy, labels: Buffer, origin: StoreOrigin = LOCAL_STORE): Promise<PutResult> {
    if (data.length > this.config.smallBlobMaxBytes) throw payloadTooLarge('inline blob over smallBlobMaxBytes');
    const hashStart = ticks();
    const checksum = blake3(data);
    this.recorder.stage('hash', hashStart);
    const id = idOfDigest(checksum);
    const size = data.length;
    return this.exclusive(id, async () => {
      if (this.index.has(id)) return { id, size, created: false };
      const done = await this.appendRecord({
        type: RecordType.PUT_INLINE, policy, labelsLength: labels.length, dataLength: size, relocatedFromSegment: 0, relocatedFromOffset: 0,
        size, createdAtNs: origin.createdAtNs ?? nowNs(), id, checksum, labels, data, flags: flagsOf(origin),
      }, true, true);
      return { id, size, created: !done.existed };
    });
  }

  /**
   * Refuses (507) a store of `bytes` the disk cannot hold above its reserve, before any of it is
   * received; the space is checked again as the bytes are written.
   */
  checkSpace(bytes: number): void {
    this.space.written(this.space.takeForData(bytes));
  }

  /** Starts a streamed upload to its own file; finish it with commitFile() or abort it. */
  async beginFile(): Promise<FileSink> {
    const writer = new BlobFileWriter(this.dataDir.path, this.chunkCv, this.space, this.recorder, this.uploads, this.config.blobFileWrites === 'direct');
    await writer.open();
    return writer;
  }

  /** Moves a finished upload into place and records it; deduplicates against stored bytes. */
  commitFile(file: FileSink, checksum: Buffer, policy: Policy, labels: Buffer, origin: StoreOrigin = LOCAL_STORE): Promise<PutResult> {
    const writer = ownFile(file);
    const id = idOfDigest(checksum);
    const size = writer.size;
    return this.exclusive(id, async () => {
      if (this.index.has(id)) {
        await writer.abort();
        return { id, size, created: false };
      }
      const idHex = id.toString('hex');
      const target = blobFilePath(this.dataDir.path, idHex);
      await mkdirDurable(join(target, '..'));
      await fsp.rename(writer.tmpPath, target);
      writer.committed();
      await fsyncDir(join(target, '..'));
      const done = await this.appendRecord({
        type: RecordType.PUT_FILE, policy, labelsLength: labels.length, dataLength: 0, relocatedFromSegment: 0, relocatedFromOffset: 0,
        size, createdAtNs: origin.createdAtNs ?? nowNs(), id, checksum, labels, data: undefined, flags: flagsOf(origin),
      }, true, true);
      return { id, size, created: !done.existed };
    });
  }

  /** The blob (or `range` of it) in verified chunks of at most 1 MiB. */
  read(meta: BlobMeta, sink: ChunkSink, range?: ByteRange): Promise<void> {
    return readBlob(this, meta, sink, range);
  }

  deletedAt(id: Buffer): number | undefined {
    return this.index.deletedAt(id);
  }

  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean): void {
    this.index.scan(start, visit);
  }

  scanDeleted(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void {
    this.index.scanDeleted(start, visit);
  }

  /** The replication queue (written by stores that ask for copies, in their index transaction). */
  get replication(): ReplicationQueue {
    return this.index.replication;
  }

  /** Blobs whose shard columns need repair. */
  get ecRepairs(): EcRepairQueue {
    return this.index.ecRepairs;
  }

  stat(id: Buffer): BlobMeta | undefined {
    const entry = this.index.get(id);
    return entry && { ...entry, id };
  }

  /**
   * The bytes of an inline blob, verified against the checksum; corrupt copies are never returned.
   * A read counts for the read cache as readInlineSync's do, wherever the bytes came from (a blob
   * written past the page cache is read from the disk the first time).
   */
  async readInline(meta: BlobMeta): Promise<Buffer> {
    const readStart = ticks();
    const data = await this.reader.read(meta.segment, meta.offset + HEADER_BYTES + meta.labels.length, meta.size);
    this.recorder.stage('read', readStart);
    this.verified(meta, data);
    if (meta.size <= this.config.syncReadMaxBytes && this.cache.enabled) {
      // Only if it is still the blob's record: a delete staged during the read has invalidated
      // the cache already, and the cache answers by id alone (cachedRecord).
      const now = this.index.get(meta.id);
      if (now !== undefined && now.location === Location.SEGMENT && now.segment === meta.segment && now.offset === meta.offset) this.cache.admit(meta, data);
    }
    return data;
  }

  /**
   * readInline on the calling thread, for records small enough to read synchronously whose bytes
   * are in memory (undefined otherwise: readInline reads them in the thread pool). The bytes
   * are a view of a scratch buffer or of the read cache, valid until the next call: copy them out
   * at once (uWS's end() does), so no buffer is allocated per read. What is read and verified here
   * goes into the read cache (verified-cache.ts), and a cached record is answered from it.
   */
  readInlineSync(meta: BlobMeta): Buffer | undefined {
    if (meta.size > this.config.syncReadMaxBytes) return undefined;
    const cached = this.cache.getMeta(meta);
    if (cached) return cached.data;
    const readStart = ticks();
    const data = this.reader.readSmallScratch(meta.segment, meta.offset + HEADER_BYTES + meta.labels.length, meta.size);
    // Not in memory: the long way reads it in the thread pool.
    if (data === undefined) return undefined;
    this.recorder.stage('read', readStart);
    this.verifiedRead(meta, data);
    return this.cache.admit(meta, data)?.data ?? data;
  }

  /**
   * The verified record of a small blob stored here in a segment: from the read cache by its id
   * (allocating nothing, reading no index: `id` may be a scratch buffer), or read and verified now
   * (the index record read in place), and kept if the cache takes it; one it does not keep
   * is a transient record, valid until the next call. undefined when it is not such a blob, when
   * the cache is off, and for a copy that fails its check: the long path (readInlineSync) finds
   * that again, counts it and answers for it.
   */
  cachedRecord(id: Buffer): CachedRecord | undefined {
    if (!this.cache.enabled) return undefined;
    const kept = this.cache.getById(id);
    if (kept !== undefined) return kept;
    const raw = this.index.peek(id);
    if (raw === undefined) return undefined;
    const hit = this.cache.get(id, raw);
    if (hit !== undefined || raw[0] !== Location.SEGMENT) return hit;
    // entry.ts layout, read before anything else reads the index (raw is lmdb-js's reused buffer).
    const size = raw.readUInt32LE(16);
    if (raw.readUInt32LE(20) !== 0 || size > this.cache.recordMaxBytes) return undefined;
    const policy = raw[1]!;
    const at = raw.readUInt32LE(8) + raw.readUInt32LE(12) * 2 ** 32 + HEADER_BYTES + raw.readUInt16LE(2);
    const crc = entryDataCrc(raw);
    const readStart = ticks();
    const data = this.reader.readSmallScratch(raw.readUInt32LE(4), at, size);
    if (data === undefined) return undefined;
    const verifyStart = this.recorder.stage('read', readStart);
    const intact = crc >= 0 ? crc32c(data) === crc : this.cache.missedChecksumIs(blake3(data));
    this.recorder.stage('verify', verifyStart);
    return intact ? this.cache.admitMissed(policy, data) : undefined;
  }

  /**
   * A small blob's bytes just read from disk for a GET, checked with the CRC-32C its index entry
   * carries (a tenth of BLAKE3's cost; docs/adr/0012-hot-path.md), or with BLAKE3 when the entry has
   * none. Everything else that reads a blob (replication, the scrubber, streams) checks BLAKE3.
   */
  private verifiedRead(meta: BlobMeta, data: Buffer): Buffer {
    const verifyStart = ticks();
    const intact = inlineIntact(data, meta.dataCrc, meta.checksum);
    this.recorder.stage('verify', verifyStart);
    if (!intact) throw this.corruption(meta);
    return data;
  }

  private verified(meta: BlobMeta, data: Buffer): Buffer {
    const verifyStart = ticks();
    const intact = blake3(data).equals(meta.checksum);
    this.recorder.stage('verify', verifyStart);
    if (!intact) throw this.corruption(meta);
    return data;
  }

  filePath(meta: BlobMeta): string {
    const hex = meta.id.toString('hex');
    return 'shard' in meta ? shardFilePath(this.dataDir.path, hex, (meta as ShardMeta).shard.index) : blobFilePath(this.dataDir.path, hex);
  }

  /** A corrupt copy was found (counted in errors_total{type="corruption"} here, once): the error to throw. */
  corruption(meta: BlobMeta): BlobstoreError {
    this.corruptionsDetected++;
    const what = 'shard' in meta ? `shard column ${(meta as ShardMeta).shard.index} of blob` : 'blob';
    this.log.error({ blob: meta.id.toString('hex') }, `corrupt copy of ${what} ${meta.id.toString('hex')} detected; not served`);
    const err = new BlobstoreError('corruption', `stored copy of ${what} ${meta.id.toString('hex')} failed its checksum`);
    this.recorder.countError(err);
    return err;
  }

  /**
   * Deletes locally: a tombstone in the log, then the index record goes. Idempotent. Works on a
   * full disk (the tombstone may use the reserve); there, compaction is asked to run soon. A
   * user's delete is remembered (repair does not copy the blob back here) and takes the blob's
   * shard columns held here too; a `handoff` delete drops a whole copy the owners hold and is not
   * remembered.
   */
  delete(id: Buffer, handoff = false): Promise<void> {
    return this.exclusive(id, async () => {
      const deletes: Promise<unknown>[] = [];
      if (this.index.has(id)) {
        deletes.push(this.appendRecord({
          type: RecordType.DELETE, policy: 0, labelsLength: 0, dataLength: 0, relocatedFromSegment: 0, relocatedFromOffset: 0,
          size: 0, createdAtNs: nowNs(), id, checksum: EMPTY_CHECKSUM, labels: EMPTY, data: undefined, flags: handoff ? RecordFlag.HANDOFF : 0,
        }));
      }
      if (!handoff) deletes.push(appendShardDeletes(this, id, undefined, false));
      await Promise.all(deletes);
      if (this.failure) this.compactor?.soon();
    });
  }

  // Shard columns of erasure-coded blobs (shards.ts).

  /** Every column of blob `id` held here. */
  shardsOf(id: Buffer): ShardMeta[] {
    return this.index.shardsOf(id).map((c) => shardMetaOf(id, c.entry));
  }

  putShardInline(w: ShardWrite, data: Buffer): Promise<{ created: boolean }> {
    return putShardInline(this, w, data);
  }

  commitShardFile(file: FileSink, w: ShardWrite): Promise<{ created: boolean }> {
    return commitShardFile(this, ownFile(file), w);
  }

  /** Drops the column `index` of a blob (all of its columns when undefined); see shards.ts. */
  deleteShards(id: Buffer, index: number | undefined, handoff: boolean): Promise<void> {
    return deleteShards(this, id, index, handoff);
  }

  scanShards(start: Buffer | undefined, visit: (id: Buffer, index: number, policy: number, size: number) => boolean): void {
    this.index.scanShards(start, visit);
  }

  /**
   * Relocates a live record (compaction); it applies only if the index still points at the source
   * (`entry`). The scan does not check the bytes: a whole blob's are checked here, against its
   * entry's CRC-32C (or BLAKE3 where it has none), so that a corrupt copy is never moved under a
   * new check; one that fails stays where it is (counted; the segment is kept), undefined.
   */
  relocate(rec: ScannedRecord, segment: number, entry: IndexEntry): Promise<LogRecord> | undefined {
    const h = rec.header;
    let dataCrc: number | undefined;
    if (h.type === RecordType.PUT_INLINE) {
      if (!inlineIntact(rec.data!, entry.dataCrc, entry.checksum)) {
        this.corruption({ ...entry, id: h.id });
        return undefined;
      }
      dataCrc = entry.dataCrc ?? crc32c(rec.data!);
    }
    return this.appendRecord({
      // The log copies the bytes into the record's place before append returns: the scan's buffer is not kept.
      ...h, labels: rec.labels, data: rec.data, relocatedFromSegment: segment, relocatedFromOffset: rec.offset,
    }, false, false, dataCrc);
  }

  list(prefix: string, cursor: string | undefined, limit: number): ListResult {
    const after = cursor ? this.cursors.decode(cursor) : undefined;
    if (!/^[0-9a-f]{0,32}$/.test(prefix)) return { ids: [], nextCursor: undefined, hasMore: false };
    const page = this.index.list(prefix, after, limit);
    const last = page.ids[page.ids.length - 1];
    return { ids: page.ids, hasMore: page.hasMore, nextCursor: page.hasMore && last ? this.cursors.encode(last) : undefined };
  }

  async stats(): Promise<EngineStats> {
    // Segment space is accounted at the index commit: wait for the records acknowledged so far.
    await this.segmentLog.settled();
    const fs = await fsp.statfs(this.dataDir.path);
    let segmentBytes = 0;
    for (const s of this.index.segments.values()) segmentBytes += s.totalBytes;
    return {
      capacityBytes: fs.blocks * fs.bsize,
      freeBytes: fs.bavail * fs.bsize,
      usedBytes: segmentBytes + this.fileBytes(),
      storedBytes: this.index.counters.storedBytes,
      blobCount: this.index.counters.blobCount,
      shardCount: this.index.counters.shardCount,
      corruptionsDetected: this.corruptionsDetected,
    };
  }

  /** Bytes in own-file blobs and columns: stored bytes minus those held inline in segments. */
  private fileBytes(): number {
    let inline = 0;
    for (const s of this.index.segments.values()) inline += s.liveBytes;
    return Math.max(0, this.index.counters.storedBytes + this.index.counters.shardBytes - inline);
  }

  get activeSegment(): number {
    return this.segmentLog.activeSegment;
  }

  /** The worker pool (setting chunkDigests=pool), for its metrics; undefined when hashing inline. */
  get workerPool(): WorkerPool | undefined {
    return this.workers;
  }

  /**
   * Why the backend cannot take stores now, if it cannot: a failed log write or sync (until
   * restart), or a disk full up to its reserve (until space comes back). Reads still work.
   */
  get failure(): Error | undefined {
    if (this.segmentLog.failed) return this.segmentLog.failed;
    try {
      if (this.space.full()) return new Error(`disk full: less than 1 MiB free above the ${this.space.reserveBytes}-byte reserve`);
    } catch (err) {
      return err as Error; // statfs failed: the data dir is gone or unreadable
    }
    return undefined;
  }

  /** Resolves once every record acknowledged so far is committed to the index and flushed. */
  settled(): Promise<void> {
    return this.segmentLog.settled();
  }

  compactNow(): Promise<number> {
    return this.compactor!.runOnce();
  }

  /** Ends the active segment so compaction can take it; resolves once it is sealed. */
  sealActiveSegment(): Promise<void> {
    return this.segmentLog.seal();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.compactor?.stop();
    // Small stores placed but not hashed hold no lock yet: they take theirs (or are answered) now.
    this.hashSmall();
    await this.locks.settled();
    // Uploads cut by the shutdown may still be removing their temp files: finish that here.
    await Promise.allSettled([...this.uploads].map((w) => w.abort()));
    await this.segmentLog.close();
    this.reader.close();
    await this.index.close();
    await this.workers?.close();
    await this.dataDir.unlock();
  }
}

const EMPTY = Buffer.alloc(0);
const EMPTY_CHECKSUM = Buffer.alloc(32);
const flagsOf = (origin: StoreOrigin): number => (origin.replicate ? RecordFlag.REPLICATE : 0);

/** A sink handed back to commit must be one this engine made (beginFile). */
function ownFile(file: FileSink): BlobFileWriter {
  if (!(file instanceof BlobFileWriter)) throw new BlobstoreError('internal', 'a file sink the local store did not make was committed');
  return file;
}
