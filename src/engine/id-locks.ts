/**
 * Operations on one blob id run one after another (a put racing a delete of the same bytes sees a
 * consistent order); different ids never wait for each other. Keyed by the id's first 6 bytes:
 * two ids that share them only wait for each other.
 *
 * Two ways to hold a lock: run(fn), which chains promises, and hold()/unhold(), which costs no
 * promise, closure or allocation (the small store's fast path, Engine.putSmall, takes its id's lock
 * only when it is free and gives it back once its record is durable). A run() that arrives while a
 * lock is held waits for unhold(). Held locks live in a typed-array set (HeldKeys), not a Map: a
 * Map with an entry set and deleted per store rebuilds its table every few dozen stores (V8's
 * ordered hash tables only append), ~85 bytes of garbage per store.
 */

import { wordAt } from '../util/id-words.js';

export class IdLocks {
  /** The tail of each busy id's run() chain. */
  private readonly tails = new Map<number, Promise<unknown>>();
  /** Ids held by hold(). */
  private readonly held = new HeldKeys();
  /** Wakes the run() that waits for a held lock (one at most: later ones chain on its tail). */
  private readonly waiters = new Map<number, () => void>();

  /** Runs `fn` after every earlier operation on the same id has finished. */
  run<T>(id: Buffer, fn: () => Promise<T>): Promise<T> {
    const key = keyOf(id);
    let prior = this.tails.get(key);
    if (prior === undefined && this.held.has(id)) prior = new Promise<void>((resolve) => this.waiters.set(key, resolve));
    const run = prior ? prior.then(fn, fn) : fn();
    const release = (): void => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<void> = run.then(release, release);
    this.tails.set(key, tail);
    return run;
  }

  /** Takes the id's lock if nothing holds it or runs on it: true when taken. */
  hold(id: Buffer): boolean {
    if (this.held.has(id) || (this.tails.size > 0 && this.tails.has(keyOf(id)))) return false;
    this.held.add(id);
    return true;
  }

  /** Gives back a lock taken with hold(); a run() waiting for it goes next. */
  unhold(id: Buffer): void {
    this.held.delete(id);
    if (this.waiters.size === 0) return;
    const key = keyOf(id);
    const wake = this.waiters.get(key);
    if (wake === undefined) return;
    this.waiters.delete(key);
    wake();
  }

  /** Resolves once every run() under way or waiting has finished (held locks go with the log's drain). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.tails.values()]);
  }

  /** Ids locked now (tests). */
  get size(): number {
    return this.tails.size + this.held.size;
  }
}

const keyOf = (id: Buffer): number => id.readUIntLE(0, 6);

/** The id's first 4 bytes (a small integer to V8, never boxed). */
const lowOf = (id: Uint8Array): number => wordAt(id, 0);
/** Its next 2 bytes, marked (bit 16) so that 0 means an empty slot. */
const highOf = (id: Uint8Array): number => 0x10000 | id[4]! | (id[5]! << 8);

/**
 * A set of ids by their first 6 bytes: open addressing, linear probing from the first 4 (ids are
 * uniform hashes), deletion by shifting the probe run back (no tombstones, so no rebuilds while
 * it holds under half its slots). It doubles when half full, and never shrinks.
 */
class HeldKeys {
  private lows = new Int32Array(256);
  private highs = new Int32Array(256);
  private mask = 255;
  size = 0;

  has(id: Uint8Array): boolean {
    return this.find(lowOf(id), highOf(id)) >= 0;
  }

  add(id: Uint8Array): void {
    if (2 * (this.size + 1) > this.lows.length) this.grow();
    const lo = lowOf(id);
    const hi = highOf(id);
    const at = this.find(lo, hi);
    if (at >= 0) return;
    this.place(~at, lo, hi);
  }

  delete(id: Uint8Array): void {
    let hole = this.find(lowOf(id), highOf(id));
    if (hole < 0) return;
    this.size--;
    const { lows, highs, mask } = this;
    // Move back every later slot of the run whose home is not between the hole and it.
    for (let j = (hole + 1) & mask; highs[j] !== 0; j = (j + 1) & mask) {
      const home = lows[j]! & mask;
      const between = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (between) continue;
      lows[hole] = lows[j]!;
      highs[hole] = highs[j]!;
      hole = j;
    }
    highs[hole] = 0;
  }

  /** The slot of (lo, hi), or ~(the empty slot where it would go). */
  private find(lo: number, hi: number): number {
    const { lows, highs, mask } = this;
    for (let slot = lo & mask; ; slot = (slot + 1) & mask) {
      if (highs[slot] === 0) return ~slot;
      if (highs[slot] === hi && lows[slot] === lo) return slot;
    }
  }

  private place(slot: number, lo: number, hi: number): void {
    this.lows[slot] = lo;
    this.highs[slot] = hi;
    this.size++;
  }

  private grow(): void {
    const { lows, highs } = this;
    this.lows = new Int32Array(lows.length * 2);
    this.highs = new Int32Array(lows.length * 2);
    this.mask = this.lows.length - 1;
    this.size = 0;
    for (let i = 0; i < lows.length; i++) if (highs[i] !== 0) this.place(~this.find(lows[i]!, highs[i]!), lows[i]!, highs[i]!);
  }
}
