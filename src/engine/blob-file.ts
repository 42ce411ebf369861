/**
 * A large blob in its own file: the bytes, then one digest per 1 MiB chunk (so reads verify each
 * chunk before it leaves), then a footer:
 *
 *   [data: size bytes][digest of chunk 0..n-1: 32 bytes each][footer: 32 bytes]
 *   footer: u32 magic "BSF1" · u32 version · u32 chunkBytes · u32 chunkCount · u64 size
 *           · u32 crc32 of the digests · u32 reserved
 *
 * Version 2: a chunk's digest is its chaining value in the blob's own
 * BLAKE3 tree (hash/blake3-tree.ts), and the blob's digest is joined from them, so one pass over
 * the bytes gives both. Version 1 (still read): the BLAKE3 digest of each chunk on its own, beside
 * a second pass for the content hash.
 *
 * Writes go to tmp/ and are renamed into blobs/xx/<id> once fsynced (the engine does that).
 *
 * Written direct, the whole 1 MiB chunks go through a second descriptor of the file opened
 * O_DIRECT, past the page cache, as ScyllaDB and Ceph BlueStore write their data: no copy into
 * page-cache pages and no writeback, and a large blob's bytes do not push small blobs out of the
 * cache. The last chunk's tail, the digest table and the footer are not 4 KiB-aligned: they take
 * the buffered descriptor, whose fsync at the end covers the file either way. Erasure-coded
 * columns are written so by default (columnFileWrites, docs/adr/0026-columns-past-the-page-cache.md);
 * whole blobs are not (blobFileWrites): on the VM we measure on, a node writing them direct was
 * slower than a buffered one in the same rounds, for the 1 GiB PUT and more so for the cold GET
 * after it (docs/adr/0012-hot-path.md).
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp, constants as fsc } from 'node:fs';
import { ticks } from '../metrics/clock.js';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { BlobstoreError } from '../errors/errors.js';
import { DIGEST_BYTES } from '../hash/blake3.js';
import { LEAF_BYTES } from '../hash/blake3-tree.js';
import { ChunkTree } from '../hash/chunk-tree.js';
import { NO_RECORDER, type Recorder } from '../metrics/recorder.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { DiskSpace } from './disk-space.js';
import { errnoError } from '../util/write-all.js';
import { writeEach } from './fs-util.js';

const FILE_MAGIC = 0x31465342; // "BSF1"
/** Digest table of chunks' own BLAKE3 digests. */
export const FILE_VERSION_FLAT = 1;
/** Digest table of chunks' chaining values in the blob's tree (written now). */
export const FILE_VERSION_TREE = 2;
const FOOTER_BYTES = 32;
const WRITEBACK_BYTES = 32 * 1024 * 1024;
/**
 * Written direct, the bytes are on their way to the device already, and a flush only asks it to
 * make them durable (a volatile write cache; on a VM, the host's): that costs this CPU nothing, so
 * it is asked more often, and the fsync at the end finds less to wait for. 64 MiB EC42 PUTs
 * alternating between two clusters: 226 against 194 MiB/s (12 pairs), 8 MiB against 32.
 */
const DIRECT_WRITEBACK_BYTES = 8 * 1024 * 1024;
/** Chunks one write job takes at most. */
const WRITE_BATCH_MAX = 64;

interface QueuedWrite {
  readonly bytes: Buffer;
  readonly at: number;
  resolve(): void;
  reject(err: unknown): void;
}

export function blobFilePath(dataDir: string, idHex: string): string {
  return join(dataDir, 'blobs', idHex.slice(0, 2), idHex);
}

/** BLAKE3 of one chunk on its own (a format-1 file's table), inline or on a worker thread. */
export type ChunkDigester = (chunk: Buffer) => Promise<Buffer>;

/**
 * The chaining value of the chunk at byte `offset` of its blob, in the blob's BLAKE3 tree (32
 * bytes), and with `withRoot` (the first chunk) the digest of that chunk alone after it (64 in
 * all); inline or on a worker thread.
 */
export type ChunkCv = (chunk: Buffer, offset: number, withRoot: boolean) => Promise<Buffer>;

/** How the engine checks a chunk read from a file of either version. */
export interface ChunkHashers {
  readonly digestChunk: ChunkDigester;
  readonly chunkCv: ChunkCv;
}

/**
 * A large blob's bytes on their way to this node's disk (Engine.beginFile): hashed as they are written,
 * moved into place by commitFile, removed by abort. Chunks are whole 1 MiB but the last, in order.
 */
