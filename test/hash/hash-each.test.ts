/**
 * The digests and CRC-32Cs of several small inputs in one call (src/hash/hash-each.ts, the addon's
 * blake3_hash_each): each as another implementation (@napi-rs/blake-hash's BLAKE3, the JavaScript
 * CRC-32C) computes it alone, on every path of the addon, for inputs of every kind side by side
 * (empty, one chunk, whole chunks, a short last chunk, more chunks than share lanes), from Buffers
 * at offsets and from ArrayBuffers as uWS hands bodies over. The small stores' ids rest on this.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { blake3 as napiBlake3 } from '@napi-rs/blake-hash';
import { HASH_EACH_MAX, type HashParts, hashEachInto, hashEachJs } from '../../src/hash/hash-each.js';
import { crc32cJs } from '../../src/hash/crc32c.js';
import { REPO } from '../helpers/node-process.js';

interface Addon {
  blake3HashEach(parts: HashParts, count: number, crcs: Uint32Array): number;
  setBlake3Path(name: string): number;
  blake3Paths(): { name: string; supported: boolean }[];
}
const addon = createRequire(import.meta.url)(join(REPO, 'native/build/Release/blobstore_ec.node')) as Addon;

afterAll(() => {
  addon.setBlake3Path('auto');
});

const KINDS = [0, 1, 1000, 1024, 1025, 2048, 4096, 4097, 4200, 8192, 12_345, 16 * 1024, 16 * 1024 + 1, 40_000];

/** `count` inputs of the kinds above in a random order, some in one shared buffer at odd offsets, some ArrayBuffers. */
function inputs(count: number): { parts: HashParts; views: Uint8Array[] } {
  const parts: HashParts = [];
  const views: Uint8Array[] = [];
  const shared = randomBytes(64 * 1024 + 7);
  for (let i = 0; i < count; i++) {
    const length = KINDS[Math.floor(Math.random() * KINDS.length)]!;
    const dst = Buffer.alloc(32);
    if (i % 3 === 0 && length <= 64 * 1024) {
      const at = Math.floor(Math.random() * (shared.length - length));
      parts.push(shared, at, length, dst);
      views.push(shared.subarray(at, at + length));
    } else if (i % 3 === 1) {
      const bytes = randomBytes(length);
      const ab = new Uint8Array(bytes).buffer;
      parts.push(ab, 0, length, dst);
      views.push(new Uint8Array(ab));
    } else {
      const bytes = randomBytes(length + 3);
      parts.push(bytes, 3, length, dst);
      views.push(bytes.subarray(3));
    }
  }
  return { parts, views };
}

function expectEach(parts: HashParts, views: Uint8Array[], crcs: Uint32Array, label: string): void {
  views.forEach((view, i) => {
    const want = napiBlake3(Buffer.from(view.buffer, view.byteOffset, view.byteLength));
    expect((parts[4 * i + 3] as Buffer).equals(want), `${label}: input ${i} of ${views.length} (${view.length} bytes)`).toBe(true);
    expect(crcs[i], `${label}: CRC of input ${i}`).toBe(crc32cJs(view));
  });
}

describe('hashEachInto: the digests and CRC-32Cs of several inputs at once', () => {
  const paths = addon.blake3Paths().filter((p) => p.supported);

  it.each(paths.map((p) => p.name))('equals each input hashed alone, at every count up to the limit, on the %s path', (path) => {
    expect(addon.setBlake3Path(path)).toBe(0);
    for (let count = 1; count <= HASH_EACH_MAX; count += count < 20 ? 1 : 11) {
      const { parts, views } = inputs(count);
      const crcs = new Uint32Array(count);
      hashEachInto(parts, count, crcs);
      expectEach(parts, views, crcs, `${path}, ${count} inputs`);
    }
  });

  it('without the addon, one input at a time, gives the same digests and CRCs', () => {
    for (const count of [1, 7, HASH_EACH_MAX]) {
      const { parts, views } = inputs(count);
      const crcs = new Uint32Array(count);
      hashEachJs(parts, count, crcs);
      expectEach(parts, views, crcs, `js, ${count} inputs`);
    }
  });

  it.each([['the addon', hashEachInto], ['the JavaScript path', hashEachJs]] as const)('%s refuses what it cannot take with a TypeError, writing nothing', (_, hashEach) => {
    const dst = Buffer.alloc(32);
    const crcs = new Uint32Array(2);
    const good = [Buffer.alloc(10), 0, 10, dst];
    expect(() => hashEach([Buffer.alloc(10), 0, 11, dst], 1, crcs)).toThrow(TypeError);
    expect(() => hashEach([Buffer.alloc(10), 0, 10, Buffer.alloc(31)], 1, crcs)).toThrow(TypeError);
    expect(() => hashEach(['bytes' as unknown as Uint8Array, 0, 5, dst], 1, crcs)).toThrow(TypeError);
    expect(() => hashEach(good, 3, crcs)).toThrow(TypeError);
    // A bad second input: the first is not hashed either.
    expect(() => hashEach([...good, Buffer.alloc(10), 5, 6, Buffer.alloc(32)], 2, crcs)).toThrow(TypeError);
    expect(() => hashEach([], HASH_EACH_MAX + 1, new Uint32Array(HASH_EACH_MAX + 1))).toThrow(TypeError);
    expect(dst.equals(Buffer.alloc(32))).toBe(true);
    expect([...crcs]).toEqual([0, 0]);
  });
});
