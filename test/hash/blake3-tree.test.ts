/**
 * BLAKE3's tree over 1 MiB chunks (src/hash/blake3-tree.ts, native/src/blake3.c): the chaining
 * values of a blob's chunks joined give the digest another implementation (@napi-rs/blake-hash)
 * computes over the whole; on every path of the addon and in JavaScript. A blob file's digest
 * table and its id rest on this.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { blake3 as napiBlake3 } from '@napi-rs/blake-hash';
import { CV_BYTES, blake3TreeJs, blake3TreePath, joinCvs, rootOf, subtreeCv } from '../../src/hash/blake3-tree.js';
import { REPO } from '../helpers/node-process.js';

interface Addon {
  blake3Hash(src: Uint8Array, dst: Uint8Array, dstOffset: number): number;
  blake3Subtree(src: Uint8Array, counter: number, cv: Uint8Array, cvOffset: number, root?: Uint8Array, rootOffset?: number): number;
  blake3Root(cvs: Uint8Array, count: number, dst: Uint8Array, dstOffset: number): number;
  setBlake3Path(name: string): number;
  blake3Paths(): { name: string; supported: boolean }[];
}
const addon = createRequire(import.meta.url)(join(REPO, 'native/build/Release/blobstore_ec.node')) as Addon;
const MiB = 1024 * 1024;
/** Another implementation: the BLAKE3 crate, through @napi-rs/blake-hash (src/hash/blake3.ts's one-shot digests are ours now). */
const reference = (data: Uint8Array): Buffer => napiBlake3(Buffer.from(data.buffer, data.byteOffset, data.byteLength));

afterAll(() => {
  addon.setBlake3Path('auto');
});

type Tree = { subtreeCv: typeof subtreeCv; rootOf: typeof rootOf };

/** The blob's digest as a blob file's writer gets it: chunk by chunk, then joined. */
function treeDigest(tree: Tree, data: Uint8Array, chunkBytes = MiB): Buffer {
  const n = Math.max(1, Math.ceil(data.length / chunkBytes));
  const cvs = Buffer.alloc(n * CV_BYTES);
  const alone = Buffer.alloc(32);
  for (let k = 0; k < n; k++) tree.subtreeCv(data.subarray(k * chunkBytes, (k + 1) * chunkBytes), k * chunkBytes, cvs, k * CV_BYTES, k === 0 ? alone : undefined);
  if (n === 1) return alone;
  const out = Buffer.alloc(32);
  tree.rootOf(cvs, n, out, 0);
  return out;
}

const SIZES = [1, 1023, 1024, 1025, 4096, MiB - 1, MiB, MiB + 1, MiB + 1024, 2 * MiB, 3 * MiB + 4097, 5 * MiB - 64, 9 * MiB + 1025];

describe('BLAKE3 tree over 1 MiB chunks', () => {
  const paths = addon.blake3Paths().filter((p) => p.supported).map((p) => p.name);

  it.each(paths)('path %s: chunk chaining values join to the whole digest, at every size edge', (path) => {
    expect(addon.setBlake3Path(path)).toBe(0);
    for (const size of SIZES) {
      const data = randomBytes(size);
      expect(treeDigest({ subtreeCv, rootOf }, data).toString('hex'), `${size} bytes`).toBe(reference(data).toString('hex'));
      const whole = Buffer.alloc(40);
      expect(addon.blake3Hash(data, whole, 8)).toBe(0);
      expect(whole.subarray(8).toString('hex'), `${size} bytes, one-shot`).toBe(reference(data).toString('hex'));
    }
  });

  it('in JavaScript, without the addon: the same chaining values and digests', () => {
    addon.setBlake3Path('auto');
    for (const size of [0, 1, 1024, 3073, MiB + 5, 2 * MiB + 1]) {
      const data = randomBytes(size);
      expect(treeDigest(blake3TreeJs, data).toString('hex'), `${size} bytes`).toBe(reference(data).toString('hex'));
      const native = Buffer.alloc(32);
      const js = Buffer.alloc(32);
      subtreeCv(data.subarray(0, 4096), 0, native, 0);
      blake3TreeJs.subtreeCv(data.subarray(0, 4096), 0, js, 0);
      expect(js.toString('hex')).toBe(native.toString('hex'));
    }
    expect(blake3TreePath()).toMatch(/^(portable|avx2|avx512)$/);
  });

  it.each(paths)('path %s: a chunk\'s 64 KiB parts, hashed apart and joined, give the chunk\'s chaining value', (path) => {
    expect(addon.setBlake3Path(path)).toBe(0);
    const part = 64 * 1024;
    for (const size of [1, 1024, part, part + 1, 100 * 1024, 3 * part, 5 * part + 7, MiB - 1, MiB]) {
      for (const offset of [0, MiB, 7 * MiB]) {
        const chunk = randomBytes(size);
        const whole = Buffer.alloc(32);
        subtreeCv(chunk, offset, whole, 0);
        const n = Math.ceil(size / part);
        const cvs = Buffer.alloc(n * CV_BYTES);
        for (let p = 0; p < n; p++) subtreeCv(chunk.subarray(p * part, (p + 1) * part), offset + p * part, cvs, p * CV_BYTES);
        const joined = Buffer.alloc(40);
        joinCvs(cvs, n, joined, 8);
        expect(joined.subarray(8).toString('hex'), `${size} bytes at ${offset}`).toBe(whole.toString('hex'));
        const js = Buffer.alloc(32);
        blake3TreeJs.joinCvs(cvs, n, js, 0);
        expect(js.toString('hex'), `${size} bytes at ${offset}, in JavaScript`).toBe(whole.toString('hex'));
      }
    }
  });

  it('a chunk\'s chaining value depends on where it sits: the same bytes at another offset check as different', () => {
    const chunk = randomBytes(MiB);
    const at0 = Buffer.alloc(32);
    const at1 = Buffer.alloc(32);
    subtreeCv(chunk, 0, at0, 0);
    subtreeCv(chunk, MiB, at1, 0);
    expect(at0.equals(at1)).toBe(false);
  });

  it('refuses what it cannot take with an error, not a crash', () => {
    const cv = Buffer.alloc(32);
    expect(() => subtreeCv(Buffer.alloc(10), 100, cv, 0)).toThrow(RangeError);
    expect(() => subtreeCv(Buffer.alloc(10), 0, cv, 1)).toThrow(/cannot take/);
    expect(() => subtreeCv(Buffer.alloc(10), MiB, cv, 0, Buffer.alloc(32))).toThrow(/cannot take/);
    expect(() => rootOf(Buffer.alloc(64), 3, cv, 0)).toThrow(/cannot take/);
    expect(() => rootOf(Buffer.alloc(64), 1, cv, 0)).toThrow(/cannot take/);
    expect(() => joinCvs(Buffer.alloc(64), 0, cv, 0)).toThrow(/cannot take/);
    expect(() => joinCvs(Buffer.alloc(64), 3, cv, 0)).toThrow(/cannot take/);
    expect(addon.blake3Subtree(Buffer.alloc(10), 0, cv, 0, Buffer.alloc(32)), 'a root without its offset').toBeLessThan(0);
  });
});
