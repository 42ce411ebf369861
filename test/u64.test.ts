/** The allocation-free 64-bit writers write what Buffer.writeBigUInt64LE writes. */
import { describe, expect, it } from 'vitest';
import { writeU64, writeU64Big } from '../src/util/u64.js';

const numbers = [0, 1, 255, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 1_732_000_000_123, 2 ** 53 - 1];
const bigints = [...numbers.map(BigInt), 2n ** 63n, 2n ** 64n - 1n, 1_764_057_600_123_456_789n];

describe('64-bit little-endian writers', () => {
  it.each(numbers)('writeU64(%d) matches writeBigUInt64LE, at an odd offset', (n) => {
    const ours = Buffer.alloc(11, 0xee);
    const node = Buffer.alloc(11, 0xee);
    writeU64(ours, n, 3);
    node.writeBigUInt64LE(BigInt(n), 3);
    expect(ours).toEqual(node);
  });

  it.each(bigints)('writeU64Big(%s) matches writeBigUInt64LE, at an odd offset', (v) => {
    const ours = Buffer.alloc(11, 0xee);
    const node = Buffer.alloc(11, 0xee);
    writeU64Big(ours, v, 3);
    node.writeBigUInt64LE(v, 3);
    expect(ours).toEqual(node);
    expect(ours.readBigUInt64LE(3)).toBe(v);
  });
});
