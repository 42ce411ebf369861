/**
 * CRC-32C (src/hash/crc32c.ts, native/src/crc32c.c): every path of the addon gives the same CRC
 * as the JavaScript table on awkward lengths and alignments, and the standard check value.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { crc32c, crc32cJs, crc32cPath } from '../../src/hash/crc32c.js';
import { patternBytes } from '../helpers/blobs.js';
import { REPO } from '../helpers/node-process.js';

interface Addon {
  crc32c(src: Uint8Array, offset?: number, length?: number): number;
  setCrc32cPath(name: string): number;
  crc32cPaths(): { name: string; supported: boolean }[];
}
const addon = createRequire(import.meta.url)(join(REPO, 'native/build/Release/blobstore_ec.node')) as Addon;

afterAll(() => {
  addon.setCrc32cPath('auto');
});

describe('CRC-32C', () => {
  it('has the standard check value on every path, and in JavaScript', () => {
    const check = Buffer.from('123456789');
    expect(crc32cJs(check)).toBe(0xe3069283);
    expect(crc32c(check)).toBe(0xe3069283);
    expect(crc32cJs(Buffer.alloc(0))).toBe(0);
  });

  const paths = addon.crc32cPaths().filter((p) => p.supported).map((p) => p.name);
  it.each(paths)('path %s agrees with the JavaScript table on every length up to 9 KiB and at odd offsets', (path) => {
    expect(addon.setCrc32cPath(path)).toBe(0);
    const data = patternBytes(3 * 3072 + 40, 7);
    for (let len = 0; len <= 3 * 3072 + 17; len += len < 300 ? 1 : 97) {
      for (const offset of [0, 1, 5, 7]) {
        const view = data.subarray(offset, offset + len);
        expect(addon.crc32c(view), `length ${len} at ${offset}`).toBe(crc32cJs(view));
        expect(addon.crc32c(data, offset, len)).toBe(crc32cJs(view));
      }
    }
    const big = patternBytes(1 << 20, 9);
    expect(addon.crc32c(big)).toBe(crc32cJs(big));
  });

  it('refuses arguments it cannot take with -1 (the loader turns that into an error)', () => {
    expect(addon.crc32c('text' as unknown as Uint8Array)).toBe(-1);
    expect(addon.crc32c(Buffer.alloc(4), 2, 3)).toBe(-1);
    expect(() => crc32c('text' as unknown as Uint8Array)).toThrow(TypeError);
  });

  it('says which path runs', () => {
    expect(['portable', 'sse42', 'js']).toContain(crc32cPath());
  });
});
