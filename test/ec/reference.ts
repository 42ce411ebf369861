/**
 * A plain reference codec for the tests, written from the definitions: shift-and-add
 * multiplication modulo x^8 + x^4 + x^3 + x^2 + 1, inverses by search, parity as the sum of
 * products, and reconstruction by Gaussian elimination. Slow and obviously correct.
 */

export function gfMul(a: number, b: number): number {
  let x = a;
  let y = b;
  let product = 0;
  while (y !== 0) {
    if (y & 1) product ^= x;
    y >>= 1;
    x <<= 1;
    if (x & 0x100) x ^= 0x11d;
  }
  return product;
}

export function gfInv(a: number): number {
  for (let b = 1; b < 256; b++) if (gfMul(a, b) === 1) return b;
  throw new Error(`no inverse of ${a}`);
}

/** The product table row c: row[x] = c * x. */
const rows = new Map<number, Uint8Array>();
function productRow(c: number): Uint8Array {
  let row = rows.get(c);
  if (row === undefined) {
    row = new Uint8Array(256);
    for (let x = 0; x < 256; x++) row[x] = gfMul(c, x);
    rows.set(c, row);
  }
  return row;
}

/** Row r of the encoding matrix: identity for data, 1 / ((k + i) XOR j) for parity i. */
export function encodingRow(k: number, r: number): number[] {
  return Array.from({ length: k }, (_, j) => (r < k ? Number(r === j) : gfInv((r ^ j) & 0xff)));
}

/** out = XOR over j of coefs[j] * inputs[j], byte by byte. */
function combine(coefs: readonly number[], inputs: readonly Uint8Array[], len: number): Uint8Array {
  const out = new Uint8Array(len);
  coefs.forEach((c, j) => {
    const row = productRow(c);
    const input = inputs[j];
    for (let i = 0; i < len; i++) out[i] ^= row[input[i]];
  });
  return out;
}

export function referenceParity(k: number, m: number, data: readonly Uint8Array[]): Uint8Array[] {
  const len = data[0].length;
  return Array.from({ length: m }, (_, i) => combine(encodingRow(k, k + i), data, len));
}

/** Inverts a square matrix over GF(2^8) by Gauss-Jordan elimination. */
export function invert(matrix: readonly number[][]): number[][] {
  const n = matrix.length;
  const a = matrix.map((row, i) => [...row, ...Array.from({ length: n }, (_, j) => Number(i === j))]);
  for (let col = 0; col < n; col++) {
    const pivot = a.findIndex((row, r) => r >= col && row[col] !== 0);
    if (pivot < 0) throw new Error('singular');
    [a[col], a[pivot]] = [a[pivot], a[col]];
    const scale = gfInv(a[col][col]);
    a[col] = a[col].map((v) => gfMul(v, scale));
    for (let r = 0; r < n; r++) {
      const f = a[r][col];
      if (r !== col && f !== 0) a[r] = a[r].map((v, c) => v ^ gfMul(f, a[col][c]));
    }
  }
  return a.map((row) => row.slice(n));
}

/** The whole stripe rebuilt from the first k present shards. */
export function referenceReconstruct(k: number, m: number, shards: readonly Uint8Array[], present: readonly boolean[]): Uint8Array[] {
  const chosen = present.flatMap((p, i) => (p ? [i] : [])).slice(0, k);
  const decode = invert(chosen.map((i) => encodingRow(k, i)));
  const inputs = chosen.map((i) => shards[i]);
  const len = shards[0].length;
  const data = decode.map((row) => combine(row, inputs, len));
  return [...data, ...referenceParity(k, m, data)];
}

/** Seeded PRNG (mulberry32), so failures reproduce. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomBytes(next: () => number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) out[i] = (next() * 256) | 0;
  return out;
}
