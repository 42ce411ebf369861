/**
 * BLAKE3's tree over a large blob's chunks (native/src/blake3.c). BLAKE3 hashes 1 KiB leaves and
 * joins them in a binary tree, so a 1 MiB chunk at a 1 MiB boundary is a node of its blob's tree:
 * its chaining value both checks the chunk on a read and, joined with the others, gives the blob's
 * digest. A blob file (format 2) keeps those chaining values as its digest table, and one pass over
 * the bytes gives the id and every chunk's check, where two passes (the content hash, then each
 * chunk's own digest) were needed before (docs/adr/0012-hot-path.md).
 *
 * Without the addon (not built) the same compression function in JavaScript stands in (path
 * 'js', some tens of MB/s: correct, not fast). BLOBSTORE_BLAKE3_PATH pins the addon's path
 * (portable|avx2|avx512|auto), for tests and benches.
 */
import { optionalAddon } from '../util/addon.js';

/** The tree's leaves. A subtree starts at a multiple of its own power-of-two size in leaves. */
export const LEAF_BYTES = 1024;
export const CV_BYTES = 32;

/** The addon's BLAKE3 functions (native/src/binding_blake3.c): 0, or a negative status. */
interface Blake3Addon {
  blake3Subtree(src: Uint8Array, counter: number, cv: Uint8Array, cvOffset: number, root?: Uint8Array, rootOffset?: number): number;
  blake3Root(cvs: Uint8Array, count: number, dst: Uint8Array, dstOffset: number): number;
  blake3Join(cvs: Uint8Array, count: number, dst: Uint8Array, dstOffset: number): number;
  blake3Path(): string;
}

let addon: Blake3Addon | null | undefined;

function load(): Blake3Addon | null {
  addon = optionalAddon<Blake3Addon>('blake3Subtree');
  return addon;
}

function check(status: number, what: string): void {
  if (status !== 0) throw new RangeError(`${what}: arguments the addon cannot take (status ${status})`);
}

/**
 * Writes to cv[cvAt..+32) the chaining value of `bytes` as the subtree of a larger input that
 * starts at byte `offset` of it (a multiple of LEAF_BYTES, and of the subtree's power-of-two size
 * when more input follows). With `root` (offset 0 only) also writes the digest `bytes` would have
 * alone, for an input that turns out to be this one piece.
 */
export function subtreeCv(bytes: Uint8Array, offset: number, cv: Uint8Array, cvAt: number, root?: Uint8Array, rootAt = 0): void {
  if (offset % LEAF_BYTES !== 0) throw new RangeError(`subtreeCv: offset ${offset} is not a multiple of ${LEAF_BYTES}`);
  const native = addon === undefined ? load() : addon;
  if (native === null) return subtreeJs(bytes, offset / LEAF_BYTES, cv, cvAt, root, rootAt);
  check(native.blake3Subtree(bytes, offset / LEAF_BYTES, cv, cvAt, root, rootAt), 'subtreeCv');
}

/** A chunk's chaining value in a new buffer; withRoot (offset 0), its own digest after it (64 bytes in all). */
export function chunkCvOf(chunk: Uint8Array, offset: number, withRoot: boolean): Buffer {
  const out = Buffer.allocUnsafe(withRoot ? 2 * CV_BYTES : CV_BYTES);
  subtreeCv(chunk, offset, out, 0, withRoot ? out : undefined, CV_BYTES);
  return out;
}

/** Writes to out[outAt..+32) the digest of an input of count >= 2 equal subtrees (the last may be short) from their chaining values. */
export function rootOf(cvs: Uint8Array, count: number, out: Uint8Array, outAt: number): void {
  const native = addon === undefined ? load() : addon;
  if (native === null) return rootJs(cvs, count, out, outAt);
  check(native.blake3Root(cvs, count, out, outAt), 'rootOf');
}

/**
 * Writes to out[outAt..+32) the chaining value of count >= 1 equal subtrees (the last may be
 * short) joined as one subtree of a larger input: a chunk's value from its parts, hashed apart.
 */
export function joinCvs(cvs: Uint8Array, count: number, out: Uint8Array, outAt: number): void {
  const native = addon === undefined ? load() : addon;
  if (native === null) return joinCvsJs(cvs, count, out, outAt);
  check(native.blake3Join(cvs, count, out, outAt), 'joinCvs');
}

/** The path that computes it: the addon's (portable, avx2 or avx512), or 'js'. */
export function blake3TreePath(): string {
  const native = addon === undefined ? load() : addon;
  return native === null ? 'js' : native.blake3Path();
}

// The JavaScript stand-in: the portable C path, word for word.

const IV = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const PERMUTATION = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
const CHUNK_START = 1;
const CHUNK_END = 2;
const PARENT = 4;
const ROOT = 8;
const BLOCK = 64;

const v = new Uint32Array(16);
const m = new Uint32Array(16);
const scratch = new Uint32Array(16);
const block = new Uint8Array(BLOCK);
const blockWords = new DataView(block.buffer);

function g(a: number, b: number, c: number, d: number, x: number, y: number): void {
  v[a] = v[a]! + v[b]! + x;
  v[d] = ((v[d]! ^ v[a]!) >>> 16) | ((v[d]! ^ v[a]!) << 16);
  v[c] = v[c]! + v[d]!;
  v[b] = ((v[b]! ^ v[c]!) >>> 12) | ((v[b]! ^ v[c]!) << 20);
  v[a] = v[a]! + v[b]! + y;
  v[d] = ((v[d]! ^ v[a]!) >>> 8) | ((v[d]! ^ v[a]!) << 24);
  v[c] = v[c]! + v[d]!;
  v[b] = ((v[b]! ^ v[c]!) >>> 7) | ((v[b]! ^ v[c]!) << 25);
}

