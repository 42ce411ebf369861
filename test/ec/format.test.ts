/**
 * The encoding is part of the on-disk format: these parity bytes must never change. If one of
 * these tests fails, the change breaks every stored stripe: bump EC_FORMAT_VERSION and keep a
 * decoder for the old format instead of editing the vectors.
 */
import { createHash } from 'node:crypto';

import { describe, expect, test } from 'vitest';

import { EC_FORMAT_VERSION, ecEncodingMatrix, ecKernelPaths, ecLimits, encode, setEcKernelPath } from '../../src/ec/index.js';
import { encodingRow, referenceParity } from './reference.js';

/** Data shard j, byte i = (7i + 31j + 1) mod 256. */
function goldenData(k: number, len: number): Buffer[] {
  return Array.from({ length: k }, (_, j) => Buffer.from(Array.from({ length: len }, (_, i) => (i * 7 + j * 31 + 1) & 0xff)));
}

const GOLDEN: readonly { k: number; m: number; parity: string[] }[] = [
  { k: 4, m: 2, parity: ['56f4b05fed4e08311bf7d1048c2d4f23', '4814e46cb98120ac333e8537d89eaaef'] },
  { k: 8, m: 2, parity: ['d98aad6041792fdbc7872ad8ea2d93fb', 'eb83cd6a21829d0f75a94afe8a75da32'] },
  {
    k: 10,
    m: 4,
    parity: [
      'd65309429c5a9f8f5b0f83384843ae51',
      '680ee8ea7da17ed4baa68915a9e57edf',
      '6c4254e9c748c7e95053c54033b9480b',
      'df758583160066fff15fb60ee27b5b51',
    ],
  },
];
/** SHA-256 of the two parity shards (concatenated) of 8+2 over 1 MiB + 1 bytes of goldenData. */
const GOLDEN_8_2_1MIB_SHA256 = 'c1e632ac6ad9bc752d813bba2111f864e44961dac997884aef7747660d1de93f';

const supported = ecKernelPaths().filter((p) => p.supported).map((p) => p.name);

describe('format version 1', () => {
  test('the TypeScript and native format versions agree', () => {
    expect(EC_FORMAT_VERSION).toBe(1);
    expect(ecLimits().formatVersion).toBe(EC_FORMAT_VERSION);
  });

  test('the encoding matrix is the identity over the Cauchy rows 1 / ((k + i) xor j)', () => {
    for (const [k, m] of [[1, 1], [4, 2], [8, 2], [10, 4], [32, 8]]) {
      const matrix = ecEncodingMatrix(k, m);
      const expected = Array.from({ length: k + m }, (_, r) => encodingRow(k, r)).flat();
      expect(Array.from(matrix)).toEqual(expected);
    }
  });

  test('the reference codec produces the golden parity (the vectors are not our own output)', () => {
    for (const { k, m, parity } of GOLDEN) {
      expect(referenceParity(k, m, goldenData(k, 16)).map((p) => Buffer.from(p).toString('hex'))).toEqual(parity);
    }
  });

  describe.each(supported)('path %s', (path) => {
    test('produces the golden parity bytes', () => {
      setEcKernelPath(path as never);
      for (const { k, m, parity } of GOLDEN) {
        const out = Array.from({ length: m }, () => Buffer.alloc(16));
        encode(k, m, goldenData(k, 16), out);
        expect(out.map((p) => p.toString('hex'))).toEqual(parity);
      }
      const len = (1 << 20) + 1;
      const out = [Buffer.alloc(len), Buffer.alloc(len)];
      encode(8, 2, goldenData(8, len), out);
      expect(createHash('sha256').update(Buffer.concat(out)).digest('hex')).toBe(GOLDEN_8_2_1MIB_SHA256);
      setEcKernelPath('auto');
    });
  });
});
