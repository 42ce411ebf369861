/**
 * A large blob's file as its chunks arrive: chunks written while earlier ones are still being
 * written land in order, byte-exact (one write to the file at a time, queued chunks in one
 * pwritev); an upload aborted with chunks still queued settles every write and leaves no file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_BYTES } from '../src/blob/chunk.js';
import type { Engine } from '../src/engine/engine.js';
import { blake3 } from '../src/hash/blake3.js';
import { patternBytes } from './helpers/blobs.js';
import { openEngine, testConfig } from './helpers/engine.js';

let engine: Engine;
beforeAll(async () => {
  engine = await openEngine(testConfig());
});
afterAll(async () => {
  await engine?.close();
});

describe('a blob file written chunk by chunk', () => {
  it('takes 12 chunks written at once (the last short) and holds them in order', async () => {
    const chunks = Array.from({ length: 12 }, (_, i) => patternBytes(i === 11 ? 1234 : CHUNK_BYTES, 500 + i));
    const whole = Buffer.concat(chunks);
    const sink = await engine.beginFile();
    await Promise.all(chunks.map((c) => sink.write(c)));
    const digest = await sink.finish();
    expect(digest.equals(blake3(whole))).toBe(true);
    // The file: the data, then the digest table and the footer.
    expect(readFileSync(sink.tmpPath).subarray(0, whole.length).equals(whole)).toBe(true);
    await sink.abort();
  });

  it('aborted with chunks still queued: every write settles, no file is left', async () => {
    const sink = await engine.beginFile();
    const writes = Array.from({ length: 8 }, (_, i) => sink.write(patternBytes(CHUNK_BYTES, 600 + i)));
    const settling = Promise.allSettled(writes);
    await sink.abort();
    const settled = await settling;
    expect(settled).toHaveLength(8);
    for (const s of settled) if (s.status === 'rejected') expect((s.reason as NodeJS.ErrnoException).code).toBe('EBADF');
    expect(existsSync(sink.tmpPath)).toBe(false);
  });
});
