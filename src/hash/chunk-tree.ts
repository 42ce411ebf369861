/**
 * A blob's BLAKE3 digest joined from the chaining values of its 1 MiB chunks (blake3-tree.ts), as
 * they settle in any order: each chunk is hashed on its own (on a worker thread, or in line) and
 * the root joins them, so no one thread has to read the whole blob.
 */
import { DIGEST_BYTES, blake3 } from './blake3.js';
import { CV_BYTES, rootOf } from './blake3-tree.js';

export class ChunkTree {
  /** Chunks' chaining values, in order: grown by doubling. */
  private table = Buffer.allocUnsafe(64 * CV_BYTES);
  /** The first chunk's digest on its own: the blob's, when it is the only chunk. */
  private firstRoot: Buffer | undefined;

  /**
   * Chunk `index`'s chaining value (the first 32 bytes of `cv`); the first chunk's `cv` also
   * carries its own digest after it (chunkCv with `withRoot`).
   */
  set(index: number, cv: Buffer): void {
    while (this.table.length < (index + 1) * CV_BYTES) this.table = Buffer.concat([this.table, Buffer.alloc(this.table.length)]);
    cv.copy(this.table, index * CV_BYTES, 0, CV_BYTES);
    if (index === 0) this.firstRoot = Buffer.from(cv.subarray(CV_BYTES, 2 * CV_BYTES));
  }

  /** The chaining values of the first `count` chunks (a view). */
  cvs(count: number): Buffer {
    return this.table.subarray(0, count * CV_BYTES);
  }

  /** The digest of a blob of `count` chunks, every one of them set. */
  digest(count: number): Buffer {
    if (count === 0) return blake3(Buffer.alloc(0));
    if (count === 1) return this.firstRoot!;
    const digest = Buffer.allocUnsafe(DIGEST_BYTES);
    rootOf(this.table, count, digest, 0);
    return digest;
  }
}