export interface FileSink {
  readonly size: number;
  /** Where the bytes are until committed (an erasure-coded store reads its source from here). */
  readonly tmpPath: string;
  write(chunk: Buffer): Promise<void>;
  /** After the last chunk: the content's BLAKE3 digest, with everything durable (unless transient). */
  finish(): Promise<Buffer>;
  abort(): Promise<void>;
  /** Only the source of an erasure-coded store (encoded, then removed): nothing needs to be durable. */
  transient(): void;
}

/** Streams one upload into a temp file, hashing as it goes. Chunks must be written in order. */
export class BlobFileWriter implements FileSink {
  readonly tmpPath: string;
  private handle: fsp.FileHandle | undefined;
  /** The same file opened O_DIRECT for the aligned chunks; undefined when not asked for or refused. */
  private direct: fsp.FileHandle | undefined;
  /** Chunks' chaining values as they settle (the digest table), and the content digest from them. */
  private readonly tree = new ChunkTree();
  private chunks = 0;
  /** Chaining values not settled yet (a worker thread's). */
  private readonly hashing = new Set<Promise<void>>();
  /** The first chunk whose chaining value failed: finish fails with it. */
  private hashFailure: unknown;
  private syncing: Promise<void> | undefined;
  /** Chunks waiting for the file, in order (pump writes them). */
  private readonly queue: QueuedWrite[] = [];
  private writing = false;
  /**
   * The write job under way (settled either way). The addon's job writes to the fd behind Node's
   * back, so FileHandle.close() does not wait for it: abort waits here before closing, or a new
   * file given the same fd number could take the job's bytes.
   */
  private writeJob: Promise<void> = Promise.resolve();
  private syncedUpTo = 0;
  /** A transient file (the source an EC store encodes from): never flushed, removed afterwards. */
  private durable = true;
  size = 0;

  constructor(
    dataDir: string,
    private readonly chunkCv: ChunkCv,
    /** Every chunk takes its space for data first: a full disk refuses it (507), not a write. */
    private readonly space: DiskSpace,
    /** Per chunk: `hash` (the content hash, inline) and `write`; `fsync` once at the end. */
    private readonly recorder: Recorder = NO_RECORDER,
    /** Writers whose temp file may still exist (the engine aborts them when it closes). */
    private readonly unfinished: Set<BlobFileWriter> = new Set(),
    /** Whole chunks past the page cache (O_DIRECT) where the file system allows it. */
    private readonly directWrites = false,
  ) {
    this.tmpPath = join(dataDir, 'tmp', `${Date.now()}-${randomBytes(6).toString('hex')}.part`);
  }

  async open(): Promise<void> {
    this.unfinished.add(this);
    this.handle = await fsp.open(this.tmpPath, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o644);
    if (this.directWrites && fsc.O_DIRECT !== undefined) {
      // EINVAL where the file system has no direct I/O: the chunks take the page cache.
      this.direct = await fsp.open(this.tmpPath, fsc.O_WRONLY | fsc.O_DIRECT).catch(() => undefined);
    }
  }

  /**
   * The file is only the source of an erasure-coded store (its columns go to other nodes, then
   * the file is removed): no digest table, no background flushes and no fsync at the end, since
   * they would only compete with the columns' own hashing and writes. The chunks' chaining values
   * are still computed: the content digest (the id) is joined from them.
   */
  transient(): void {
    this.durable = false;
    // Read back at once (the encoder's source): from the page cache, not the disk.
    void this.closeDirect();
  }

  /** Closes the O_DIRECT descriptor once no write job can use it. */
  private async closeDirect(): Promise<void> {
    const direct = this.direct;
    if (direct === undefined) return;
    this.direct = undefined;
    await this.writeJob;
    await direct.close().catch(() => undefined);
  }

  /** The temp file was renamed into place: nothing is left to clean up. */
  committed(): void {
    this.unfinished.delete(this);
  }

  /** Hashes and writes one chunk (a whole 1 MiB except the last); resolves when the buffer is free. */
  async write(chunk: Buffer): Promise<void> {
    if (chunk.length === 0) return;
    // Each chunk's chaining value is a node of the blob's tree only at a whole-chunk offset.
    if (this.size % CHUNK_BYTES !== 0 || chunk.length > CHUNK_BYTES) {
      throw new BlobstoreError('internal', `blob file: a chunk of ${chunk.length} bytes at ${this.size} (chunks are whole ${CHUNK_BYTES} bytes but the last)`);
    }
    const index = this.chunks++;
    const at = this.size;
    this.size += chunk.length;
    const hashed = this.hash(chunk, index, at);
    const writeStart = ticks();
    await this.writeData(chunk, at);
    this.recorder.stage('write', writeStart);
    await hashed;
    this.startWriteback();
  }

