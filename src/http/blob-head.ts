/**
 * The head of a 200 answer to the GET of a cached blob, as uWS's writeStatus takes it: the status
 * and every header up to Content-Length (uWS adds the CRLF after it, then Content-Length). The same
 * bytes as BlobRoutes.writeBlobHead writes. Made once per cached record, written in place into
 * the buffer of the record the cache evicted for it when its length fits, so that a GET that
 * misses the cache does not build strings for its answer either.
 */
import type { CachedRecord } from '../service/local-store.js';

const PREFIX = Buffer.from('200 OK\r\nContent-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\nETag: "', 'latin1');
const SIZE = Buffer.from('"\r\nX-Blobstore-Blob-Size: ', 'latin1');
const CREATED = Buffer.from('\r\nX-Blobstore-Created-At: ', 'latin1');
const POLICY = Buffer.from('\r\nX-Blobstore-Policy: ', 'latin1');
const HEX = Buffer.from('0123456789abcdef', 'latin1');
const ZERO = 48;

/** Decimal groups of 4 digits of a u64, least significant first (scratch for writeU64). */
const groups = new Int32Array(5);
/** A u64 as 16-bit limbs, most significant first (scratch for writeU64). */
const limbs = new Int32Array(4);

/** Digits of a non-negative integer below 2^53. */
function digitsOf(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

function writeNumber(out: Buffer, at: number, n: number, digits: number): number {
  for (let i = at + digits - 1; i >= at; i--) {
    out[i] = ZERO + (n % 10);
    n = Math.floor(n / 10);
  }
  return at + digits;
}

/** Splits the u64 (lo, hi: its 32-bit words, read signed or not) into groups of 4 decimal digits; returns how many. */
function u64Groups(lo: number, hi: number): number {
  limbs[0] = hi >>> 16;
  limbs[1] = hi & 0xffff;
  limbs[2] = lo >>> 16;
  limbs[3] = lo & 0xffff;
  let count = 0;
  do {
    let rest = 0;
    let left = 0;
    for (let i = 0; i < 4; i++) {
      const cur = rest * 65536 + limbs[i]!;
      const q = Math.floor(cur / 10000);
      rest = cur - q * 10000;
      limbs[i] = q;
      left |= q;
    }
    groups[count++] = rest;
    if (left === 0) break;
  } while (count < 5);
  return count;
}

/** The decimal length of the u64 (lo, hi). */
export function u64Digits(lo: number, hi: number): number {
  const count = u64Groups(lo, hi);
  return 4 * (count - 1) + digitsOf(groups[count - 1]!);
}

/** Writes the u64 (lo, hi as uint32) in decimal at `at`; returns the end. */
export function writeU64(out: Buffer, at: number, lo: number, hi: number): number {
  const count = u64Groups(lo, hi);
  at = writeNumber(out, at, groups[count - 1]!, digitsOf(groups[count - 1]!));
  for (let g = count - 2; g >= 0; g--) at = writeNumber(out, at, groups[g]!, 4);
  return at;
}

/** The record's answer head (its own buffer, reused when the length fits). */
export function answerHeadOf(rec: CachedRecord): Buffer {
  const k = rec.keyBytes;
  // Key layout (verified-cache.ts): id 0..16, size 16..24, created-at 24..32, checksum 32..64.
  const size = k.readUInt32LE(16) + k.readUInt32LE(20) * 2 ** 32;
  // Read signed: a word of 2^31 or more read unsigned is a boxed number (u64Groups takes either).
  const createdLo = k.readInt32LE(24);
  const createdHi = k.readInt32LE(28);
  const sizeDigits = digitsOf(size);
  const length =
    PREFIX.length + 64 + SIZE.length + sizeDigits + CREATED.length + u64Digits(createdLo, createdHi) + POLICY.length + digitsOf(rec.policy);
  const out = rec.spareHead !== undefined && rec.spareHead.length === length ? rec.spareHead : Buffer.allocUnsafeSlow(length);
  let at = PREFIX.copy(out, 0);
  for (let i = 32; i < 64; i++) {
    out[at++] = HEX[k[i]! >> 4]!;
    out[at++] = HEX[k[i]! & 15]!;
  }
  at += SIZE.copy(out, at);
  at = writeNumber(out, at, size, sizeDigits);
  at += CREATED.copy(out, at);
  at = writeU64(out, at, createdLo, createdHi);
  at += POLICY.copy(out, at);
  writeNumber(out, at, rec.policy, digitsOf(rec.policy));
  return out;
}
