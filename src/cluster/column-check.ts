/**
 * A column's bytes checked by the node that reads them rather than by their holder
 * (docs/erasure-coding.md): an EC read hashes every byte it sends once, where a holder's check of
 * each chunk and the reader's check of the whole blob against its id hashed it twice. Each
 * 1 MiB chunk the reader takes is checked against the chaining value the holder's file keeps for
 * it (its digest table, itself checked against the column's checksum when the file is opened)
 * before the chunk is handed on: a corrupt chunk, whether from the disk or the network, fails the
 * column's stream, and the read rebuilds its pieces from other columns.
 *
 *   GET /internal/v1/shards/{id}/{index} with `X-Blobstore-Chunk-Values: 1`, a range on chunks
 *     ──▶ "BSCV", u32 mode (1: the chunks' chaining values follow and the bytes are not checked
 *         by the holder; 0: the holder checked them, zeros follow), the column's own checksum (32
 *         bytes), 32 bytes per chunk, the bytes
 *
 * A reader that knows the checksum the column's store computed (the blob's column checksums)
 * refuses a column whose own checksum is another before any of its bytes: a column wrong though
 * it matches its own checksum is read around, as a corrupt one is.
 *
 * Only a range that starts on a chunk and ends on one (or at the column's end) is read so; a
 * holder whose file keeps no chaining values (format 1) checks the chunks itself (mode 0).
 *
 * With chunk digests in line (setting chunkDigests), a chunk is hashed as it arrives, 64 KiB at a
 * time (ArrivalHashes): the kernel has just copied those bytes in, so they are in this core's
 * cache, where a chunk taken later from the read's queue comes from memory and hashes at about
 * two-thirds the rate (docs/measurements.md). The parts' chaining values are joined when the
 * chunk is taken, and its bytes are handed on only if the join matches.
 */
import { BlobstoreError } from '../errors/errors.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { CV_BYTES, joinCvs, subtreeCv } from '../hash/blake3-tree.js';
import type { ByteRange, ChunkCv } from '../service/local-store.js';

/** A stream of a column's bytes, taken by exact lengths (column-stream.ts's ColumnStream). */
interface Stream {
  take(length: number): Promise<Buffer>;
  /** How the holder answered (column-stream.ts's ColumnStream.ready). */
  readonly ready: Promise<Answer>;
  close(): void;
}

/** How a holder answered a column stream: with the column, refused (no such column there), or silent. */
export type Answer = 'column' | 'refused' | 'silent';

/** The request header that asks for the chunks' chaining values before the bytes. */
export const CHUNK_VALUES_HEADER = 'x-blobstore-chunk-values';

const MAGIC = 0x56435342; // "BSCV", little-endian
const CHECKSUM_AT = 8;
const HEAD_BYTES = CHECKSUM_AT + 32;
const CHECKED_BY_READER = 1;

/** Whether a read of `range` of a column of `columnBytes` can be checked by its reader. */
export function readerChecks(range: ByteRange, columnBytes: number): boolean {
  return range.end > range.start && range.start % CHUNK_BYTES === 0 && (range.end % CHUNK_BYTES === 0 || range.end === columnBytes);
}

/**
 * Whether the cells of a layout with shards of `shardBytes` lie within the column's 1 MiB chunks
 * (a cell is at most 1 MiB and starts on a shard or 1 MiB into one): shards that divide 1 MiB or
 * are a multiple of it (the spec's 1 MiB and 16 MiB).
 */
export function layoutChecks(shardBytes: number): boolean {
  return shardBytes > 0 && (shardBytes % CHUNK_BYTES === 0 || CHUNK_BYTES % shardBytes === 0);
}

/** The chunks `range` covers (it starts on one). */
function chunksOf(range: ByteRange): number {
  return Math.ceil((range.end - range.start) / CHUNK_BYTES);
}

/** Bytes before the range's bytes. */
export function valuesPrefixBytes(range: ByteRange): number {
  return HEAD_BYTES + chunksOf(range) * CV_BYTES;
}

/** The prefix for `range` of a column whose checksum is `checksum`: its chunks' chaining values, or (undefined) a holder that checked the chunks itself. */
export function valuesPrefix(cvs: Buffer | undefined, range: ByteRange, checksum: Buffer): Buffer {
  const count = chunksOf(range);
  if (cvs && cvs.length !== count * CV_BYTES) throw new BlobstoreError('internal', `${cvs.length / CV_BYTES} chaining values for ${count} chunks`);
  const prefix = Buffer.alloc(HEAD_BYTES + count * CV_BYTES);
  prefix.writeUInt32LE(MAGIC, 0);
  prefix.writeUInt32LE(cvs ? CHECKED_BY_READER : 0, 4);
  checksum.copy(prefix, CHECKSUM_AT, 0, 32);
  cvs?.copy(prefix, HEAD_BYTES);
  return prefix;
}

