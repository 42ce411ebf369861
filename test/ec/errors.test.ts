/**
 * Bad input is a thrown EcError with a stable code and a message that names the problem; never
 * a crash, never a read or write outside the shards.
 */
import { describe, expect, test } from 'vitest';

import { BlobstoreError } from '../../src/errors/errors.js';
import { EcError, EcErrorCode, ecLimits, encode, encodeUpdate, reconstruct, setEcKernelPath, type Shard } from '../../src/ec/index.js';

const bufs = (n: number, len: number): Buffer[] => Array.from({ length: n }, () => Buffer.alloc(len));

function thrown(fn: () => unknown): EcError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EcError);
    expect(err).toBeInstanceOf(BlobstoreError);
    return err as EcError;
  }
  throw new Error('expected an EcError');
}

const anyShards = (xs: unknown[]): Shard[] => xs as Shard[];

describe('encode rejects', () => {
  test.each([
    [0, 2, EcErrorCode.K_RANGE, /k must be an integer in 1\.\.64, got 0/],
    [65, 2, EcErrorCode.K_RANGE, /got 65/],
    [4, 0, EcErrorCode.M_RANGE, /m must be an integer in 1\.\.16, got 0/],
    [4, 17, EcErrorCode.M_RANGE, /got 17/],
    [2.5, 2, EcErrorCode.ARG_TYPE, /integers/],
    [Number.NaN, 2, EcErrorCode.ARG_TYPE, /integers/],
    ['4', 2, EcErrorCode.ARG_TYPE, /integers/],
  ])('k=%s m=%s with %s', (k, m, code, message) => {
    const err = thrown(() => encode(k as number, m as number, bufs(4, 8), bufs(2, 8)));
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
    expect(err.status).toBe(400);
  });

  test('a wrong number of data or parity shards', () => {
    expect(thrown(() => encode(4, 2, bufs(3, 8), bufs(2, 8))).message).toMatch(/expected k = 4 data shards/);
    expect(thrown(() => encode(4, 2, bufs(4, 8), bufs(3, 8))).message).toMatch(/expected m = 2 parity shards/);
  });

  test('a shard of another length, naming the shard', () => {
    const parity = bufs(2, 8);
    parity[1] = Buffer.alloc(7);
    const err = thrown(() => encode(4, 2, bufs(4, 8), parity));
    expect(err.code).toBe(EcErrorCode.SHARD_LENGTH);
    expect(err.shardIndex).toBe(5);
    expect(err.message).toMatch(/shard 5 differs in length/);
  });

  test.each([null, undefined, 'abcdefgh', 42, {}, [1, 2, 3], new DataView(new ArrayBuffer(8))])('a shard that is %s', (bad) => {
    const data = anyShards([...bufs(3, 8), bad]);
    const err = thrown(() => encode(4, 2, data, bufs(2, 8)));
    expect(err.code).toBe(EcErrorCode.SHARD_TYPE);
    expect(err.shardIndex).toBe(3);
  });

  test('shard arrays that are not arrays', () => {
    expect(thrown(() => encode(4, 2, 'nope' as never, bufs(2, 8))).code).toBe(EcErrorCode.ARG_TYPE);
    expect(thrown(() => encode(4, 2, bufs(4, 8), null as never)).code).toBe(EcErrorCode.ARG_TYPE);
  });

  test('a parity shard that overlaps a data shard or another parity shard', () => {
    const base = Buffer.alloc(64);
    const data = [0, 8, 16, 24].map((o) => base.subarray(o, o + 8));
    expect(thrown(() => encode(4, 2, data, [base.subarray(32, 40), base.subarray(20, 28)])).code).toBe(EcErrorCode.OVERLAP);
    expect(thrown(() => encode(4, 2, data, [base.subarray(32, 40), base.subarray(36, 44)])).code).toBe(EcErrorCode.OVERLAP);
  });

  test('an element getter that detaches an earlier shard is seen before any pointer is taken', () => {
    const victim = new ArrayBuffer(8);
    const data: Shard[] = [victim, ...bufs(3, 8)];
    const parity = bufs(2, 8);
    Object.defineProperty(parity, 1, {
      get: () => {
        structuredClone(victim, { transfer: [victim] });
        return Buffer.alloc(8);
      },
    });
    const err = thrown(() => encode(4, 2, data, parity));
    expect(err.code).toBe(EcErrorCode.SHARD_LENGTH);
    expect(victim.byteLength).toBe(0);
  });

  test('a detached ArrayBuffer (its length is now 0)', () => {
    const data: Shard[] = bufs(4, 8);
    const gone = new ArrayBuffer(8);
    structuredClone(gone, { transfer: [gone] });
    data[2] = gone;
    expect(thrown(() => encode(4, 2, data, bufs(2, 8))).code).toBe(EcErrorCode.SHARD_LENGTH);
  });
});

