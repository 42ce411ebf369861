/**
 * Reading a stored blob, whatever the transport: verified chunks of at most 1 MiB, in order.
 * File blobs are read readAheadChunks (a setting) chunks ahead from pooled buffers, each chunk
 * checked against its digest as soon as it is read (so checks run ahead too; with the worker pool,
 * read and check are one task) and before any of it is handed on; segment blobs are read whole and
 * checked against the checksum. Columns may be read past the page cache (columnFileReads=direct,
 * docs/adr/0027-column-reads.md). A chunk that fails its check throws the corruption error: a caller
 * that has already sent bytes must cut its response (the client sees a short body, never wrong
 * bytes).
 */
import { constants as fsc, promises as fsp } from 'node:fs';
import { BlobstoreError } from '../errors/errors.js';
import { Location } from '../index/entry.js';
import { type BlobFileLayout, chunkIntact, FILE_VERSION_TREE, readLayout } from './blob-file.js';
import { DIGEST_BYTES } from '../hash/blake3.js';
import { CV_BYTES, rootOf, subtreeCv } from '../hash/blake3-tree.js';
import { TtlCache } from '../util/ttl-cache.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { BlobMeta } from '../blob/meta.js';
import { ticks, ticksAgo } from '../metrics/clock.js';
import type { Recorder } from '../metrics/recorder.js';
import type { WorkerPool } from '../pool/pool.js';
import type { BufferPool } from '../pool/buffer-pool.js';
import type { ChunkHashers } from './blob-file.js';


/** Bytes [start, end) of a blob. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Takes one chunk; the buffer is valid until the returned promise settles. `index` counts from 0,
 * so a sink knows when it writes its headers.
 */
export type ChunkSink = (chunk: Buffer, index: number) => Promise<void> | void;

/**
 * For a reader that checks the chunks itself (an EC read's coordinator checks each column's bytes
 * as they arrive, docs/erasure-coding.md): told the chaining values of the chunks the range
 * covers, in the tree of what is read (a blob's, or a column's own), before the first chunk goes;
 * the chunks then go unchecked here. Undefined: the chunks are checked here as on any read (a
 * format-1 file, whose table holds each chunk's own digest). The range starts on a chunk and ends
 * on one or at the end.
 */
export type ChunkValues = (cvs: Buffer | undefined) => Promise<void> | void;

/** What a read needs of the engine. */
export interface BlobSource extends ChunkHashers {
  readonly config: { readonly readAheadChunks: number };
  /** 1 MiB buffers for the chunks read ahead. */
  readonly pool: Pick<BufferPool, 'acquire' | 'release'>;
  /** Reads and checks a chunk in one hop when set (setting chunkDigests=pool). */
  readonly workerPool: Pick<WorkerPool, 'readChunk'> | undefined;
  readonly recorder: Recorder;
  /** An inline blob's bytes, verified. */
  readInline(meta: BlobMeta): Promise<Buffer>;
  /** The file of a blob (or shard column) held in a file of its own. */
  filePath(meta: BlobMeta): string;
  /** Whether the file is read past the page cache (setting columnFileReads: direct, for columns). */
  readsDirect(meta: BlobMeta): boolean;
  /** A corrupt copy was found: counted, and the error to throw. */
  corruption(meta: BlobMeta): BlobstoreError;
  /** Whether the index still holds the file of `meta` (else a read that found none raced its removal). */
  holdsFile(meta: BlobMeta): boolean;
  /** The files whose digest table joined into their checksum lately. */
  readonly tables: CheckedTables;
}

/** The copy was removed (deleted, handed off) between its lookup and its read: not found, not corrupt. */
const removedMeanwhile = (meta: BlobMeta): BlobstoreError =>
  new BlobstoreError('not_found', `${'shard' in meta ? 'column' : 'blob'} ${meta.id.toString('hex')} was removed from this node as it was read`);

const shortFile = (): BlobstoreError => new BlobstoreError('corruption', 'blob file is shorter than its footer says');

/** Block size O_DIRECT reads are aligned to (offset, length and buffer): any device's logical block divides it. */
const DIRECT_ALIGN = 4096;

/** A file's O_DIRECT handle for one read; not `usable` (the read goes through the page cache) once the file system refused a read. */
interface DirectFile {
  readonly handle: fsp.FileHandle;
  usable: boolean;
}

/** An O_DIRECT handle of `path`, or undefined where the file system refuses one (tmpfs). */
async function openDirect(path: string): Promise<DirectFile | undefined> {
  try {
    return { handle: await fsp.open(path, fsc.O_RDONLY | fsc.O_DIRECT), usable: true };
  } catch {
    return undefined;
  }
}

