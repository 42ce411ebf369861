/**
 * Where queued log records wait, serialized as they will lie on disk: each record is given its
 * place in an arena chunk when it is appended (labels, data and padding copied in then, the
 * header's room left for the log to fill once the record has its sequence number), so a batch
 * of records appended one after another is one contiguous range of a chunk, written with one
 * pwrite, and a small store's body is copied once: from the socket's buffer into its record.
 *
 *   chunk:  | header | labels | data | pad | header | labels | data | pad | ...   free
 *           ^ record (at, length)          ^ next record                    ^ used
 *
 * A chunk is reused once every record placed in it has been written or refused (`live` counts
 * them); the one records go into (`current`) starts again from its beginning when that happens.
 * At most `maxFreeChunks` empty chunks are kept for reuse; the rest go to the garbage collector.
 */
import { HEADER_BYTES } from './record.js';
import { copyBytes } from '../util/copy-bytes.js';

export class ArenaChunk {
  /** Bytes handed out so far. */
  used = 0;
  /** Records placed here and not yet written or refused. */
  live = 0;

  constructor(readonly buf: Buffer) {}
}

/** What the arena needs of a record: its bytes, and where they go (set by place()). */
export interface ArenaRecord {
  labels: Buffer;
  dataLength: number;
  /** The record's length on disk (header, labels, data, padding). */
  length: number;
  chunk: ArenaChunk | undefined;
  /** Where the record starts in its chunk. */
  at: number;
}

export class RecordArena {
  private current: ArenaChunk;
  private readonly free: ArenaChunk[] = [];

  constructor(
    /** Bytes per chunk; a record larger than this gets a chunk of its own size. */
    private readonly chunkBytes: number,
    private readonly maxFreeChunks = 4,
  ) {
    this.current = new ArenaChunk(Buffer.allocUnsafeSlow(chunkBytes));
  }

  /**
   * Places `r` (its `length` set) and copies its labels and `data` (`dataLength` bytes, or
   * exactly that many when an ArrayBuffer; may be a buffer reused after this call) into its place; the padding is zeroed. The header's
   * 104 bytes are left for the log to write.
   */
  place(r: ArenaRecord, data: Uint8Array | ArrayBuffer | undefined): void {
    let chunk = this.current;
    if (chunk.used + r.length > chunk.buf.length) chunk = this.next(r.length);
    const at = chunk.used;
    chunk.used += r.length;
    chunk.live++;
    r.chunk = chunk;
    r.at = at;
    const buf = chunk.buf;
    let p = at + HEADER_BYTES;
    if (r.labels.length > 0) p += r.labels.copy(buf, p);
    if (data !== undefined && r.dataLength > 0) {
      // An ArrayBuffer (uWS's, a small store's body) is copied without a view made of it.
      if (data.byteLength === r.dataLength) copyBytes(data, buf, p);
      else buf.set((data as Uint8Array).subarray(0, r.dataLength), p);
      p += r.dataLength;
    }
    if (p < at + r.length) buf.fill(0, p, at + r.length);
  }

  /** Where a placed record's data starts in its chunk (after its header and labels). */
  static dataAt(r: ArenaRecord): number {
    return r.at + HEADER_BYTES + r.labels.length;
  }

  /** The record is written (or refused): its place may be reused once its chunk's records all are. */
  release(r: ArenaRecord): void {
    const chunk = r.chunk;
    if (chunk === undefined) return;
    r.chunk = undefined;
    if (--chunk.live > 0) return;
    if (chunk === this.current) {
      chunk.used = 0;
    } else if (this.free.length < this.maxFreeChunks && chunk.buf.length === this.chunkBytes) {
      chunk.used = 0;
      this.free.push(chunk);
    }
  }

  /** A chunk with room for `length` bytes becomes the current one. */
  private next(length: number): ArenaChunk {
    const old = this.current;
    if (old.live === 0) old.used = 0;
    if (old.live === 0 && old.buf.length >= length) return old;
    if (old.live === 0 && this.free.length < this.maxFreeChunks && old.buf.length === this.chunkBytes) this.free.push(old);
    const chunk = length <= this.chunkBytes ? (this.free.pop() ?? new ArenaChunk(Buffer.allocUnsafeSlow(this.chunkBytes))) : new ArenaChunk(Buffer.allocUnsafeSlow(length));
    this.current = chunk;
    return chunk;
  }

  /**
   * The byte ranges of the first `count` of `records` (placed, in log order) as triples
   * [buffer, start, length] from out[at] on (records back to back in a chunk make one range);
   * returns the triples added. No views are made: the log's batch writer takes triples.
   */
  static rangesInto(records: readonly ArenaRecord[], count: number, out: (Buffer | number)[], at: number): number {
    let chunk: ArenaChunk | undefined;
    let start = 0;
    let end = 0;
    let n = 0;
    for (let i = 0; i < count; i++) {
      const r = records[i]!;
      if (r.chunk === chunk && r.at === end) {
        end += r.length;
        continue;
      }
      if (chunk !== undefined) putRange(out, at + 3 * n++, chunk.buf, start, end);
      chunk = r.chunk;
      start = r.at;
      end = r.at + r.length;
    }
    if (chunk !== undefined) putRange(out, at + 3 * n++, chunk.buf, start, end);
    return n;
  }
}

function putRange(out: (Buffer | number)[], at: number, buf: Buffer, start: number, end: number): void {
  out[at] = buf;
  out[at + 1] = start;
  out[at + 2] = end - start;
}
