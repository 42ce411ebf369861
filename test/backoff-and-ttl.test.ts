/** The per-key back-off of the retry loops and the expiring cache of the cluster's readers (src/util). */
import { describe, expect, it } from 'vitest';
import { Backoffs } from '../src/util/backoff.js';
import { TtlCache } from '../src/util/ttl-cache.js';

describe('Backoffs', () => {
  it('a key never failed is due; each failure doubles its wait (±20%) up to the cap; success clears it', () => {
    const b = new Backoffs(100, 1000);
    expect(b.due('a', 0)).toBe(true);
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      b.failed('a', 0);
      let t = 0;
      while (!b.due('a', t)) t++;
      waits.push(t);
    }
    const nominal = [100, 200, 400, 800, 1000, 1000];
    waits.forEach((w, i) => {
      expect(w).toBeGreaterThanOrEqual(Math.floor(nominal[i]! * 0.8));
      expect(w).toBeLessThanOrEqual(Math.ceil(nominal[i]! * 1.2));
    });
    expect(b.due('b', 0)).toBe(true);
    b.clear('a');
    expect(b.due('a', 0)).toBe(true);
  });

  it('waitMs says how long a key still waits: 0 once it is due', () => {
    const b = new Backoffs(100, 1000);
    expect(b.waitMs('a', 0)).toBe(0);
    b.failed('a', 0);
    const wait = b.waitMs('a', 0);
    expect(wait).toBeGreaterThanOrEqual(80);
    expect(wait).toBeLessThanOrEqual(120);
    expect(b.waitMs('a', 50)).toBe(wait - 50);
    expect([b.due('a', wait - 1), b.due('a', wait), b.waitMs('a', wait + 5)]).toStrictEqual([false, true, 0]);
  });
});

describe('TtlCache', () => {
  it('answers an entry until it is ttlMs old, holds at most maxEntries (the oldest goes), and forgets on delete', () => {
    const c = new TtlCache<string>(2, 1000);
    c.set('a', 'A', 0);
    expect(c.get('a', 999)).toBe('A');
    expect(c.get('a', 1000)).toBeUndefined();
    c.set('b', 'B', 10);
    c.set('c', 'C', 20);
    expect(c.get('a', 30)).toBeUndefined();
    expect([c.get('b', 30), c.get('c', 30)]).toStrictEqual(['B', 'C']);
    c.set('c', 'C2', 40);
    expect(c.get('b', 40)).toBe('B');
    c.delete('b');
    expect(c.get('b', 40)).toBeUndefined();
    c.clear();
    expect(c.get('c', 40)).toBeUndefined();
  });
});