describe('encodeUpdate rejects', () => {
  test.each([
    [0, 2, 0, EcErrorCode.K_RANGE, /k must be an integer in 1\.\.64, got 0/],
    [4, 17, 0, EcErrorCode.M_RANGE, /got 17/],
    [4, 2, -1, EcErrorCode.INDEX_RANGE, /index must be an integer in 0\.\.3 \(a data shard of k = 4\), got -1/],
    [4, 2, 4, EcErrorCode.INDEX_RANGE, /got 4/],
    [4, 2, 1.5, EcErrorCode.ARG_TYPE, /k, m and index must be integers/],
    [4, 2, '1', EcErrorCode.ARG_TYPE, /integers/],
    [4.5, 2, 1, EcErrorCode.ARG_TYPE, /integers/],
  ])('k=%s m=%s index=%s with %s', (k, m, index, code, message) => {
    const err = thrown(() => encodeUpdate(k, m, index as number, Buffer.alloc(8), bufs(2, 8)));
    expect(err.code).toBe(code);
    expect(err.message).toMatch(/^encodeUpdate: /);
    expect(err.message).toMatch(message);
    expect(err.status).toBe(400);
  });

  test('a wrong number of parity shards, or parity that is no array', () => {
    expect(thrown(() => encodeUpdate(4, 2, 0, Buffer.alloc(8), bufs(3, 8))).message).toMatch(/expected m = 2 parity shards/);
    expect(thrown(() => encodeUpdate(4, 2, 0, Buffer.alloc(8), null as never)).code).toBe(EcErrorCode.ARG_TYPE);
  });

  test('a parity shard of another length than the data, naming it by its place in the stripe', () => {
    const parity = bufs(2, 8);
    parity[1] = Buffer.alloc(9);
    const err = thrown(() => encodeUpdate(4, 2, 1, Buffer.alloc(8), parity));
    expect(err.code).toBe(EcErrorCode.SHARD_LENGTH);
    expect(err.shardIndex).toBe(5);
    expect(err.message).toMatch(/shard 5 differs in length from data shard 1/);
  });

  test.each([null, 'abcdefgh', 42, [1, 2], new DataView(new ArrayBuffer(8))])('data or a parity shard that is %s', (bad) => {
    const onData = thrown(() => encodeUpdate(4, 2, 2, bad as never, bufs(2, 8)));
    expect(onData.code).toBe(EcErrorCode.SHARD_TYPE);
    expect(onData.shardIndex).toBe(2);
    const onParity = thrown(() => encodeUpdate(4, 2, 2, Buffer.alloc(8), anyShards([Buffer.alloc(8), bad])));
    expect(onParity.code).toBe(EcErrorCode.SHARD_TYPE);
    expect(onParity.shardIndex).toBe(5);
  });

  test('parity that overlaps the data or other parity, and leaves every byte as it was', () => {
    const base = Buffer.alloc(32, 7);
    const data = base.subarray(0, 8);
    const onData = thrown(() => encodeUpdate(4, 2, 0, data, [base.subarray(8, 16), base.subarray(4, 12)]));
    expect(onData).toMatchObject({ code: EcErrorCode.OVERLAP, shardIndex: 5 });
    const onParity = thrown(() => encodeUpdate(4, 2, 0, data, [base.subarray(8, 16), base.subarray(12, 20)]));
    expect(onParity).toMatchObject({ code: EcErrorCode.OVERLAP, shardIndex: 5 });
    expect(thrown(() => encodeUpdate(4, 2, 0, data, [data, base.subarray(16, 24)]))).toMatchObject({ shardIndex: 4 });
    expect(base.every((b) => b === 7)).toBe(true);
  });
});

describe('reconstruct rejects', () => {
  test('more than m missing shards', () => {
    const present = [false, true, false, true, false, true];
    const err = thrown(() => reconstruct(4, 2, bufs(6, 8), present));
    expect(err.code).toBe(EcErrorCode.TOO_MANY_MISSING);
    expect(err.message).toMatch(/3 shards are missing but at most m = 2 may be/);
  });

  test.each([
    ['too short', [true, true, true, true, true]],
    ['not booleans', [1, 1, 1, 1, 1, 0]],
    ['not an array', 'yes'],
  ])('present that is %s', (_, present) => {
    expect(thrown(() => reconstruct(4, 2, bufs(6, 8), present as never)).code).toBe(EcErrorCode.PRESENT_TYPE);
  });

  test('a dataOnly option that is not a boolean', () => {
    const err = thrown(() => reconstruct(4, 2, bufs(6, 8), [true, true, true, true, true, false], { dataOnly: 'yes' } as never));
    expect(err.code).toBe(EcErrorCode.ARG_TYPE);
  });

  test('a wrong number of shards', () => {
    const err = thrown(() => reconstruct(4, 2, bufs(5, 8), [true, true, true, true, true, false]));
    expect(err.code).toBe(EcErrorCode.SHARD_COUNT);
    expect(err.message).toMatch(/expected k \+ m = 6 shards/);
  });

  test('shards of unequal length', () => {
    const shards = bufs(6, 8);
    shards[0] = Buffer.alloc(9);
    expect(thrown(() => reconstruct(4, 2, shards, [true, true, true, true, true, false])).code).toBe(EcErrorCode.SHARD_LENGTH);
  });
});

describe('kernel path selection', () => {
  test('an unknown path name', () => {
    expect(thrown(() => setEcKernelPath('mmx' as never)).code).toBe(EcErrorCode.PATH_UNKNOWN);
  });

  test('the limits are k <= 64 and m <= 16', () => {
    expect(ecLimits()).toMatchObject({ kMax: 64, mMax: 16 });
  });
});
