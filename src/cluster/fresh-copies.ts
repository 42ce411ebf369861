/**
 * Copies of just-stored small blobs' bytes, held for their replicas: the replicator sends them
 * instead of reading the blobs back. The store's body is valid only while it is stored, so a copy
 * is made of each; one Buffer per copy is an ArrayBuffer of its own, and at REPLICA3's rate their
 * allocation and the collector's sweeping of them took ~3 us per 4 KiB store. Copies are laid one
 * after another in pooled 1 MiB slabs instead (util/slabs.ts), each a view holding one reference
 * to its slab, released once its copies were sent:
 *
 *   copy(bytes) ──▶ the current slab, at `used` (a new slab when it is full) ──▶ a view (+1 ref)
 *   the replicator's pass is done with it ──▶ release(view) (-1 ref) ──▶ a slab with no views left is reused
 *
 * A copy never released (a store that failed) only keeps its slab from the pool: the garbage
 * collector takes it with its last view. Larger bodies are copied into buffers of their own.
 */
import { copyBytes } from '../util/copy-bytes.js';
import { Slabs } from '../util/slabs.js';

const SLAB_BYTES = 1024 * 1024;
/** Bodies above this get a buffer of their own (a slab takes at least 16 of them). */
const SLAB_COPY_MAX = 64 * 1024;
/** Free slabs kept: ~25 ms of copies at 12k 4 KiB stores a second is ~1.2 MiB. */
const SLABS_KEPT = 8;

export class FreshCopies {
  private readonly slabs = new Slabs(SLAB_BYTES, SLABS_KEPT);
  /** The slab copies go into (this holds one reference to it), and how much of it they took. */
  private slab: Buffer | undefined;
  private used = 0;

  /** A copy of `bytes` that stays unchanged until release(). */
  copy(bytes: Uint8Array | ArrayBuffer): Buffer {
    const n = bytes.byteLength;
    if (n > SLAB_COPY_MAX) {
      const own = Buffer.allocUnsafe(n);
      copyBytes(bytes, own, 0);
      return own;
    }
    if (this.slab === undefined || this.used + n > SLAB_BYTES) {
      if (this.slab !== undefined) this.slabs.release(this.slab);
      this.slab = this.slabs.take();
      this.used = 0;
    }
    copyBytes(bytes, this.slab, this.used);
    const view = this.slab.subarray(this.used, this.used + n);
    // The next copy starts on an 8-byte boundary.
    this.used += (n + 7) & ~7;
    this.slabs.ref(view);
    return view;
  }

  /** The copy's replicas were sent (or will be read back): its place may be reused. A no-op for other buffers. */
  release(copy: Buffer): void {
    this.slabs.release(copy);
  }
}