/**
 * Reads [at, at + length) into `buf` past the page cache, in whole blocks (the chunk's last block
 * takes the bytes after it in the file along, within the buffer): how many of the chunk's bytes
 * were read. After a refused read (EINVAL) the rest of the file is read through the cache.
 */
async function readPastCache(direct: DirectFile, buf: Buffer, length: number, at: number): Promise<number> {
  const want = Math.min(Math.ceil(length / DIRECT_ALIGN) * DIRECT_ALIGN, buf.length);
  let got = 0;
  try {
    while (got < want) {
      const { bytesRead } = await direct.handle.read(buf, got, want - got, at + got);
      if (bytesRead === 0) break;
      got += bytesRead;
      // A short read ends a direct read only at the end of the file (its last, partial block).
      if (got % DIRECT_ALIGN !== 0) break;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
    direct.usable = false;
    return 0;
  }
  return Math.min(got, length);
}

/**
 * Chunk `index` read into `buf` and checked against its digest (false: it does not match). On a
 * worker thread when the pool takes it (one hop, so checks run as far ahead as reads); else read
 * on libuv's thread pool and hashed by the engine's digester.
 */
async function readVerified(engine: BlobSource, handle: fsp.FileHandle, buf: Buffer, layout: BlobFileLayout, index: number, check: boolean, direct: DirectFile | undefined, root: Buffer | undefined): Promise<Buffer | false> {
  const at = index * layout.chunkBytes;
  const length = Math.min(layout.chunkBytes, layout.size - at);
  const chunk = buf.subarray(0, length);
  const digest = root ?? layout.digests.subarray(index * DIGEST_BYTES, (index + 1) * DIGEST_BYTES);
  const pooled = check && !direct?.usable ? engine.workerPool?.readChunk(handle.fd, buf, at, length, digest, layout.version === FILE_VERSION_TREE, root !== undefined) : undefined;
  if (pooled) {
    const [n, readMs, verifyMs] = await pooled;
    const now = ticks();
    engine.recorder.stage('read', ticksAgo(readMs, now));
    if (n >= 0) engine.recorder.stage('verify', ticksAgo(verifyMs, now));
    if (n === -1) return false;
    if (n < length) throw shortFile();
    return chunk;
  }
  const readStart = ticks();
  let done = direct?.usable ? await readPastCache(direct, buf, length, at) : 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, at + done);
    if (bytesRead === 0) throw shortFile();
    done += bytesRead;
  }
  engine.recorder.stage('read', readStart);
  if (!check) return chunk;
  const verifyStart = ticks();
  const intact = await chunkIntact(layout, index, chunk, engine, root);
  engine.recorder.stage('verify', verifyStart);
  return intact && chunk;
}

/**
 * Whether a file's digest table joins into the checksum of what it holds (a blob's, of which its
 * id is the first 16 bytes, or a shard column's own): each chunk is checked against its entry as
 * it is read, and the entries against the checksum here, so a file that is whole but another
 * blob's or column's (same size, its own digests) is caught before a byte goes. A format-2 table
 * of two or more chunks holds chaining values whose root is the checksum; one chunk's entry is
 * not the root (the root is hashed apart), so that chunk is checked against the checksum itself
 * as it is read (readFileBlob; by a reader that checks the chunks itself, column-check.ts). A
 * format-1 table holds each chunk's own digest: one chunk's is the checksum; more do not join
 * into it, and are taken as they are.
 *
 * A table found to match is remembered by the file as it was then (device, inode, change time): a
 * range read of a 10 GiB blob would otherwise join 10,240 chaining values (~1.5 ms) for each
 * request. A write or rename in the file's place changes its key.
 */
export class CheckedTables {
  private readonly matched = new TtlCache<true>(4096, 10 * 60_000);

  matches(layout: BlobFileLayout, meta: BlobMeta): boolean {
    const count = layout.digests.length / DIGEST_BYTES;
    // A format-1 file of one chunk: its entry is that chunk's digest, the checksum of the whole.
    if (layout.version !== FILE_VERSION_TREE) return count !== 1 || layout.digests.equals(meta.checksum);
    if (count < 2) return true;
    const key = `${layout.fileKey}:${meta.checksum.toString('hex')}`;
    if (this.matched.get(key)) return true;
    const root = Buffer.allocUnsafe(DIGEST_BYTES);
    rootOf(layout.digests, count, root, 0);
    if (!root.equals(meta.checksum)) return false;
    this.matched.set(key, true);
    return true;
  }
}

/**
 * Hands `range` (default: all) of the blob to `sink` in verified chunks of at most 1 MiB; with
 * `values`, in chunks the reader checks (ChunkValues).
 */