/** cv (8 words) becomes the first half of the compression of `block` (already in `block`). */
function compress(cv: Uint32Array, blockLen: number, counter: number, flags: number): void {
  for (let i = 0; i < 16; i++) m[i] = blockWords.getUint32(4 * i, true);
  v.set(cv, 0);
  v.set(IV.subarray(0, 4), 8);
  v[12] = counter >>> 0;
  v[13] = Math.floor(counter / 0x100000000);
  v[14] = blockLen;
  v[15] = flags;
  for (let r = 0; r < 7; r++) {
    g(0, 4, 8, 12, m[0]!, m[1]!);
    g(1, 5, 9, 13, m[2]!, m[3]!);
    g(2, 6, 10, 14, m[4]!, m[5]!);
    g(3, 7, 11, 15, m[6]!, m[7]!);
    g(0, 5, 10, 15, m[8]!, m[9]!);
    g(1, 6, 11, 12, m[10]!, m[11]!);
    g(2, 7, 8, 13, m[12]!, m[13]!);
    g(3, 4, 9, 14, m[14]!, m[15]!);
    for (let i = 0; i < 16; i++) scratch[i] = m[PERMUTATION[i]!]!;
    m.set(scratch);
  }
  for (let i = 0; i < 8; i++) cv[i] = v[i]! ^ v[i + 8]!;
}

function store(cv: Uint32Array, out: Uint8Array, at: number): void {
  const view = new DataView(out.buffer, out.byteOffset + at, CV_BYTES);
  for (let i = 0; i < 8; i++) view.setUint32(4 * i, cv[i]!, true);
}

function chunkJs(bytes: Uint8Array, counter: number, last: number, out: Uint8Array, at: number): void {
  const cv = IV.slice();
  const blocks = Math.max(1, Math.ceil(bytes.length / BLOCK));
  for (let b = 0; b < blocks; b++) {
    const part = bytes.subarray(b * BLOCK, (b + 1) * BLOCK);
    block.fill(0);
    block.set(part);
    compress(cv, part.length, counter, (b === 0 ? CHUNK_START : 0) | (b === blocks - 1 ? CHUNK_END | last : 0));
  }
  store(cv, out, at);
}

function parentJs(pair: Uint8Array, extra: number, out: Uint8Array, at: number): void {
  const cv = IV.slice();
  block.set(pair.subarray(0, BLOCK));
  compress(cv, BLOCK, 0, PARENT | extra);
  store(cv, out, at);
}

/** The largest power of two below n (n >= 2). */
function leftCount(n: number): number {
  let p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

function subtreeJs(bytes: Uint8Array, counter: number, cv: Uint8Array, cvAt: number, root: Uint8Array | undefined, rootAt: number): void {
  const leaves = Math.max(1, Math.ceil(bytes.length / LEAF_BYTES));
  if (leaves === 1) {
    chunkJs(bytes, counter, 0, cv, cvAt);
    if (root) chunkJs(bytes, counter, ROOT, root, rootAt);
    return;
  }
  const pair = new Uint8Array(BLOCK);
  const left = leftCount(leaves) * LEAF_BYTES;
  subtreeJs(bytes.subarray(0, left), counter, pair, 0, undefined, 0);
  subtreeJs(bytes.subarray(left), counter + left / LEAF_BYTES, pair, CV_BYTES, undefined, 0);
  parentJs(pair, 0, cv, cvAt);
  if (root) parentJs(pair, ROOT, root, rootAt);
}

function joinJs(cvs: Uint8Array, count: number, extra: number, out: Uint8Array, at: number): void {
  if (count === 1) {
    out.set(cvs.subarray(0, CV_BYTES), at);
    return;
  }
  const pair = new Uint8Array(BLOCK);
  const left = leftCount(count);
  joinJs(cvs, left, 0, pair, 0);
  joinJs(cvs.subarray(left * CV_BYTES), count - left, 0, pair, CV_BYTES);
  parentJs(pair, extra, out, at);
}

function joinCvsJs(cvs: Uint8Array, count: number, out: Uint8Array, outAt: number): void {
  if (!(count >= 1 && count * CV_BYTES <= cvs.length)) throw new RangeError(`joinCvs: ${count} chaining values`);
  joinJs(cvs, count, 0, out, outAt);
}

function rootJs(cvs: Uint8Array, count: number, out: Uint8Array, outAt: number): void {
  if (!(count >= 2 && count * CV_BYTES <= cvs.length)) throw new RangeError(`rootOf: ${count} chaining values`);
  joinJs(cvs, count, ROOT, out, outAt);
}

/** The JavaScript stand-in itself, for tests: the addon's functions, computed without it. */
export const blake3TreeJs = {
  subtreeCv: (bytes: Uint8Array, offset: number, cv: Uint8Array, cvAt: number, root?: Uint8Array, rootAt = 0): void =>
    subtreeJs(bytes, offset / LEAF_BYTES, cv, cvAt, root, rootAt),
  rootOf: rootJs,
  joinCvs: joinCvsJs,
};