/** What a chunk's check hashes at a time as its bytes arrive: a power of two of BLAKE3's leaves that divides a chunk. */
const PART_BYTES = 64 * 1024;

/**
 * A remote column's chunks hashed as their bytes arrive: told of every byte its queue takes in
 * (ByteQueue's `arrivals`), it hashes each whole 64 KiB part of a chunk that one slab holds,
 * in order; chunkCv() hashes what is left of a chunk (a short last part, a part that was not
 * whole in one slab, and every part after it) from the bytes taken, and joins the parts.
 */
export class ArrivalHashes {
  /** Bytes of the stream seen: the values prefix first, then the range's bytes. */
  private seen = 0;
  /** Column offset of the next part to hash. */
  private next: number;
  /** The slab bytes last arrived in, and the column offset its byte 0 stands for. */
  private slab: Buffer | undefined;
  private slabAt = 0;
  /** Per chunk (by column offset), its parts' chaining values, and how many were hashed in order. */
  private readonly chunks = new Map<number, { cvs: Buffer; parts: number }>();
  /** The holder checked the bytes itself (mode 0): nothing is hashed here. */
  private off = false;

  constructor(
    private readonly range: ByteRange,
    private readonly prefixBytes: number,
  ) {
    this.next = range.start;
  }

  /** Bytes [from, to) of `slab` are the stream's next bytes. */
  arrived(slab: Buffer, from: number, to: number): void {
    if (this.off) return;
    const dataAt = this.seen - this.prefixBytes;
    this.seen += to - from;
    if (slab !== this.slab) {
      this.slab = slab;
      this.slabAt = this.range.start + dataAt - from;
    }
    const end = Math.min(this.range.end, this.range.start + this.seen - this.prefixBytes);
    for (; this.next + PART_BYTES <= end; this.next += PART_BYTES) {
      const at = this.next;
      const inSlab = at - this.slabAt;
      const chunkAt = at - ((at - this.range.start) % CHUNK_BYTES);
      let chunk = this.chunks.get(chunkAt);
      if (!chunk) {
        chunk = { cvs: Buffer.allocUnsafe((CHUNK_BYTES / PART_BYTES) * CV_BYTES), parts: 0 };
        this.chunks.set(chunkAt, chunk);
      }
      const part = (at - chunkAt) / PART_BYTES;
      if (chunk.parts !== part || inSlab < 0 || inSlab + PART_BYTES > to) continue;
      subtreeCv(slab.subarray(inSlab, inSlab + PART_BYTES), at, chunk.cvs, part * CV_BYTES);
      chunk.parts++;
    }
  }

  /** The chaining value of the chunk at column offset `at`, whose bytes are `bytes`: the parts not hashed yet hashed now, all joined. */
  chunkCv(bytes: Buffer, at: number): Buffer {
    const count = Math.max(1, Math.ceil(bytes.length / PART_BYTES));
    const chunk = this.chunks.get(at);
    this.chunks.delete(at);
    const cvs = chunk?.cvs ?? Buffer.allocUnsafe(count * CV_BYTES);
    for (let part = chunk?.parts ?? 0; part < count; part++) {
      subtreeCv(bytes.subarray(part * PART_BYTES, (part + 1) * PART_BYTES), at + part * PART_BYTES, cvs, part * CV_BYTES);
    }
    const cv = Buffer.allocUnsafe(CV_BYTES);
    joinCvs(cvs, count, cv, 0);
    return cv;
  }

  /** The holder checked the bytes itself: none is hashed here from now on. */
  stop(): void {
    this.off = true;
    this.chunks.clear();
  }

  /** The chunk at `at` is checked another way: its parts are let go. */
  drop(at: number): void {
    this.chunks.delete(at);
  }
}

/**
 * A column stream whose bytes are checked here, a chunk at a time: each 1 MiB chunk of the range
 * is taken whole from the holder's stream and checked before any of it is handed on; takes are
 * served from the checked chunk, and none may cross from one chunk into the next (an EC read's
 * cells lie within the column's chunks where its shard size divides 1 MiB or is a multiple of it:
 * layoutChecks). A chunk that does not match fails the take and the stream, and `onCorrupt`
 * hears of it (the holder is asked to check its column: a corrupt one there is dropped and
 * rebuilt).
 */
export class CheckedColumn implements Stream {
  private readonly values: Promise<Buffer | undefined>;
  /** Takes are served one at a time, in call order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The checked chunk being handed out, and how much of it has been. */
  private chunk: Buffer | undefined;
  private used = 0;
  /** Column offset of the next chunk to take from the stream. */
  private next: number;
  private failure: Error | undefined;
  /** The column's checksum, for a range that is all of a column of one chunk. */
  private root: Buffer | undefined;

