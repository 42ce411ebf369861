/**
 * Blob ids read a 32-bit word at a time, for the typed-array tables that hash and compare them
 * without allocating (index/id-table.ts, index/staged-ids.ts, index/id-filter.ts, engine/id-locks.ts).
 * Words are read signed: a small integer to V8, where an unsigned word of 2^31 or more would be a
 * boxed number.
 */

/** Four bytes at `at`, little endian, as a signed 32-bit integer. */
export const wordAt = (b: Uint8Array, at: number): number => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);

/** Whether the 16-byte ids at a[aAt..] and b[bAt..] are the same, a word at a time. */
export function sameId(a: Uint8Array, aAt: number, b: Uint8Array, bAt: number): boolean {
  return wordAt(a, aAt) === wordAt(b, bAt) && wordAt(a, aAt + 4) === wordAt(b, bAt + 4) &&
    wordAt(a, aAt + 8) === wordAt(b, bAt + 8) && wordAt(a, aAt + 12) === wordAt(b, bAt + 12);
}
