/**
 * BLAKE3 (src/hash/blake3.ts): every content address and every read check rests on it, so the
 * digest of each path is checked against an independent implementation (hash-wasm), around the
 * 1 KiB chunk and 64-byte block boundaries where a tree hash goes wrong.
 */
import { randomBytes } from 'node:crypto';
import { createBLAKE3 } from 'hash-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { blake3, createHasher, hashName, initHashing } from '../src/hash/blake3.js';

const LENGTHS = [0, 1, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 4095, 4096, 4097, 8192, 16_385, 65_536, 1024 * 1024 + 1];

describe('BLAKE3', () => {
  let reference: (data: Uint8Array) => string;
  beforeAll(async () => {
    await initHashing();
    const h = await createBLAKE3(256);
    reference = (data) => {
      h.init();
      h.update(data);
      return h.digest('hex');
    };
  });

  it('digests the empty input as the specification\'s test vector', () => {
    expect(blake3(Buffer.alloc(0)).toString('hex')).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
  });

  it.each(LENGTHS)('gives the reference digest of %i random bytes, one-shot and incremental', (length) => {
    const data = randomBytes(length);
    const digest = blake3(data);
    expect(digest.length).toBe(32);
    expect(digest.toString('hex')).toBe(reference(data));
    const h = createHasher();
    for (let at = 0; at < length; at += 1000) h.update(data.subarray(at, at + 1000));
    expect(h.digest().toString('hex')).toBe(reference(data));
  });

  it('hashes a view into a larger buffer by its own bytes only', () => {
    const whole = randomBytes(8192);
    const view = new Uint8Array(whole.buffer, whole.byteOffset + 100, 4096);
    expect(blake3(view).toString('hex')).toBe(reference(view));
    expect(hashName()).toMatch(/^(native \(addon one-shot\)|native|wasm)$/);
  });
});