export async function readBlob(engine: BlobSource, meta: BlobMeta, sink: ChunkSink, range: ByteRange = { start: 0, end: meta.size }, values?: ChunkValues): Promise<void> {
  if (values && (range.start % CHUNK_BYTES !== 0 || (range.end % CHUNK_BYTES !== 0 && range.end !== meta.size))) {
    throw new BlobstoreError('invalid_argument', `bytes ${range.start}-${range.end - 1} do not start and end on ${CHUNK_BYTES}-byte chunks, as a read the reader checks must`);
  }
  if (meta.location === Location.FILE) return readFileBlob(engine, meta, sink, range, values);
  const data = (await engine.readInline(meta)).subarray(range.start, range.end);
  // A record is checked whole: its chunks' values come from the checked bytes.
  if (values) await values(chunkValuesOf(data, range.start));
  if (data.length === 0) return sink(data, 0);
  for (let at = 0, i = 0; at < data.length; at += CHUNK_BYTES, i++) await sink(data.subarray(at, at + CHUNK_BYTES), i);
}

/** The chaining values of the chunks of `bytes`, which start at `offset` (a chunk boundary) of what they are part of. */
export function chunkValuesOf(bytes: Buffer, offset: number): Buffer {
  const count = Math.ceil(bytes.length / CHUNK_BYTES);
  const cvs = Buffer.allocUnsafe(count * CV_BYTES);
  for (let i = 0; i < count; i++) subtreeCv(bytes.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES), offset + i * CHUNK_BYTES, cvs, i * CV_BYTES);
  return cvs;
}

async function readFileBlob(engine: BlobSource, meta: BlobMeta, sink: ChunkSink, range: ByteRange, values: ChunkValues | undefined): Promise<void> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(engine.filePath(meta), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw engine.holdsFile(meta) ? engine.corruption(meta) : removedMeanwhile(meta);
    throw err;
  }
  const buffers: Buffer[] = [];
  const reads: Promise<Buffer | false>[] = [];
  let direct: DirectFile | undefined;
  try {
    const layout = await readLayout(handle, meta.size).catch((err: unknown) => {
      throw err instanceof BlobstoreError ? engine.corruption(meta) : err;
    });
    if (!engine.tables.matches(layout, meta)) throw engine.corruption(meta);
    if (range.end <= range.start) {
      await values?.(Buffer.alloc(0));
      return await sink(Buffer.alloc(0), 0);
    }
    // Whole chunks are read and verified; the range's ends are cut from the first and last.
    const first = Math.floor(range.start / layout.chunkBytes);
    const last = Math.floor((range.end - 1) / layout.chunkBytes);
    const count = last - first + 1;
    // The reader checks the chunks against the table's chaining values (a format-1 table's are checked here).
    const check = values === undefined || layout.version !== FILE_VERSION_TREE || layout.chunkBytes !== CHUNK_BYTES;
    // One chunk of format 2: its entry does not join into the checksum (CheckedTables), so the
    // chunk is checked against the checksum itself.
    const root = layout.version === FILE_VERSION_TREE && layout.digests.length === DIGEST_BYTES ? meta.checksum : undefined;
    if (values) await values(check ? undefined : layout.digests.subarray(first * DIGEST_BYTES, (last + 1) * DIGEST_BYTES));
    for (let i = 0; i < Math.min(engine.config.readAheadChunks, count); i++) buffers.push(await engine.pool.acquire());
    // Columns read past the page cache (columnFileReads=direct): whole blocks into the pool's
    // page-aligned buffers, checked in line (not on the worker pool).
    if (engine.readsDirect(meta) && layout.chunkBytes % DIRECT_ALIGN === 0 && layout.chunkBytes <= buffers[0]!.length) direct = await openDirect(engine.filePath(meta));
    const startRead = (i: number): void => {
      const read = readVerified(engine, handle, buffers[i % buffers.length]!, layout, first + i, check, direct, root);
      read.catch(() => undefined); // awaited in turn, or settled in finally
      reads[i % buffers.length] = read;
    };
    for (let i = 0; i < buffers.length; i++) startRead(i);
    for (let i = 0; i < count; i++) {
      const chunk = await reads[i % buffers.length]!;
      if (chunk === false) throw engine.corruption(meta);
      const base = (first + i) * layout.chunkBytes;
      const from = Math.max(range.start - base, 0);
      const to = Math.min(range.end - base, chunk.length);
      await sink(from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to), i);
      // This chunk's buffer is free again: read the one readAheadChunks on into it.
      if (i + buffers.length < count) startRead(i + buffers.length);
    }
  } finally {
    // Reads ahead may still be filling buffers: let them settle before the buffers go back.
    await Promise.allSettled(reads);
    await handle.close();
    await direct?.handle.close();
    for (const b of buffers) engine.pool.release(b);
  }
}
