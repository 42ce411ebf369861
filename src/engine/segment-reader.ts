/**
 * Read handles for segment files. Small records are read synchronously: a pread of a few KiB from
 * the page cache costs less than a thread-pool hop (decisions.md §10: ~33k GET/s prototype). Larger
 * ones go through the thread pool; a segment being removed waits for reads in progress.
 */
import { closeSync, openSync, read, readSync, constants as fsc } from 'node:fs';
import { BlobstoreError } from '../errors/errors.js';
import type { SegmentStore } from './segment-store.js';

/** Records up to this size are read synchronously. */

export class SegmentReader {
  private readonly fds = new Map<number, number>();
  private readonly pins = new Map<number, number>();
  private readonly unpinned = new Map<number, () => void>();

  constructor(
    private readonly store: SegmentStore,
    /** Reads up to this size run on the calling thread (setting syncReadMaxBytes). */
    readonly syncReadMaxBytes: number,
  ) {
    this.scratch = Buffer.allocUnsafeSlow(syncReadMaxBytes);
  }

  private fd(segment: number): number {
    let fd = this.fds.get(segment);
    if (fd === undefined) {
      fd = openSync(this.store.path(segment), fsc.O_RDONLY);
      this.fds.set(segment, fd);
    }
    return fd;
  }

  /** One buffer for every synchronous read whose bytes are copied out before the next one. */
  private readonly scratch: Buffer;

  /** A small read on the calling thread (at most syncReadMaxBytes), into `into` or a new buffer. */
  readSmall(segment: number, position: number, length: number, into?: Buffer): Buffer {
    const buf = into ?? Buffer.allocUnsafe(length);
    const n = length === 0 ? 0 : readSync(this.fd(segment), buf, 0, length, position);
    if (n !== length) throw shortRead(segment, position, length, n);
    return buf.subarray(0, length);
  }

  /** readSmall into the shared scratch buffer: valid only until the next call. */
  readSmallScratch(segment: number, position: number, length: number): Buffer {
    return this.readSmall(segment, position, length, this.scratch);
  }

  async read(segment: number, position: number, length: number): Promise<Buffer> {
    if (length <= this.syncReadMaxBytes) return this.readSmall(segment, position, length);
    const buf = Buffer.allocUnsafe(length);
    const fd = this.fd(segment);
    this.pins.set(segment, (this.pins.get(segment) ?? 0) + 1);
    try {
      const n = await new Promise<number>((resolve, reject) =>
        read(fd, buf, 0, length, position, (err, bytes) => (err ? reject(err) : resolve(bytes))),
      );
      if (n !== length) throw shortRead(segment, position, length, n);
      return buf;
    } finally {
      const left = this.pins.get(segment)! - 1;
      if (left === 0) {
        this.pins.delete(segment);
        this.unpinned.get(segment)?.();
      } else this.pins.set(segment, left);
    }
  }

  /** Closes the segment's handle once no read holds it (before the file is removed). */
  async release(segment: number): Promise<void> {
    if (this.pins.has(segment)) await new Promise<void>((resolve) => this.unpinned.set(segment, resolve));
    this.unpinned.delete(segment);
    const fd = this.fds.get(segment);
    if (fd !== undefined) closeSync(fd);
    this.fds.delete(segment);
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}

/** The segment holds fewer bytes than its index record names: the stored copy is damaged. */
function shortRead(segment: number, position: number, length: number, got: number): BlobstoreError {
  return new BlobstoreError('corruption', `short read in segment ${segment} at ${position}: ${got} of ${length} bytes`);
}
