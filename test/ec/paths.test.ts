/**
 * Every kernel path the CPU supports is byte-identical to the reference codec: seeded random k,
 * m, awkward lengths, shard offsets and layouts, and random erasure patterns.
 */
import { afterAll, describe, expect, test } from 'vitest';

import { ecKernelPath, encode, reconstruct, setEcKernelPath } from '../../src/ec/index.js';
import { referenceParity, rng } from './reference.js';
import { LAYOUTS, makeStripe, randomPresent, type StripeCase, supportedPaths } from './stripes.js';

const supported = supportedPaths();
const LENGTHS = [0, 1, 2, 15, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4097, 65535, 65537, (1 << 20) + 1];

/** Seeded cases; the big ones keep k small so the reference stays quick. */
const CASES: StripeCase[] = LENGTHS.flatMap((len, li) =>
  [0, 1].map((r) => {
    const seed = 1000 + li * 10 + r;
    const next = rng(seed);
    const k = 1 + Math.floor(next() * (len > 70000 ? 10 : 32));
    const m = 1 + Math.floor(next() * 8);
    const layout = LAYOUTS[(li + r) % LAYOUTS.length];
    return { name: `k=${k} m=${m} len=${len} ${layout}`, seed, k, m, len, layout };
  }),
);

const expected = new Map<number, Uint8Array[]>();
function expectedParity(c: StripeCase): Uint8Array[] {
  let parity = expected.get(c.seed);
  if (parity === undefined) {
    const s = makeStripe(rng(c.seed), c.k, c.m, c.len, c.layout);
    parity = referenceParity(c.k, c.m, s.views.slice(0, c.k));
    expected.set(c.seed, parity);
  }
  return parity;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

afterAll(() => setEcKernelPath('auto'));

test('the CPU supports the portable path and the widest path is chosen by default', () => {
  expect(supported).toContain('portable');
  setEcKernelPath('auto');
  expect(ecKernelPath()).toBe(supported[supported.length - 1]);
});

describe.each(supported)('path %s', (path) => {
  test.each(CASES)('encode and reconstruct match the reference: $name', (c) => {
    setEcKernelPath(path);
    expect(ecKernelPath()).toBe(path);
    const next = rng(c.seed);
    const s = makeStripe(next, c.k, c.m, c.len, c.layout);
    encode(c.k, c.m, s.shards.slice(0, c.k), s.shards.slice(c.k));
    const parity = expectedParity(c);
    for (let i = 0; i < c.m; i++) expect(same(s.views[c.k + i], parity[i]), `parity ${i}`).toBe(true);

    const original = s.views.map((v) => Uint8Array.from(v));
    for (let round = 0; round < 3; round++) {
      const present = randomPresent(next, c.k + c.m, 1 + Math.floor(next() * c.m));
      present.forEach((p, i) => p || s.views[i].fill(0xa5));
      reconstruct(c.k, c.m, s.shards, present);
      for (let i = 0; i < c.k + c.m; i++) expect(same(s.views[i], original[i]), `shard ${i} of ${present}`).toBe(true);
    }
  });
});
