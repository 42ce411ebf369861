/**
 * The overlay's blob records in typed arrays (src/index/staged-ids.ts) answer as the Map-backed
 * StagedMap does, over random sequences of stores, removals and commits (printed seed), through
 * growth and the rebuilds a commit makes.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { StagedMap } from '../../src/index/overlay.js';
import { StagedIds } from '../../src/index/staged-ids.js';
import { seededRandom } from '../helpers/rng.js';


describe('StagedIds', () => {
  it('looks up, overwrites and removes by id, and a commit drops what it covered', () => {
    const s = new StagedIds<string>();
    const a = randomBytes(16);
    const b = randomBytes(16);
    expect(s.lookup(a)).toBeUndefined();
    s.set(a, 'a1', 1);
    s.set(b, null, 2);
    s.set(a, 'a3', 3);
    expect(s.size).toBe(2);
    expect(s.lookup(a)).toMatchObject({ value: 'a3', lsn: 3 });
    expect(s.lookup(b)).toMatchObject({ value: null, lsn: 2 });
    s.dropThrough(2);
    expect(s.lookup(b)).toBeUndefined();
    expect(s.lookup(a)?.value).toBe('a3');
    s.dropThrough(3);
    expect(s.size).toBe(0);
    expect(s.lookup(a)).toBeUndefined();
  });

  it('grows for a burst, keeps its size under a load that fills it, and shrinks again as small commits empty it', () => {
    const s = new StagedIds<number>();
    let lsn = 0;
    for (let i = 0; i < 5000; i++) s.set(randomBytes(16), i, ++lsn);
    expect(s.capacity).toBeGreaterThanOrEqual(10_000);
    const big = s.capacity;
    // The burst's own commit keeps the size (a steady load that fills the table between commits
    // would otherwise halve it at each commit and double it again after).
    s.dropThrough(lsn);
    expect(s.size).toBe(0);
    expect(s.capacity).toBe(big);
    for (let i = 0; i < 3000; i++) s.set(randomBytes(16), i, ++lsn);
    s.dropThrough(lsn);
    expect(s.capacity).toBe(big);
    // Steady small commits: the table halves at each until it is back to its least size.
    for (let round = 0; round < 10; round++) {
      const id = randomBytes(16);
      s.set(id, round, ++lsn);
      expect(s.lookup(id)?.value).toBe(round);
      s.dropThrough(lsn);
    }
    expect(s.capacity).toBe(1024);
  });

  it('answers as StagedMap over random stores, removals and commits', () => {
    const seed = Number(process.env.STAGED_SEED ?? Date.now() % 1_000_000);
    console.log(`StagedIds model test seed ${seed} (STAGED_SEED=${seed} repeats it)`);
    const rand = seededRandom(seed);
    const ids: Buffer[] = [];
    // Ids that share their first word (one probe run) and ones that differ anywhere.
    for (let i = 0; i < 3000; i++) ids.push(i % 3 === 0 ? Buffer.concat([Buffer.from([1, 2, 3, 4]), randomBytes(12)]) : randomBytes(16));
    const typed = new StagedIds<number>();
    const model = new StagedMap<number>();
    let lsn = 0;
    let committed = 0;
    for (let step = 0; step < 20_000; step++) {
      const r = rand();
      if (r < 0.9) {
        const id = ids[Math.floor(rand() * ids.length)]!;
        const value = rand() < 0.2 ? null : step;
        lsn++;
        typed.set(id, value, lsn);
        model.set(id, value, lsn);
      } else {
        // A commit covers a prefix of what is staged.
        committed += Math.floor(rand() * (lsn - committed + 1));
        typed.dropThrough(committed);
        model.dropThrough(committed);
      }
      if (step % 500 === 0 || step === 19_999) {
        expect(typed.size).toBe(model.size);
        for (const id of ids) {
          const t = typed.lookup(id);
          const m = model.lookup(id);
          expect(t === undefined ? undefined : { value: t.value, lsn: t.lsn }).toEqual(m === undefined ? undefined : { value: m.value, lsn: m.lsn });
        }
        const start = ids[step % ids.length]!;
        const pick = (list: { key: Buffer; slot: { value: number | null; lsn: number } }[]) => list.map((e) => [e.key.toString('hex'), e.slot.value, e.slot.lsn]);
        expect(pick(typed.sortedFrom(start))).toEqual(pick(model.sortedFrom(start)));
      }
    }
  });
});
