/**
 * Small files read whole, synchronously: open, read, close (no fstat, no FileHandle). A small
 * file read through fs.promises (open, fstat, read, close: four pool round trips and a
 * FileHandle) cost more CPU than its store: 10,000 files of 4 KiB took 4.7 s.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { BATCH_FRAME_HEAD_BYTES, writeFrameHead } from '../blob/batch.js';

/** A small file whole, with the size its stat gave. */
export function readWhole(file: string, size: number): Buffer {
  const buf = Buffer.allocUnsafe(size);
  readInto(file, buf);
  return buf;
}

/** Fills `into` (the file's size, as its stat gave) with the file. */
export function readInto(file: string, into: Uint8Array): void {
  const fd = openSync(file, 'r');
  try {
    let at = 0;
    while (at < into.length) {
      const n = readSync(fd, into, at, into.length - at, at);
      if (n === 0) throw new Error(`${file} shrank while it was read (${at} of ${into.length} bytes)`);
      at += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** What readFrames did: the frames' bytes and count, and why files could not be read (by index). */
export interface Framed {
  errors: Record<number, string>;
  bytes: number;
  count: number;
}

/**
 * Reads `files` (of `sizes`, as their stat gave) into `into` as a batch body, each behind its
 * frame head; a file that cannot be read is left out (its error says why).
 */
export function readFrames(files: readonly string[], sizes: readonly number[], into: Uint8Array): Framed {
  const errors: Record<number, string> = {};
  let at = 0;
  let count = 0;
  for (let i = 0; i < files.length; i++) {
    const size = sizes[i]!;
    const bytesAt = writeFrameHead(into, at, size);
    try {
      readInto(files[i]!, into.subarray(bytesAt, bytesAt + size));
      at = bytesAt + size;
      count++;
    } catch (err) {
      errors[i] = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    }
  }
  return { errors, bytes: at, count };
}

/** The bytes a batch body of files of `sizes` takes. */
export const framedBytes = (sizes: readonly number[]): number => sizes.reduce((sum, size) => sum + BATCH_FRAME_HEAD_BYTES + size, 0);
