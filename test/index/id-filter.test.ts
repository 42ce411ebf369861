/** The id filter (src/index/id-filter.ts): never a wrong "no", rarely a wrong "maybe". */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IdFilter } from '../../src/index/id-filter.js';

describe('IdFilter', () => {
  it('says "maybe" to everything until it is complete', () => {
    const f = new IdFilter(1000);
    expect(f.mayHave(randomBytes(16))).toBe(true);
  });

  it('answers "maybe" for every id added and "no" for nearly every other', () => {
    const f = new IdFilter(100_000);
    const ids = Array.from({ length: 100_000 }, () => randomBytes(16));
    for (const id of ids) f.add(id);
    f.complete = true;
    for (const id of ids) expect(f.mayHave(id)).toBe(true);
    let wrong = 0;
    for (let i = 0; i < 100_000; i++) if (f.mayHave(randomBytes(16))) wrong++;
    // Sized for 12 bits per id with 7 probes: well under 1% (0.3% expected).
    expect(wrong).toBeLessThan(1000);
  });

  it('knows how many ids it was sized for', () => {
    const f = new IdFilter(10_000_000);
    expect(f.capacity).toBeGreaterThanOrEqual(10_000_000);
    f.add(randomBytes(16));
    expect(f.added).toBe(1);
  });
});
