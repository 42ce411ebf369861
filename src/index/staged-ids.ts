/**
 * The overlay's blob records (overlay.ts) keyed by the 16-byte id in typed arrays: staging a
 * store costs no key string, slot object or hash-table rebuild (a Map with an entry set per store
 * and deleted per commit rebuilt its table every few dozen stores: ~190 bytes of garbage per
 * store, src/index/README.md). Open addressing with linear probing from the id's first 4 bytes (ids
 * are uniform hashes); a commit drops the slots it covered by rebuilding the table from what stays.
 */
import type { Slot, Staged } from './staged.js';
import { sameId, wordAt } from '../util/id-words.js';

const ID_BYTES = 16;
const MIN_SLOTS = 1024;

/** One layout of the table: slots of ids, their LSNs and values, and which are in use. */
interface Table<T> {
  ids: Buffer;
  /** 1 where a slot holds an id. */
  used: Uint8Array;
  lsns: Float64Array;
  values: (T | null)[];
}

function newTable<T>(slots: number): Table<T> {
  return { ids: Buffer.alloc(slots * ID_BYTES), used: new Uint8Array(slots), lsns: new Float64Array(slots), values: new Array<T | null>(slots).fill(null) };
}

export class StagedIds<T> implements Staged<T> {
  private t: Table<T> = newTable(MIN_SLOTS);
  /** The table a commit's rebuild lays the kept slots into (then swapped): no allocation per commit. */
  private spare: Table<T> | undefined;
  private mask = MIN_SLOTS - 1;
  /** lookup()'s answer: one object, valid until the next lookup. */
  private readonly found: Slot<T> = { value: null, lsn: 0, written: false };
  size = 0;
  /** The most slots in use since the last commit dropped any (rebuild's shrink test). */
  private peak = 0;

  lookup(key: Buffer): Slot<T> | undefined {
    if (this.size === 0) return undefined;
    const slot = this.find(key, 0);
    if (slot < 0) return undefined;
    const f = this.found;
    f.value = this.t.values[slot]!;
    f.lsn = this.t.lsns[slot]!;
    return f;
  }

  set(key: Buffer, value: T | null, lsn: number): void {
    if (2 * (this.size + 1) > this.t.used.length) this.rebuild(this.t.used.length * 2, -Infinity);
    this.put(key, 0, value, lsn);
    if (this.size > this.peak) this.peak = this.size;
  }

  /** Stages the id at src[at, at + 16) (the table has room). */
  private put(src: Uint8Array, at: number, value: T | null, lsn: number): void {
    const t = this.t;
    let slot = this.find(src, at);
    if (slot < 0) {
      slot = ~slot;
      t.used[slot] = 1;
      for (let i = 0; i < ID_BYTES; i++) t.ids[slot * ID_BYTES + i] = src[at + i]!;
      this.size++;
    }
    t.values[slot] = value;
    t.lsns[slot] = lsn;
  }

  /** Slots from `start` (inclusive) in byte order, with their keys (a listing's rare path: copies). */
  sortedFrom(start: Buffer | undefined): { key: Buffer; slot: Slot<T> }[] {
    const { ids, used, lsns, values } = this.t;
    const out: { key: Buffer; slot: Slot<T> }[] = [];
    for (let s = 0; s < used.length; s++) {
      if (used[s] === 0) continue;
      const key = Buffer.from(ids.subarray(s * ID_BYTES, s * ID_BYTES + ID_BYTES));
      if (start === undefined || Buffer.compare(key, start) >= 0) out.push({ key, slot: { value: values[s]!, lsn: lsns[s]!, written: false } });
    }
    return out.sort((a, b) => Buffer.compare(a.key, b.key));
  }

  /** Drops the slots staged by records up to `lsn` (their transaction committed). */
  dropThrough(lsn: number): void {
    if (this.size === 0) return;
    this.rebuild(this.t.used.length, lsn);
    this.peak = this.size;
  }

  /** Slots in the table (tests: it shrinks again after a burst). */
  get capacity(): number {
    return this.t.used.length;
  }

  /** The slot of the id at key[at, at + 16), or ~(the empty slot where it would go). */
  private find(key: Uint8Array, at: number): number {
    const { ids, used } = this.t;
    const mask = this.mask;
    for (let slot = wordAt(key, at) & mask; ; slot = (slot + 1) & mask) {
      if (used[slot] === 0) return ~slot;
      if (sameId(ids, slot * ID_BYTES, key, at)) return slot;
    }
  }

  /**
   * Lays the slots staged after `dropLsn` out again over `slots` slots (the spare table when the
   * size stays). A table that was an eighth full or less all through the last commit's interval is
   * halved, so that after a burst commits do not keep walking its size; one that a steady load
   * fills between commits keeps its size (halving it at each commit and doubling it again while
   * the next interval's stores came in made two tables of garbage per commit).
   */
  private rebuild(slots: number, dropLsn: number): void {
    const old = this.t;
    let keep = 0;
    for (let s = 0; s < old.used.length; s++) if (old.used[s] === 1 && old.lsns[s]! > dropLsn) keep++;
    if (slots === old.used.length && slots > MIN_SLOTS && 8 * Math.max(keep, this.peak) <= slots) slots /= 2;
    if (keep === 0 && slots === old.used.length) {
      clear(old);
      this.size = 0;
      return;
    }
    const same = slots === old.used.length;
    const next = same && this.spare !== undefined ? this.spare : newTable<T>(slots);
    this.t = next;
    this.mask = slots - 1;
    this.size = 0;
    for (let s = 0; s < old.used.length; s++) {
      if (old.used[s] === 0 || old.lsns[s]! <= dropLsn) continue;
      this.put(old.ids, s * ID_BYTES, old.values[s]!, old.lsns[s]!);
    }
    clear(old);
    this.spare = same ? old : undefined;
  }
}

/** Empties a table (its values let go, for the collector). */
function clear<T>(t: Table<T>): void {
  t.used.fill(0);
  t.values.fill(null);
}

