/**
 * The single-node storage engine: small blobs as records in the segment log (group commit),
 * large blobs in their own files, one LMDB index over both. Operations on one id run one after
 * another (a put racing a delete of the same bytes sees a consistent order); different ids never
 * wait for each other.
 */
import { join } from 'node:path';
import { type BlobMeta, type ListResult, LOCAL_STORE, type PutResult, type StoreOrigin } from '../blob/meta.js';
import { idOfDigest } from '../blob/id.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { CursorCodec } from '../blob/cursor.js';
import type { Policy } from '../blob/policy.js';
import { placementKey, type ShardMeta, type ShardWrite } from '../blob/shard.js';
import { largestRecordBytes, type NodeConfig } from '../config/settings.js';
import { BlobstoreError, payloadTooLarge } from '../errors/errors.js';
import { blake3 } from '../hash/blake3.js';
import { chunkCvOf } from '../hash/blake3-tree.js';
import { BlobIndex, type EcManifests, type EcRepairQueue, type IdSet, type ReplicationQueue } from '../index/blob-index.js';
import { Location } from '../index/entry.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { NO_RECORDER, type Recorder } from '../metrics/recorder.js';
import { ticks } from '../metrics/clock.js';
import { WorkerPool } from '../pool/pool.js';
import { BufferPool } from '../pool/buffer-pool.js';
import { blobFilePath, type ChunkCv, type ChunkDigester, type ChunkHashers, type FileSink } from './blob-file.js';
import { type ByteRange, CheckedTables, type ChunkSink, type ChunkValues, readBlob } from './blob-reader.js';
import { DeleteMemory } from './delete-memory.js';
import { Compactor } from './compactor.js';
import { DiskSpace } from './disk-space.js';
import { type EngineStats, statsOf } from './engine-stats.js';
import { type DataDir, openDataDir, removeStrayTemps } from './data-dir.js';
import { IdLocks } from './id-locks.js';
import { InlineReader } from './inline-reader.js';
import { type FileKind, flagsOf, LargeBlobs, ownFile } from './large-blobs.js';
import { SegmentLog } from './log.js';
import { engineLogHooks } from './log-hooks.js';
import { appendTo, type LogRecord, type RecordInput } from './log-record.js';
import { RecordFlag, RecordType } from './record.js';
import { fileIntact } from './record-files.js';
import { applyReplay, recoverLog } from './recovery.js';
import { scanBufferBytes } from './scan.js';
import { SegmentReader } from './segment-reader.js';
import { SegmentStore } from './segment-store.js';
import { decodeShardInfo, shardFilePath } from './shard-info.js';
import { appendShardDeletes, commitShardFile, deleteShards, putShardInline, shardMetaOf } from './shards.js';
import type { SmallRecords, SmallStoreDone } from './small-record.js';
import { SmallStores } from './small-stores.js';
import { type CachedRecord, VerifiedCache } from './verified-cache.js';
import { nowNs } from './wall-clock.js';

export type { SmallStoreDone } from './small-record.js';
export type { EngineStats } from './engine-stats.js';

/** Queued log records wait in arena chunks of this size (record-arena.ts), or of the largest record's if larger. */
const ARENA_CHUNK_BYTES = 4 * 1024 * 1024;

/** An id entering or leaving what the node holds (LocalStore.watchIds); `key` places it on the ring. */
export type HeldIdWatcher = (id: Buffer, policy: number, key: Buffer, set: IdSet) => void;

