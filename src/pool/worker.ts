/**
 * The worker side of the process's Piscina pool (pool.ts), one file for every kind of task:
 * `cv`, a 1 MiB chunk's chaining value in its blob's BLAKE3 tree, and `digest`, BLAKE3 of a chunk
 * on its own (a format-1 file's), both read in place from shared memory (the chunk buffers are
 * SharedArrayBuffer views, so nothing is copied); `readChunk`, a chunk of a blob file read into
 * shared memory and checked against its digest in one task; and `ec`, a Reed-Solomon task
 * (src/ec/worker.ts).
 */
import { blake3 } from '@napi-rs/blake-hash';
import { readSync } from 'node:fs';
import { chunkCvOf } from '../hash/blake3-tree.js';

export { default as ec } from '../ec/worker.js';

export interface DigestTask {
  buffer: SharedArrayBuffer;
  offset: number;
  length: number;
}

export function digest(task: DigestTask): Uint8Array {
  return blake3(Buffer.from(task.buffer, task.offset, task.length));
}

export interface CvTask extends DigestTask {
  /** The chunk's offset in its blob. */
  at: number;
  withRoot: boolean;
}

export function cv(task: CvTask): Uint8Array {
  // A copy of its own: chunkCvOf's Buffer is a slice of Node's 8 KiB pool, which the answer's
  // structured clone would copy whole.
  return new Uint8Array(chunkCvOf(Buffer.from(task.buffer, task.offset, task.length), task.at, task.withRoot));
}

export interface ReadChunkTask {
  /** An open descriptor of the blob file (descriptors are the process's, so any thread reads it). */
  fd: number;
  position: number;
  length: number;
  buffer: SharedArrayBuffer;
  offset: number;
  /** The chunk's digest from the file's table. */
  digest: Uint8Array;
  /** The digest is the chunk's chaining value at `position` in its blob's tree (format 2), else its own BLAKE3 digest. */
  tree: boolean;
  /** The digest is the whole file's checksum, of which this chunk is all (format 2, one chunk). */
  root: boolean;
}

/**
 * [bytes read, read ms, verify ms]; bytes read is -1 when the chunk does not match its digest,
 * and fewer than asked when the file ends early. A failed read throws (its errno reaches the caller).
 */
export function readChunk(task: ReadChunkTask): [number, number, number] {
  const view = Buffer.from(task.buffer, task.offset, task.length);
  const t0 = performance.now();
  let done = 0;
  while (done < task.length) {
    const n = readSync(task.fd, view, done, task.length - done, task.position + done);
    if (n === 0) return [done, performance.now() - t0, 0];
    done += n;
  }
  const t1 = performance.now();
  const actual = task.root ? chunkCvOf(view, 0, true).subarray(32) : task.tree ? chunkCvOf(view, task.position, false) : blake3(view);
  const intact = actual.equals(task.digest);
  return [intact ? done : -1, t1 - t0, performance.now() - t1];
}
