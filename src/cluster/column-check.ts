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
 */
import { BlobstoreError } from '../errors/errors.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { CV_BYTES } from '../hash/blake3-tree.js';
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
      return copy.readUInt32LE(4) === CHECKED_BY_READER ? copy.subarray(HEAD_BYTES) : undefined;
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
      cv = await this.chunkCv(bytes, at, this.root !== undefined);
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
