/**
 * The BLAKE3 digests and CRC-32Cs of several small inputs in one call: the small stores of one
 * event-loop turn (SmallStores.hashPlaced). A 4 KiB body is four 1 KiB BLAKE3 chunks, a quarter of the
 * AVX-512 kernel's 16 lanes, and a kernel call costs the same however many lanes carry input: the
 * addon's blake3_hash_each lays the whole chunks of several bodies side by side (~0.6 us per 4 KiB
 * body here against ~1.75 alone; docs/adr/0012-hot-path.md). Without the addon's function, each input
 * is hashed alone.
 */
import { optionalAddon } from '../util/addon.js';
import { blake3Into } from './blake3.js';
import { crc32c } from './crc32c.js';

/** Inputs one call takes at most (the addon keeps its pointers on the stack). */
export const HASH_EACH_MAX = 64;

/** A quad per input: [bytes, offset, length, digest's buffer]. */
export type HashParts = (Uint8Array | ArrayBuffer | number)[];

interface HashEachAddon {
  /** 0, or a negative status for arguments it cannot take. */
  blake3HashEach(parts: HashParts, count: number, crcs: Uint32Array): number;
}

let addon: HashEachAddon | null | undefined;

const REFUSED = 'hashEachInto: expected [bytes, offset, length, 32-byte buffer] quads and room for the CRCs';

/**
 * For i < count, with parts[4i..4i+4) = [src, offset, length, dst]: BLAKE3-256 of
 * src[offset, offset + length) into dst[0, 32), and its CRC-32C into crcs[i]. count <= HASH_EACH_MAX;
 * no dst or crcs may overlap an input. Throws a TypeError, having written nothing, for arguments it
 * cannot take.
 */
export function hashEachInto(parts: HashParts, count: number, crcs: Uint32Array): void {
  if (addon === undefined) addon = optionalAddon<HashEachAddon>('blake3HashEach');
  if (addon !== null) {
    if (addon.blake3HashEach(parts, count, crcs) !== 0) throw new TypeError(REFUSED);
    return;
  }
  hashEachJs(parts, count, crcs);
}

/** hashEachInto one input at a time, without the addon (exported for the tests). */
export function hashEachJs(parts: HashParts, count: number, crcs: Uint32Array): void {
  if (!(count >= 0 && count <= HASH_EACH_MAX && Number.isInteger(count)) || crcs.length < count) throw new TypeError(REFUSED);
  for (let i = 0; i < count; i++) {
    const src = parts[4 * i];
    const start = parts[4 * i + 1];
    const length = parts[4 * i + 2];
    const dst = parts[4 * i + 3];
    if (!(src instanceof Uint8Array || src instanceof ArrayBuffer) || !(dst instanceof Uint8Array) || dst.length < 32) throw new TypeError(REFUSED);
    if (typeof start !== 'number' || typeof length !== 'number' || !(start >= 0 && length >= 0 && start + length <= src.byteLength)) throw new TypeError(REFUSED);
  }
  for (let i = 0; i < count; i++) {
    const src = parts[4 * i] as Uint8Array | ArrayBuffer;
    const start = parts[4 * i + 1] as number;
    const view = (src instanceof ArrayBuffer ? new Uint8Array(src) : src).subarray(start, start + (parts[4 * i + 2] as number));
    blake3Into(view, parts[4 * i + 3] as Uint8Array, 0);
    crcs[i] = crc32c(view);
  }
}