export class Engine implements ChunkHashers {
  readonly pool: BufferPool;
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
  /** The small stores' fast path (small-stores.ts). */
  private readonly small: SmallStores;
  /** Reads of blobs held in segments (inline-reader.ts). */
  private readonly inline: InlineReader;
  /** Blobs in files of their own (large-blobs.ts). */
  private readonly large: LargeBlobs;
  /** Blob files whose digest table was checked against their checksum lately (blob-reader.ts). */
  readonly tables = new CheckedTables();
  /** Users' deletes here, against copies made before them: kept for deleteRetentionMs (delete-memory.ts). */
  private readonly deletes: DeleteMemory;

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
    this.deletes = new DeleteMemory(index, { retentionMs: config.deleteRetentionMs, unheldMarks: config.unheldDeleteMarks }, log);
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
    this.small = new SmallStores({
      log: segmentLog, locks: this.locks, has: (id) => index.has(id), putInline: (data, policy, labels, origin) => this.putInline(data, policy, labels, origin),
      recorder, logger: log, smallBlobMaxBytes: config.smallBlobMaxBytes,
    });
    this.large = new LargeBlobs({
      dataPath: dataDir.path, chunkCv: this.chunkCv, space, recorder, direct: { blob: config.blobFileWrites === 'direct', column: config.columnFileWrites === 'direct' },
      exclusive: (id, fn) => this.exclusive(id, fn), has: (id) => index.has(id), appendRecord: (...args) => this.appendRecord(...args),
    });
    this.inline = new InlineReader(reader, cache, index, recorder, config.syncReadMaxBytes, (meta) => this.corruption(meta));
  }

  static async open(config: NodeConfig, recorder: Recorder = NO_RECORDER, log: Logger = silentLogger()): Promise<Engine> {
    const dataDir = await openDataDir(config.dataDir, config.nodeId);
    try {
      await removeStrayTemps(dataDir.path);
      const space = await DiskSpace.open(dataDir.path, config.diskReserveBytes, log);
      const index = new BlobIndex(join(dataDir.path, 'index'), {
        mergeRecords: config.indexMergeRecords,
        pageBytes: config.indexPageBytes,
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
      const reader = new SegmentReader(store, config.syncReadMaxBytes, { segments: config.readMapSegments, checkMs: config.readMapCheckMs });
      const cache = new VerifiedCache(config.readCacheBytes, Math.min(config.readCacheRecordMaxBytes, config.syncReadMaxBytes));
      await applyReplay(dataDir.path, index, recovered);
      await store.openDirect(recovered.active);
      // Set before any record is placed (the log's hooks call it only for placed small stores).
      let engine!: Engine;
      const hooks = engineLogHooks(dataDir.path, index, cache, () => engine.small.hashPlaced());
      const segmentLog = new SegmentLog(store, index, hooks, {
        groupCommitMaxBytes: config.groupCommitMaxBytes, arenaChunkBytes: Math.max(ARENA_CHUNK_BYTES, largestRecord), pipelineDepth: config.logPipelineDepth, indexLagBatches: config.indexLagBatches, commitIntervalMs: config.indexCommitIntervalMs, commitHoldMaxMs: config.indexCommitHoldMs, readBackBytes: config.logReadBackBytes,
        ackAfterIndexFlush: config.durableAck === 'index',
        allocBytes: config.segmentAllocBytes, space, recorder,
      }, recovered.active, recovered.offset, recovered.nextLsn);
      engine = new Engine(config, dataDir, index, store, reader, segmentLog, recorder, space, log, cache);
      // After the replay: the filter is built from everything the index holds now, and learns the rest as it is staged.
      index.startFilter();
      engine.compactor = new Compactor(engine, {
        liveRatio: config.compactionLiveRatio / 100, intervalMs: config.compactionIntervalMs, windowBytes: config.compactionWindowBytes,
        scanBufferBytes: scanBufferBytes(largestRecord),
      });
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

  /** Appends to the log (log-record.ts appendTo); engine-internal: shards, compaction, large blobs. */
  appendRecord(record: RecordInput, timed = true, absent = false, dataCrc?: number): Promise<LogRecord> {
    return appendTo(this.segmentLog, record, timed, absent, dataCrc);
  }


  /**
   * The fast path of a small store (src/http/small-store.ts): `data` (at most smallBlobMaxBytes)
   * may be a view of a buffer reused once this returns. Its bytes are copied into their place in
   * the log's arena before this returns; at the start of the log's next turn the small stores
   * placed meanwhile are hashed together (small-stores.ts), and each goes on under its id's lock unless
   * its bytes are stored here already. `done.stored` runs once the record is durable, at that turn
   * for bytes already stored, or with the error; when this throws (nothing placed: the log failed,
   * no memory), it never runs. No promise or closure per call: the id's lock is held without one
   * (id-locks.ts), and a store whose id is busy (another operation on it under way) takes the long
   * way, putInline.
   */
  putSmall(data: Uint8Array | ArrayBuffer, policy: Policy, labels: Buffer, done: SmallStoreDone, replicate = false, createdAtNs?: bigint): void {
    this.small.put(data, policy, labels, done, replicate, createdAtNs);
  }

  /** The pool of small stores' records (the tests count its idle ones). */
  private get smallRecords(): SmallRecords {
    return this.small.records;
  }


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

  /** Starts a streamed upload to its own file (a blob's, or a column's); finish it with commitFile() (a column: commitShardFile) or abort it. */
  beginFile(kind?: FileKind): Promise<FileSink> {
    return this.large.begin(kind);
  }

  /** Moves a finished upload into place and records it; deduplicates against stored bytes. */
  commitFile(file: FileSink, checksum: Buffer, policy: Policy, labels: Buffer, origin: StoreOrigin = LOCAL_STORE): Promise<PutResult> {
    return this.large.commit(file, checksum, policy, labels, origin);
  }

  /** The blob (or `range` of it) in verified chunks of at most 1 MiB. */
  read(meta: BlobMeta, sink: ChunkSink, range?: ByteRange, values?: ChunkValues): Promise<void> {
    return readBlob(this, meta, sink, range, values);
  }

  deletedAt(id: Buffer): number | undefined {
    return this.deletes.deletedAt(id);
  }

  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean): void {
    this.index.scan(start, visit);
  }

  scanDeleted(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void {
    this.index.scanDeleted(start, visit);
  }

  watchIds(watcher: HeldIdWatcher | undefined): void {
    this.index.watchIds(watcher && ((set, id, policy, entry) => {
      watcher(id, policy, set === 'column' && entry ? placementKey(id, decodeShardInfo(entry.labels)) : id, set);
    }));
  }

  /** The replication queue (written by stores that ask for copies, in their index transaction). */
  get replication(): ReplicationQueue {
    return this.index.replication;
  }

  holdIndexCommits(hold: () => Promise<void> | undefined): void {
    this.segmentLog.holdCommits(hold);
  }

  /** Blobs whose shard columns need repair. */
  get ecRepairs(): EcRepairQueue {
    return this.index.ecRepairs;
  }

  get ecManifests(): EcManifests {
    return this.index.ecManifests;
  }

  stat(id: Buffer): BlobMeta | undefined {
    const entry = this.index.get(id);
    return entry && { ...entry, id };
  }

  /** The bytes of an inline blob, verified against the checksum (inline-reader.ts). */
  readInline(meta: BlobMeta): Promise<Buffer> {
    return this.inline.read(meta);
  }

  /** readInline on the calling thread for small records in memory: a view valid until the next call (inline-reader.ts). */
  readInlineSync(meta: BlobMeta): Buffer | undefined {
    return this.inline.readSync(meta);
  }

  /** A small segment blob's verified record, from the read cache or read now (inline-reader.ts). */
  cachedRecord(id: Buffer): CachedRecord | undefined {
    return this.inline.cachedRecord(id);
  }

  filePath(meta: BlobMeta): string {
    const hex = meta.id.toString('hex');
    return 'shard' in meta ? shardFilePath(this.dataDir.path, hex, (meta as ShardMeta).shard.index) : blobFilePath(this.dataDir.path, hex);
  }

  /**
   * Whether the index still holds a file for the blob or column `meta` names: a read that finds
   * no file where none is held any more raced its removal (a delete, a handoff), not a lost file.
   */
  holdsFile(meta: BlobMeta): boolean {
    if ('shard' in meta) {
      const index = (meta as ShardMeta).shard.index;
      return this.index.shardsOf(meta.id).some((c) => c.index === index && c.entry.location === Location.FILE);
    }
    return this.index.get(meta.id)?.location === Location.FILE;
  }

  readsDirect(meta: BlobMeta): boolean {
    return this.config.columnFileReads === 'direct' && 'shard' in meta;
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
      // Nothing of it was here to leave a record: a copy of it may still be on its way.
      if (!handoff && this.index.deletedAt(id) === undefined) await this.deletes.markUnheld(id);
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
    return statsOf(this.dataDir.path, this.index, this.corruptionsDetected);
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
    this.deletes.stop();
    await this.compactor?.stop();
    // Small stores placed but not hashed hold no lock yet: they take theirs (or are answered) now.
    this.small.hashPlaced();
    await this.locks.settled();
    // Uploads cut by the shutdown may still be removing their temp files: finish that here.
    await this.large.abortAll();
    await this.segmentLog.close();
    this.reader.close();
    await this.index.close();
    await this.workers?.close();
    await this.dataDir.unlock();
  }
}

const EMPTY = Buffer.alloc(0);
const EMPTY_CHECKSUM = Buffer.alloc(32);
