/** Per-id locks (src/engine/id-locks.ts): runs on one id in order, held locks without promises. */
import { describe, expect, it } from 'vitest';
import { IdLocks } from '../../src/engine/id-locks.js';

const id = (n: number): Buffer => Buffer.from([n, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]);
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('IdLocks', () => {
  it('runs operations on one id one after another, and other ids at once', async () => {
    const locks = new IdLocks();
    const log: string[] = [];
    let release!: () => void;
    const first = locks.run(id(1), () => new Promise<void>((r) => (release = r)).then(() => void log.push('first')));
    const second = locks.run(id(1), async () => void log.push('second'));
    const other = locks.run(id(2), async () => void log.push('other'));
    await other;
    expect(log).toEqual(['other']);
    release();
    await Promise.all([first, second]);
    expect(log).toEqual(['other', 'first', 'second']);
    await tick();
    expect(locks.size).toBe(0);
  });

  it('a failed run does not stop the next', async () => {
    const locks = new IdLocks();
    const failed = locks.run(id(1), () => Promise.reject(new Error('no')));
    const next = locks.run(id(1), async () => 'yes');
    await expect(failed).rejects.toThrow('no');
    await expect(next).resolves.toBe('yes');
  });

  it('hold() takes a free lock only; a run() meanwhile waits for unhold()', async () => {
    const locks = new IdLocks();
    expect(locks.hold(id(3))).toBe(true);
    expect(locks.hold(id(3))).toBe(false);
    let ran = false;
    const waiting = locks.run(id(3), async () => void (ran = true));
    const after = locks.run(id(3), async () => 'after');
    await tick();
    expect(ran).toBe(false);
    locks.unhold(id(3));
    await waiting;
    expect(ran).toBe(true);
    await expect(after).resolves.toBe('after');
    await tick();
    expect(locks.size).toBe(0);
    expect(locks.hold(id(3))).toBe(true);
  });

  it('hold() is refused while a run() is under way, and free again after it', async () => {
    const locks = new IdLocks();
    let release!: () => void;
    const running = locks.run(id(4), () => new Promise<void>((r) => (release = r)));
    expect(locks.hold(id(4))).toBe(false);
    release();
    await running;
    await tick();
    expect(locks.hold(id(4))).toBe(true);
    locks.unhold(id(4));
    expect(locks.size).toBe(0);
  });

  it('holds thousands of ids at once and gives back any of them, in any order (the held set grows, and deletes keep probe runs whole)', () => {
    const locks = new IdLocks();
    // Ids whose first bytes collide in the table's low bits, and ones that differ only in bytes 4-5.
    const ids = Array.from({ length: 3000 }, (_, i) => Buffer.from([(i * 16) & 0xff, (i >> 4) & 0xff, 0, 0, i % 7, 0, ...Array(10).fill(i & 0xff)]));
    for (const x of ids) expect(locks.hold(x)).toBe(true);
    expect(locks.size).toBe(3000);
    for (const x of ids) expect(locks.hold(x)).toBe(false);
    // Give back every third, then check every id's state.
    ids.forEach((x, i) => i % 3 === 0 && locks.unhold(x));
    ids.forEach((x, i) => expect(locks.hold(x)).toBe(i % 3 === 0));
    for (const x of ids) locks.unhold(x);
    expect(locks.size).toBe(0);
  });

  it('settled() waits for the runs under way', async () => {
    const locks = new IdLocks();
    let done = false;
    // A run that lasts a while (time is the subject): settled() is called while it is under way.
    void locks.run(id(5), () => new Promise<void>((r) => setTimeout(() => { done = true; r(); }, 20)));
    await locks.settled();
    expect(done).toBe(true);
  });
});
