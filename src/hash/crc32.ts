/**
 * CRC-32 (IEEE 802.3, zlib's polynomial) of a byte range, in JavaScript: the segment record
 * header's check (src/engine/record.ts). zlib.crc32 takes a whole view, and a view of a record
 * inside the log's arena is an object per record; this reads the range in place. A record header
 * and its labels are ~100 bytes: a byte-at-a-time table costs about what the call into zlib did.
 */

/** The byte table of a reflected CRC-32 with polynomial `poly` (reflected form). */
export function reflectedTable(poly: number): Uint32Array {
  const table = new Uint32Array(256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
    table[b] = c >>> 0;
  }
  return table;
}

const TABLE = reflectedTable(0xedb88320);

/**
 * The CRC-32 of buf[a, aEnd) then buf[b, bEnd), written little-endian at dst[dstAt]. No CRC
 * leaves the function as a number: one above 2^30 is a heap number wherever it is returned or
 * passed (the segment log seals a header per store with it).
 */
export function writeCrc32Ranges(buf: Uint8Array, a: number, aEnd: number, b: number, bEnd: number, dst: Uint8Array, dstAt: number): void {
  let c = ~0;
  for (let i = a; i < aEnd; i++) c = (c >>> 8) ^ TABLE[(c ^ buf[i]!) & 0xff]!;
  for (let i = b; i < bEnd; i++) c = (c >>> 8) ^ TABLE[(c ^ buf[i]!) & 0xff]!;
  c = ~c;
  dst[dstAt] = c & 0xff;
  dst[dstAt + 1] = (c >>> 8) & 0xff;
  dst[dstAt + 2] = (c >>> 16) & 0xff;
  dst[dstAt + 3] = (c >>> 24) & 0xff;
}

/** zlib.crc32(buf.subarray(start, end), seed), without the view. */
export function crc32Range(buf: Uint8Array, start: number, end: number, seed = 0): number {
  let c = ~seed;
  for (let i = start; i < end; i++) c = (c >>> 8) ^ TABLE[(c ^ buf[i]!) & 0xff]!;
  return ~c >>> 0;
}