  constructor(
    private readonly stream: Stream,
    private readonly range: ByteRange,
    private readonly chunkCv: ChunkCv,
    /** One more holder of a view's slab, and one fewer (Slabs.ref, Slabs.release). */
    private readonly slabs: { ref(view: Buffer): void; release(view: Buffer): void },
    private readonly onCorrupt: (offset: number, length: number) => void,
    private readonly what: string,
    /** Bytes in the column: a range that is all of a column of one chunk is checked against the column's checksum too. */
    columnBytes: number,
    /** The checksum the column's store computed, when known; a column with another is `onWrong`. */
    expected?: { checksum: Buffer; onWrong: () => void },
    /** The chunks' parts hashed as they arrived (chunk digests in line), else each chunk is hashed with `chunkCv` once taken. */
    private readonly arrivals?: ArrivalHashes,
  ) {
    this.next = range.start;
    this.values = stream.take(valuesPrefixBytes(range)).then((prefix) => {
      const copy = Buffer.from(prefix);
      slabs.release(prefix);
      if (copy.readUInt32LE(0) !== MAGIC) throw new BlobstoreError('corruption', `${what}: the holder sent no chunk values`);
      const checksum = copy.subarray(CHECKSUM_AT, HEAD_BYTES);
      if (expected && !checksum.equals(expected.checksum)) {
        expected.onWrong();
        throw this.fail(new BlobstoreError('corruption', `${what}: the column's checksum is not the one its store computed`));
      }
      // A chunk's chaining value is not the column's checksum (the root is hashed apart): the one
      // chunk of a column is checked against both, so that a whole file that is another column's
      // (its own chaining value with it) is caught here too.
      if (range.start === 0 && range.end === columnBytes && columnBytes <= CHUNK_BYTES) this.root = checksum;
      if (copy.readUInt32LE(4) === CHECKED_BY_READER) return copy.subarray(HEAD_BYTES);
      this.arrivals?.stop();
      return undefined;
    });
    this.values.catch(() => undefined); // the first take reports it
  }

  /** How the holder answered: its stream's first bytes are the chunks' values (ColumnStream.ready). */
  get ready(): Promise<Answer> {
    return this.stream.ready;
  }

  take(length: number): Promise<Buffer> {
    const taken = this.queue.then(() => this.serve(length));
    this.queue = taken.catch(() => undefined);
    return taken;
  }

  private async serve(length: number): Promise<Buffer> {
    if (this.failure) throw this.failure;
    const values = await this.values;
    // A holder that checked its chunks itself (a format-1 file): its bytes are taken as they come.
    if (values === undefined) return this.stream.take(length);
    this.chunk ??= await this.checkedChunk(values);
    const chunk = this.chunk;
    if (length > chunk.length - this.used) {
      throw this.fail(new BlobstoreError('internal', `${this.what}: a take of ${length} bytes crosses a chunk's end`));
    }
    const view = chunk.subarray(this.used, this.used + length);
    this.used += length;
    if (this.used < chunk.length) {
      this.slabs.ref(view);
      return view;
    }
    // The chunk's last view takes over its reference.
    this.chunk = undefined;
    this.used = 0;
    return view;
  }

  /** The next chunk of the range, taken whole and checked against its chaining value. */
  private async checkedChunk(values: Buffer): Promise<Buffer> {
    const at = this.next;
    const length = Math.min(CHUNK_BYTES, this.range.end - at);
    if (length <= 0) throw this.fail(new BlobstoreError('internal', `${this.what}: a take past the range's end`));
    this.next += length;
    const bytes = await this.stream.take(length);
    const index = (at - this.range.start) / CHUNK_BYTES;
    let cv: Buffer;
    try {
      // A chunk that is all of its column is checked against the column's checksum too: BLAKE3's
      // root of it, which only a whole-chunk hash gives.
      if (this.arrivals && this.root === undefined) {
        cv = this.arrivals.chunkCv(bytes, at);
      } else {
        this.arrivals?.drop(at);
        cv = await this.chunkCv(bytes, at, this.root !== undefined);
      }
    } catch (err) {
      this.slabs.release(bytes);
      throw this.fail(err as Error);
    }
    const rooted = this.root === undefined || cv.compare(this.root, 0, CV_BYTES, CV_BYTES, 2 * CV_BYTES) === 0;
    if (rooted && cv.compare(values, index * CV_BYTES, (index + 1) * CV_BYTES, 0, CV_BYTES) === 0) return bytes;
    this.slabs.release(bytes);
    this.onCorrupt(at, length);
    throw this.fail(new BlobstoreError('corruption', `${this.what}: bytes ${at}-${at + length - 1} do not match their chaining value`));
  }

  private fail(err: Error): Error {
    this.failure ??= err;
    this.stream.close();
    return err;
  }

  close(): void {
    if (this.chunk) this.slabs.release(this.chunk);
    this.chunk = undefined;
    this.stream.close();
  }
}