  /** The chunk's chaining value into the table (one pass: it is also the content hash's part). */
  private hash(chunk: Buffer, index: number, at: number): Promise<void> {
    const hashStart = ticks();
    const hashed = this.chunkCv(chunk, at, index === 0).then((cv) => {
      this.recorder.stage('hash', hashStart);
      this.tree.set(index, cv);
    });
    this.hashing.add(hashed);
    hashed.then(
      () => void this.hashing.delete(hashed),
      (err: unknown) => {
        // Kept for finish: a chunk without its chaining value leaves the digest unknown.
        this.hashFailure ??= err;
        this.hashing.delete(hashed);
      },
    );
    return hashed;
  }

  /** The blob's digest: joined from the chunks' chaining values, or the only chunk's own. */
  private async contentDigest(): Promise<Buffer> {
    await Promise.all(this.hashing);
    if (this.hashFailure !== undefined) throw this.hashFailure;
    return this.tree.digest(this.chunks);
  }

  /** Writes bytes of the file at `at` once the disk has room for them above its reserve. */
  private async writeData(bytes: Buffer, at: number): Promise<void> {
    const taken = this.space.takeForData(bytes.length);
    try {
      await new Promise<void>((resolve, reject) => {
        this.queue.push({ bytes, at, resolve, reject });
        this.pump();
      });
    } finally {
      this.space.written(taken);
    }
  }

  /**
   * One write job on the file at a time, of every chunk queued meanwhile that follows on. Writes
   * to one file hold its inode lock: with several at once the thread-pool threads only spin on it
   * (perf, 1 GiB PUT: a quarter of the node's CPU in rwsem spinning). Each chunk (1 MiB) is its
   * own write(2), in one thread-pool job (fs-util.ts writeEach), not one pwritev of the batch: the
   * kernel sizes page-cache folios by a write's length, so a write of 2 MiB or more at a 2 MiB
   * boundary takes 2 MiB folios, and on a VM that reports free memory of that order to its host
   * (virtio-balloon free page reporting) those are pages the host took back, each faulted in
   * again on the copy: a PutStream's writes, whose batches held 2 or 4 chunks, ran at ~3 ms per MiB
   * against ~0.3 ms in 1 MiB folios (perf: the page-cache copy ~50% of the node's samples;
   * kmem:mm_page_alloc: order-9 folios against order-8). One job per batch keeps the thread-pool
   * round trips of the batched pwritev (a job per chunk cost the 1 GiB HTTP PUT ~14%).
   */
  private pump(): void {
    if (this.writing || this.queue.length === 0) return;
    if (!this.handle) {
      // Aborted with writes still queued: they fail, as a write on the closed file would.
      const closed = errnoError('EBADF', 'write', 'EBADF: the upload was aborted');
      for (const w of this.queue.splice(0)) w.reject(closed);
      return;
    }
    let n = 1;
    let end = this.queue[0]!.at + this.queue[0]!.bytes.length;
    while (n < this.queue.length && n < WRITE_BATCH_MAX && this.queue[n]!.at === end) end += this.queue[n++]!.bytes.length;
    const batch = this.queue.splice(0, n);
    this.writing = true;
    const done = (err?: unknown): void => {
      this.writing = false;
      for (const w of batch) if (err === undefined) w.resolve(); else w.reject(err);
      this.pump();
    };
    const job = writeEach(this.handle, batch.map((w) => w.bytes), batch[0]!.at, this.direct);
    this.writeJob = job.then(() => undefined, () => undefined);
    job.then(() => done(), done);
  }

  /**
   * Starts flushing what is written so far, in the background, every WRITEBACK_BYTES (written
   * direct, DIRECT_WRITEBACK_BYTES): the disk works while the body still arrives, and the fsync
   * at the end has little left to do.
   */
  private startWriteback(): void {
    const every = this.direct ? DIRECT_WRITEBACK_BYTES : WRITEBACK_BYTES;
    if (!this.durable || this.syncing || this.size - this.syncedUpTo < every || !this.handle) return;
    const upTo = this.size;
    this.syncing = this.handle.datasync().then(
      () => {
        this.syncedUpTo = upTo;
        this.syncing = undefined;
      },
      () => (this.syncing = undefined),
    );
  }

