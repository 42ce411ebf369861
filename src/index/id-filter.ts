/**
 * A Bloom filter over the blob ids held here: a store of new bytes (nearly every store) learns
 * that its id is absent without reading the index (the LMDB lookup was ~8% of a 4 KiB PUT's
 * main-thread time). A "no" is certain, a "maybe" goes to the index as before. Ids are uniform
 * hashes, so the probes are taken from the id's own bits (double hashing on two of its words).
 *
 * The filter is built in the background from what the index holds, a slice of ids per turn of
 * the event loop, while every id staged meanwhile is added as it comes; until the build is
 * done (`complete`), every answer is "maybe". Removals stay in the filter (a Bloom filter cannot
 * forget): they only make "maybe" likelier, and a rebuild at twice the size starts once the
 * filter holds more ids than its bits were sized for.
 */

import { wordAt } from '../util/id-words.js';

/** Bits per id the filter is sized for (~0.8% false "maybe" with 7 probes at 10). */
const BITS_PER_ID = 12;
const PROBES = 7;
const MIN_BITS = 1 << 23;

export class IdFilter {
  private readonly words: Int32Array;
  private readonly mask: number;
  /** Ids added (removals are never taken out). */
  added = 0;
  /** Every id held here has been added: a "no" is certain. */
  complete = false;

  constructor(expectedIds: number) {
    let bits = MIN_BITS;
    while (bits < expectedIds * BITS_PER_ID && bits < 2 ** 31) bits *= 2;
    this.words = new Int32Array(bits >>> 5);
    this.mask = bits - 1;
  }

  /** Ids this filter holds before a bigger one is due. */
  get capacity(): number {
    return Math.floor((this.mask + 1) / BITS_PER_ID);
  }

  add(id: Uint8Array): void {
    this.addAt(id, 0);
  }

  /** Adds the id at `at` of `src` (no view of it needed). */
  addAt(src: Uint8Array, at: number): void {
    const h1 = wordAt(src, at);
    const h2 = wordAt(src, at + 4) | 1;
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      this.words[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.added++;
  }

  /** false: the id is certainly not held here (once complete); true: it may be. */
  mayHave(id: Uint8Array): boolean {
    if (!this.complete) return true;
    const h1 = wordAt(id, 0);
    const h2 = wordAt(id, 4) | 1;
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + Math.imul(i, h2)) & this.mask;
      if ((this.words[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

