/**
 * Reusable buffers of one size, lent out as views and counted back in. A slab is reused only
 * once every view lent of it has been released: a holder that never releases (an error path, a
 * caller that keeps its bytes) only keeps that slab out of the pool, and the garbage collector
 * takes it with its last view. So a missed release costs an allocation, never wrong bytes; a
 * release must come once per view taken, after its last use.
 *
 * For streams that move many MiB through short-lived buffers (an EC read moves each byte of the
 * blob through one): fresh 1 MiB buffers per chunk cost the allocation and, with them, V8's
 * external-memory accounting starts a major GC every few dozen MiB.
 *
 * Slabs start on a page boundary (aligned-buffer.ts), where the kernel copies into them at full
 * speed. They are not shared memory: a SharedArrayBuffer is zeroed when allocated, which a read
 * that holds more slabs than are kept (a degraded read's rebuilt cells) paid for every slab.
 */
import { pageAligned } from './aligned-buffer.js';

interface Lent {
  readonly slab: Buffer;
  refs: number;
}

export class Slabs {
  private readonly free: Buffer[] = [];
  /** By the slab's ArrayBuffer (every view of it shares it); weak, so a slab never released is collected. */
  private readonly lent = new WeakMap<ArrayBufferLike, Lent>();
  private prefaulting: Promise<void> | undefined;

  constructor(
    readonly bytes: number,
    /** Free slabs kept for reuse; beyond, released slabs are left to the garbage collector. */
    private readonly keep: number,
  ) {}

  /** A slab with one reference (the caller's). */
  take(): Buffer {
    const slab = this.free.pop() ?? pageAligned(this.bytes);
    this.lent.set(slab.buffer, { slab, refs: 1 });
    return slab;
  }

  /** One more holder of `view`'s slab (a no-op for a buffer that is not a slab). */
  ref(view: Buffer): void {
    const lent = this.lent.get(view.buffer);
    if (lent) lent.refs++;
  }

  /** A holder of `view`'s slab is done with it (a no-op for a buffer that is not a slab). */
  release(view: Buffer): void {
    const lent = this.lent.get(view.buffer);
    if (!lent || lent.refs <= 0) return;
    if (--lent.refs > 0) return;
    this.lent.delete(view.buffer);
    if (this.free.length < this.keep) this.free.push(lent.slab);
  }

  /**
   * Allocates and touches the slabs kept, one per event-loop turn, so that the next reads do not
   * fault their memory in: on a VM, a page's first touch is a trip to the host, and a node's first
   * 64 MiB EC GET spent ~60 ms more before its first byte than its second (docs/erasure-coding.md).
   * Once: later calls get the first call's promise. A slab that cannot be allocated now is
   * allocated when a read needs it, as without this.
   */
  prefault(): Promise<void> {
    this.prefaulting ??= this.fill().catch(() => undefined);
    return this.prefaulting;
  }

  private async fill(): Promise<void> {
    // At most `keep` of them: reads under way meanwhile take and give back slabs of their own.
    for (let made = 0; made < this.keep && this.free.length < this.keep; made++) {
      const slab = pageAligned(this.bytes);
      slab.fill(0);
      this.free.push(slab);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** prefault() was called (its slabs are made or being made). */
  get readied(): boolean {
    return this.prefaulting !== undefined;
  }

  /** Free slabs held for reuse (for tests). */
  get kept(): number {
    return this.free.length;
  }
}
