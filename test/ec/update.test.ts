/**
 * encodeUpdate adds one data shard to the parity: from zeroed parity, one call per data shard in
 * any order gives encode's parity, byte for byte, on every kernel path the CPU supports.
 */
import { afterAll, describe, expect, test } from 'vitest';

import { ecCacheStats, encode, encodeUpdate, setEcKernelPath } from '../../src/ec/index.js';
import { randomBytes, referenceParity, rng } from './reference.js';
import { LAYOUTS, makeStripe, type Stripe, type StripeCase, supportedPaths } from './stripes.js';

const supported = supportedPaths();
/** 0, tails shorter than every vector width, lengths that are no multiple of 16, 32 or 64, two strips. */
const LENGTHS = [0, 1, 15, 31, 33, 63, 65, 127, 129, 1000, 4097, 65537, (1 << 18) + 3];
/** 4+2 and 8+2 (the store's policies), one row, and two passes of rows (m > 8). */
const SHAPES: readonly (readonly [number, number])[] = [[4, 2], [8, 2], [1, 1], [6, 3], [3, 9], [20, 16]];

const CASES: StripeCase[] = LENGTHS.flatMap((len, li) =>
  [0, 1].map((r) => {
    const [k, m] = r === 0 ? SHAPES[li % 2] : SHAPES[2 + (li % (SHAPES.length - 2))];
    const layout = LAYOUTS[(li + r) % LAYOUTS.length];
    return { name: `${k}+${m} len=${len} ${layout}`, seed: 5000 + li * 10 + r, k, m, len, layout };
  }),
);

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

/** encode's parity of the stripe's data, in new buffers. */
function encoded(s: Stripe): Uint8Array[] {
  const parity = Array.from({ length: s.m }, () => new Uint8Array(s.len));
  encode(s.k, s.m, s.shards.slice(0, s.k), parity);
  return parity;
}

/** Zeroes the stripe's parity, then adds every data shard in a seeded random order. */
function updateAll(next: () => number, s: Stripe): number[] {
  const order = Array.from({ length: s.k }, (_, i) => i);
  for (let i = s.k - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  for (let j = 0; j < s.m; j++) s.views[s.k + j].fill(0);
  for (const i of order) encodeUpdate(s.k, s.m, i, s.shards[i], s.shards.slice(s.k));
  return order;
}

afterAll(() => setEcKernelPath('auto'));

describe.each(supported)('path %s', (path) => {
  test.each(CASES)('updates in a random order give encode\'s parity: $name', (c) => {
    setEcKernelPath(path);
    const next = rng(c.seed);
    const s = makeStripe(next, c.k, c.m, c.len, c.layout);
    const want = encoded(s);
    const order = updateAll(next, s);
    for (let j = 0; j < c.m; j++) expect(same(s.views[c.k + j], want[j]), `parity ${j}, order ${order}`).toBe(true);
    if (c.len <= 4097) {
      const reference = referenceParity(c.k, c.m, s.views.slice(0, c.k));
      for (let j = 0; j < c.m; j++) expect(same(s.views[c.k + j], reference[j]), `reference parity ${j}`).toBe(true);
    }
  });

  test('adding a data shard twice takes it out; replacing one re-encodes', () => {
    setEcKernelPath(path);
    const next = rng(77);
    const s = makeStripe(next, 8, 2, 4099, 'separate');
    updateAll(next, s);
    const before = s.views.slice(8).map((v) => Uint8Array.from(v));
    encodeUpdate(8, 2, 3, s.shards[3], s.shards.slice(8));
    encodeUpdate(8, 2, 3, s.shards[3], s.shards.slice(8));
    for (let j = 0; j < 2; j++) expect(same(s.views[8 + j], before[j])).toBe(true);
    encodeUpdate(8, 2, 5, s.shards[5], s.shards.slice(8));
    s.views[5].set(randomBytes(next, 4099));
    encodeUpdate(8, 2, 5, s.shards[5], s.shards.slice(8));
    const want = encoded(s);
    for (let j = 0; j < 2; j++) expect(same(s.views[8 + j], want[j])).toBe(true);
  });
});

test('encodeUpdate uses the plan encode cached for the shape (no cache miss)', () => {
  const s = makeStripe(rng(9), 4, 2, 256, 'separate');
  encode(4, 2, s.shards.slice(0, 4), s.shards.slice(4));
  const { misses } = ecCacheStats();
  for (let i = 0; i < 4; i++) encodeUpdate(4, 2, i, s.shards[i], s.shards.slice(4));
  expect(ecCacheStats().misses).toBe(misses);
});
