/**
 * A bounded pool of reusable 1 MiB chunk buffers. Bytes from the socket are copied once into one
 * of these and move by reference after that, also to worker threads: the buffers live in shared
 * memory, each starting on a page boundary (a read from a file into them runs at the copy's full
 * speed: util/aligned-buffer.ts). When the pool is empty, callers wait (uploads pause their
 * socket) instead of allocating without bound.
 */
import { CHUNK_BYTES } from '../blob/chunk.js';
import { pageAlignedShared } from '../util/aligned-buffer.js';

export class BufferPool {
  private readonly free: Buffer[] = [];
  private readonly waiters: ((buf: Buffer) => void)[] = [];
  private created = 0;

  constructor(private readonly maxBuffers: number) {}

  /** A buffer now, or undefined when the pool is exhausted (then use `wait`). */
  tryAcquire(): Buffer | undefined {
    const buf = this.free.pop();
    if (buf) return buf;
    if (this.created < this.maxBuffers) {
      this.created++;
      return pageAlignedShared(CHUNK_BYTES);
    }
    return undefined;
  }

  acquire(): Promise<Buffer> {
    const buf = this.tryAcquire();
    return buf ? Promise.resolve(buf) : new Promise((resolve) => this.waiters.push(resolve));
  }

  release(buf: Buffer): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(buf);
    else this.free.push(buf);
  }

  get inUse(): number {
    return this.created - this.free.length;
  }
}
