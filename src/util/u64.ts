/**
 * 64-bit little-endian fields written without allocating. Buffer.writeBigUInt64LE masks and shifts
 * its BigInt (three BigInts per call, and BigInt(n) a fourth): ~630 B per 4 KiB PUT over its seven
 * fields (bench/node/alloc-profile.ts). A number is written as two 32-bit halves; a BigInt goes
 * through a BigUint64Array slot, which converts it in place.
 */
const slot = new BigUint64Array(1);
const slotBytes = new Uint8Array(slot.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * `n`, in [0, 2^32), at `at`, a byte at a time: Buffer.writeUInt32LE takes the value as an argument,
 * a heap number when it is above 2^30 (a CRC, three times in four) unless the call is inlined.
 */
export function writeU32(buf: Uint8Array, n: number, at: number): void {
  buf[at] = n & 0xff;
  buf[at + 1] = (n >>> 8) & 0xff;
  buf[at + 2] = (n >>> 16) & 0xff;
  buf[at + 3] = (n >>> 24) & 0xff;
}

/** `n`, a whole number in [0, 2^53), at `at`. */
export function writeU64(buf: Buffer, n: number, at: number): void {
  buf.writeUInt32LE(n >>> 0, at);
  buf.writeUInt32LE(Math.floor(n / 0x1_0000_0000), at + 4);
}

/** `v`, in [0, 2^64), at `at` (little-endian, whatever the host's order). */
export function writeU64Big(buf: Uint8Array, v: bigint, at: number): void {
  slot[0] = v;
  if (LITTLE_ENDIAN) {
    buf.set(slotBytes, at);
  } else {
    for (let i = 0; i < 8; i++) buf[at + i] = slotBytes[7 - i]!;
  }
}
