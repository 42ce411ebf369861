/**
 * Copies of just-stored small blobs' bytes for their replicas (src/cluster/fresh-copies.ts): laid
 * in pooled slabs, each copy unchanged until it is released, a slab reused only once every copy
 * in it was released.
 */
import { describe, expect, it } from 'vitest';
import { FreshCopies } from '../../src/cluster/fresh-copies.js';
import { patternBytes } from '../helpers/blobs.js';

const KiB = 1024;

describe('fresh copies of small stores\' bytes', () => {
  it('copies bytes from a buffer reused by its owner, and keeps them until released', () => {
    const copies = new FreshCopies();
    const body = new Uint8Array(4 * KiB);
    const made: { copy: Buffer; bytes: Buffer }[] = [];
    // Three slabs' worth of 4 KiB bodies, the body buffer overwritten for each (as uWS reuses its own).
    for (let i = 0; i < 3 * 256; i++) {
      const bytes = patternBytes(4 * KiB - (i % 7), i);
      const view = body.subarray(0, bytes.length);
      view.set(bytes);
      made.push({ copy: copies.copy(view), bytes });
    }
    for (const { copy, bytes } of made) expect(copy.equals(bytes)).toBe(true);
    // An ArrayBuffer is taken too.
    const ab = new Uint8Array(patternBytes(1000, 999)).buffer;
    expect(copies.copy(ab).equals(patternBytes(1000, 999))).toBe(true);
  });

  it('reuses a slab once every copy in it is released, and never while one is held', () => {
    const copies = new FreshCopies();
    const first = copies.copy(patternBytes(4 * KiB, 1));
    const rest: Buffer[] = [];
    // Fill the rest of the first slab, and move on to the next.
    while (rest.length === 0 || rest[rest.length - 1]!.buffer === first.buffer) rest.push(copies.copy(patternBytes(4 * KiB, 2)));
    const inFirst = rest.filter((c) => c.buffer === first.buffer);
    expect(inFirst.length).toBeGreaterThan(200);
    // Every copy of the first slab released but one: later slabs are new memory.
    for (const c of inFirst) copies.release(c);
    const held = [];
    for (let i = 0; i < 600; i++) held.push(copies.copy(patternBytes(4 * KiB, 3)));
    expect(held.some((c) => c.buffer === first.buffer)).toBe(false);
    expect(first.equals(patternBytes(4 * KiB, 1))).toBe(true);
    // The last one released: the first slab comes back for later copies.
    copies.release(first);
    for (const c of held) copies.release(c);
    const later: Buffer[] = [];
    for (let i = 0; i < 600; i++) later.push(copies.copy(patternBytes(4 * KiB, 4)));
    expect(later.some((c) => c.buffer === first.buffer)).toBe(true);
    for (const c of later) expect(c.equals(patternBytes(4 * KiB, 4))).toBe(true);
  });

  it('gives a body over 64 KiB a buffer of its own; releasing it (or any other buffer) does nothing', () => {
    const copies = new FreshCopies();
    const big = copies.copy(patternBytes(100 * KiB, 5));
    expect(big.equals(patternBytes(100 * KiB, 5))).toBe(true);
    copies.release(big);
    copies.release(Buffer.alloc(10));
    expect(big.equals(patternBytes(100 * KiB, 5))).toBe(true);
  });
});
