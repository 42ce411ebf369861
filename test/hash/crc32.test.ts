/** CRC-32 of a byte range in place (src/hash/crc32.ts): zlib.crc32 of the same bytes, seeded or not. */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32Range } from '../../src/hash/crc32.js';

describe('crc32Range', () => {
  it('is zlib.crc32 of the range, for empty, short and long ranges at any offset', () => {
    const buf = randomBytes(5000);
    for (const [start, end] of [[0, 0], [0, 1], [3, 99], [7, 7 + 96], [1000, 5000], [0, 5000]] as const) {
      expect(crc32Range(buf, start, end)).toBe(crc32(buf.subarray(start, end)));
    }
  });

  it('continues from a seed as zlib.crc32 does (a header, then its labels)', () => {
    const buf = randomBytes(300);
    const head = crc32Range(buf, 0, 96);
    expect(crc32Range(buf, 104, 180, head)).toBe(crc32(buf.subarray(104, 180), crc32(buf.subarray(0, 96))));
  });

  it('knows the check value of "123456789" (0xCBF43926)', () => {
    expect(crc32Range(Buffer.from('123456789'), 0, 9)).toBe(0xcbf43926);
  });
});
