/**
 * The buffers bytes are read into from files start on a page boundary: a buffer 16 bytes into a
 * page (where glibc puts large allocations) takes the kernel's copy from the page cache at a
 * fifth of its speed on AMD Zen 3 (src/util/aligned-buffer.ts).
 */
import { describe, expect, it } from 'vitest';
import { optionalAddon } from '../src/util/addon.js';
import { pageAligned, pageAlignedShared } from '../src/util/aligned-buffer.js';
import { BufferPool } from '../src/pool/buffer-pool.js';
import { CHUNK_BYTES } from '../src/blob/chunk.js';

const addon = optionalAddon<{ pageOffset(view: Uint8Array): number }>('pageOffset');

describe.skipIf(addon === null)('page-aligned buffers (the addon tells a view\'s address; not built: make -C native)', () => {
  const offset = (view: Uint8Array): number => addon!.pageOffset(view);

  it('the addon reads an address: a view one byte on is one byte further into its page', () => {
    const whole = Buffer.allocUnsafeSlow(3 * 4096);
    expect(offset(whole.subarray(1))).toBe((offset(whole) + 1) % 4096);
    expect(offset(whole.subarray(4096))).toBe(offset(whole));
  });

  it('shared and private buffers of any size start on a page boundary and have the length asked for', () => {
    for (const bytes of [1, 4096, 256 * 1024, CHUNK_BYTES]) {
      const shared = pageAlignedShared(bytes);
      expect(shared.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect([offset(shared), shared.length]).toEqual([0, bytes]);
      const own = pageAligned(bytes);
      expect([offset(own), own.length]).toEqual([0, bytes]);
    }
  });

  it('the chunk pool hands out page-aligned 1 MiB views of shared memory, each on its own', () => {
    const pool = new BufferPool(3);
    const bufs = [pool.tryAcquire()!, pool.tryAcquire()!, pool.tryAcquire()!];
    expect(pool.tryAcquire()).toBeUndefined();
    for (const b of bufs) expect([offset(b), b.length, b.buffer instanceof SharedArrayBuffer]).toEqual([0, CHUNK_BYTES, true]);
    bufs[0]!.fill(1);
    expect(bufs[1]!.includes(1)).toBe(false);
  });
});
