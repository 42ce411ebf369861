/** A seeded xorshift32 in [0, 1): property tests print their seed and can repeat a sequence. */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0 || 0x9e3779b9; // xorshift stays at 0 from 0
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}
