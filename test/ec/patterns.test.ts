/**
 * Any k of k + m shards reconstruct: every erasure pattern of up to m shards for 4+2 and 8+2,
 * on every supported path, and the decode-matrix cache that serves repeated patterns.
 */
import { afterAll, describe, expect, test } from 'vitest';

import { ecCacheStats, ecKernelPaths, encode, reconstruct, setEcKernelPath, type EcKernelPathName } from '../../src/ec/index.js';
import { rng } from './reference.js';
import { makeStripe } from './stripes.js';

const supported = ecKernelPaths().filter((p) => p.supported).map((p) => p.name as EcKernelPathName);

/** Every present[] with between 1 and m shards missing. */
function patterns(k: number, m: number): boolean[][] {
  const out: boolean[][] = [];
  for (let mask = 1; mask < 1 << (k + m); mask++) {
    const missing = mask.toString(2).split('1').length - 1;
    if (missing <= m) out.push(Array.from({ length: k + m }, (_, i) => !((mask >> i) & 1)));
  }
  return out;
}

function binomialSum(n: number, m: number): number {
  let sum = 0;
  let c = 1;
  for (let r = 1; r <= m; r++) {
    c = (c * (n - r + 1)) / r;
    sum += c;
  }
  return sum;
}

afterAll(() => setEcKernelPath('auto'));

describe.each([
  [4, 2],
  [8, 2],
])('%i+%i', (k, m) => {
  test('the patterns are all C(k+m, 1) + ... + C(k+m, m) of them', () => {
    expect(patterns(k, m).length).toBe(binomialSum(k + m, m));
  });

  test.each(supported)('every erasure pattern reconstructs on path %s', (path) => {
    setEcKernelPath(path);
    const s = makeStripe(rng(k * 100 + m), k, m, 1000 + 67, 'slices');
    encode(k, m, s.shards.slice(0, k), s.shards.slice(k));
    const original = s.views.map((v) => Buffer.from(v));
    for (const present of patterns(k, m)) {
      present.forEach((p, i) => p || s.views[i].fill(0));
      reconstruct(k, m, s.shards, present);
      const wrong = s.views.findIndex((v, i) => !original[i].equals(v));
      expect(wrong, `pattern ${present.map(Number).join('')}`).toBe(-1);
    }
  });
});

describe('reconstruct with dataOnly', () => {
  test.each(supported)('fills the missing data shards and leaves missing parity alone on path %s', (path) => {
    setEcKernelPath(path);
    const k = 8;
    const m = 3;
    const s = makeStripe(rng(31), k, m, 4097, 'common');
    encode(k, m, s.shards.slice(0, k), s.shards.slice(k));
    const original = s.views.map((v) => Buffer.from(v));
    const present = Array.from({ length: k + m }, (_, i) => i !== 2 && i !== 5 && i !== 9);
    [2, 5, 9].forEach((i) => s.views[i].fill(0xee));
    reconstruct(k, m, s.shards, present, { dataOnly: true });
    expect(Buffer.from(s.views[2]).equals(original[2])).toBe(true);
    expect(Buffer.from(s.views[5]).equals(original[5])).toBe(true);
    expect(s.views[9].every((b) => b === 0xee)).toBe(true);
  });
});

describe('decode-matrix cache', () => {
  test('a repeated erasure pattern is a cache hit and the cache stays bounded', () => {
    const k = 12;
    const m = 4;
    const s = makeStripe(rng(7), k, m, 256, 'separate');
    encode(k, m, s.shards.slice(0, k), s.shards.slice(k));
    const present = Array.from({ length: k + m }, (_, i) => i !== 3 && i !== 13);
    reconstruct(k, m, s.shards, present);
    const before = ecCacheStats();
    reconstruct(k, m, s.shards, present);
    const after = ecCacheStats();
    expect(after.hits).toBe(before.hits + 1);
    expect(after.misses).toBe(before.misses);
    for (const p of patterns(6, 2)) {
      const wide = [...p, ...Array.from({ length: k + m - 8 }, () => true)];
      reconstruct(k, m, s.shards, wide);
    }
    const full = ecCacheStats();
    expect(full.entries).toBeLessThanOrEqual(full.capacity);
    expect(full.entries).toBe(full.capacity);
  });
});