  /** Writes the digest table and footer, fsyncs (transient: neither), and returns the content digest. */
  async finish(): Promise<Buffer> {
    if (!this.durable) {
      await this.writeJob;
      await this.closeDirect();
      await this.syncing;
      await this.handle!.close();
      this.handle = undefined;
      return this.contentDigest();
    }
    const digest = await this.contentDigest();
    const table = this.tree.cvs(this.chunks);
    const footer = Buffer.alloc(FOOTER_BYTES);
    footer.writeUInt32LE(FILE_MAGIC, 0);
    footer.writeUInt32LE(FILE_VERSION_TREE, 4);
    footer.writeUInt32LE(CHUNK_BYTES, 8);
    footer.writeUInt32LE(this.chunks, 12);
    footer.writeBigUInt64LE(BigInt(this.size), 16);
    footer.writeUInt32LE(crc32(table), 24);
    await this.writeData(Buffer.concat([table, footer]), this.size);
    await this.closeDirect();
    await this.syncing;
    if (this.durable) {
      const syncStart = ticks();
      await this.handle!.sync();
      this.recorder.stage('fsync', syncStart);
    }
    await this.handle!.close();
    this.handle = undefined;
    return digest;
  }

  async abort(): Promise<void> {
    // No handle: writes still queued fail at once (pump), no new flush starts.
    const handle = this.handle;
    this.handle = undefined;
    this.pump();
    await this.writeJob;
    await this.closeDirect();
    await this.syncing;
    await handle?.close().catch(() => undefined);
    await fsp.rm(this.tmpPath, { force: true });
    this.unfinished.delete(this);
  }
}

export interface BlobFileLayout {
  /** FILE_VERSION_FLAT or FILE_VERSION_TREE: what the digest table holds. */
  version: number;
  size: number;
  chunkBytes: number;
  digests: Buffer;
  /** The file as it is now (device, inode, change time): a write or a rename in its place changes it. */
  fileKey: string;
}

/** Reads and checks the footer and digest table; throws corruption when they do not hold. */
export async function readLayout(handle: fsp.FileHandle, expectedSize: number): Promise<BlobFileLayout> {
  const { size: fileSize, dev, ino, ctimeMs } = await handle.stat();
  const corrupt = (why: string): BlobstoreError => new BlobstoreError('corruption', `blob file is corrupt: ${why}`);
  if (fileSize < FOOTER_BYTES) throw corrupt('too short');
  const footer = Buffer.alloc(FOOTER_BYTES);
  await handle.read(footer, 0, FOOTER_BYTES, fileSize - FOOTER_BYTES);
  const version = footer.readUInt32LE(4);
  if (footer.readUInt32LE(0) !== FILE_MAGIC || (version !== FILE_VERSION_FLAT && version !== FILE_VERSION_TREE)) throw corrupt('bad footer');
  const chunkBytes = footer.readUInt32LE(8);
  // A chaining value names a node of the tree: a chunk is one when its size is a power-of-two number of leaves.
  const leaves = chunkBytes / LEAF_BYTES;
  if (chunkBytes === 0 || (version === FILE_VERSION_TREE && !(Number.isInteger(leaves) && (leaves & (leaves - 1)) === 0))) throw corrupt('bad chunk size');
  const chunkCount = footer.readUInt32LE(12);
  const size = Number(footer.readBigUInt64LE(16));
  if (size !== expectedSize || chunkCount !== Math.ceil(size / chunkBytes)) throw corrupt('size mismatch');
  if (fileSize !== size + chunkCount * DIGEST_BYTES + FOOTER_BYTES) throw corrupt('length mismatch');
  const digests = Buffer.alloc(chunkCount * DIGEST_BYTES);
  await handle.read(digests, 0, digests.length, size);
  if (crc32(digests) !== footer.readUInt32LE(24)) throw corrupt('digest table checksum');
  return { version, size, chunkBytes, digests, fileKey: `${dev}:${ino}:${ctimeMs}` };
}

/**
 * True when the chunk's digest (by the file's version) matches the table entry `index`; with
 * `root` (a format-2 file of one chunk), when the chunk's own digest is `root`.
 */
export async function chunkIntact(layout: BlobFileLayout, index: number, chunk: Buffer, hashers: ChunkHashers, root?: Buffer): Promise<boolean> {
  if (root) return (await hashers.chunkCv(chunk, 0, true)).subarray(DIGEST_BYTES, 2 * DIGEST_BYTES).equals(root);
  const at = index * DIGEST_BYTES;
  const actual = layout.version === FILE_VERSION_TREE ? await hashers.chunkCv(chunk, index * layout.chunkBytes, false) : await hashers.digestChunk(chunk);
  return actual.subarray(0, DIGEST_BYTES).equals(layout.digests.subarray(at, at + DIGEST_BYTES));
}
