/**
 * Small blobs' index entries carry the CRC-32C of their bytes, and a GET from disk checks it
 * (docs/adr/0012-hot-path.md): a flipped bit is caught on both GET paths, and an entry written without
 * one (before it existed) is checked with BLAKE3 as before.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { BlobstoreError } from '../../src/errors/errors.js';
import { crc32cJs } from '../../src/hash/crc32c.js';
import { flipByte, patternBytes } from '../helpers/blobs.js';
import { openEngine, testConfig } from '../helpers/engine.js';

const EMPTY = Buffer.alloc(0);
/** No read cache: every read below goes to the disk. */
// Stores go through the page cache (logWrites buffered): the in-memory read path, which these
// tests check, takes only what the page cache holds.
const config = (): ReturnType<typeof testConfig> => testConfig({ diskReserveBytes: '1MiB', logWrites: 'buffered', readCacheBytes: 0 });

/** Flips a bit of the stored copy of `data` in its segment. */
function corrupt(engine: Engine, data: Buffer): void {
  const dir = join(engine.dataDir.path, 'segments');
  for (const name of readdirSync(dir)) {
    const at = readFileSync(join(dir, name)).indexOf(data.subarray(0, 64));
    if (at >= 0) return flipByte(join(dir, name), at + 100);
  }
  throw new Error('stored copy not found');
}

const isCorruption = (err: unknown): boolean => err instanceof BlobstoreError && err.kind === 'corruption';

describe("a small blob's CRC-32C", () => {
  it('is in its index entry once stored, and after a restart', async () => {
    const cfg = config();
    let engine = await openEngine(cfg);
    const data = patternBytes(4096, 11);
    const { id } = await engine.putInline(data, 1, EMPTY);
    expect(engine.stat(id)?.dataCrc).toBe(crc32cJs(data));
    await engine.settled();
    await engine.close();
    engine = await openEngine(cfg);
    expect(engine.stat(id)?.dataCrc).toBe(crc32cJs(data));
    expect(engine.readInlineSync(engine.stat(id)!)?.equals(data)).toBe(true);
    await engine.close();
  });

  it('catches a flipped bit on a read from disk: the fast GET path passes it over, the long one refuses it', async () => {
    const engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', logWrites: 'buffered' }));
    const data = patternBytes(4096, 12);
    const { id } = await engine.putInline(data, 1, EMPTY);
    await engine.settled();
    corrupt(engine, data);
    expect(engine.cachedRecord(id)).toBeUndefined();
    let caught: unknown;
    try {
      engine.readInlineSync(engine.stat(id)!);
    } catch (err) {
      caught = err;
    }
    expect(isCorruption(caught)).toBe(true);
    expect(engine.corruptionsDetected).toBeGreaterThan(0);
    await engine.close();
  });

  it('is what a read from disk checks: an entry whose CRC does not match refuses intact bytes', async () => {
    const engine = await openEngine(config());
    const data = patternBytes(4096, 14);
    const { id } = await engine.putInline(data, 1, EMPTY);
    await engine.settled();
    const entry = engine.index.get(id)!;
    await engine.index.commit({ ...engine.index.committedCheckpoint }, (w) => w.put(id, { ...entry, dataCrc: (entry.dataCrc! ^ 1) >>> 0 }));
    expect(() => engine.readInlineSync(engine.stat(id)!)).toThrow(/failed its checksum/);
    // BLAKE3 (what streams, replication and the scrubber check) still finds the bytes whole.
    expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
    await engine.close();
  });

  it('an entry without one (written before it existed) is checked with BLAKE3', async () => {
    const engine = await openEngine(config());
    const data = patternBytes(4096, 13);
    const { id } = await engine.putInline(data, 1, EMPTY);
    await engine.settled();
    // Write the entry again as the format before it was: without the CRC.
    const entry = engine.index.get(id)!;
    const checkpoint = engine.index.committedCheckpoint;
    await engine.index.commit({ ...checkpoint }, (w) => w.put(id, { ...entry, dataCrc: undefined }));
    expect(engine.stat(id)?.dataCrc).toBeUndefined();
    expect(engine.readInlineSync(engine.stat(id)!)?.equals(data)).toBe(true);
    corrupt(engine, data);
    expect(() => engine.readInlineSync(engine.stat(id)!)).toThrow(/failed its checksum/);
    await engine.close();
  });

  it('compaction moves a blob under the CRC it was checked against, and leaves a corrupt copy where it is', async () => {
    const engine = await openEngine(testConfig({ diskReserveBytes: '1MiB', logWrites: 'buffered', readCacheBytes: 0, compactionLiveRatio: 90 }));
    const stored = [];
    for (let i = 0; i < 20; i++) stored.push({ data: patternBytes(4000, 200 + i), ...(await engine.putInline(patternBytes(4000, 200 + i), 1, EMPTY)) });
    const [whole, rotten] = stored;
    for (const b of stored.slice(2)) await engine.delete(b.id);
    await engine.sealActiveSegment();
    const before = engine.stat(rotten!.id)!;
    corrupt(engine, rotten!.data);
    await engine.compactNow();
    // The intact blob moved, with its CRC; the corrupt one was not moved under a CRC of its bad bytes.
    const moved = engine.stat(whole!.id)!;
    expect(moved.segment).not.toBe(before.segment);
    expect(moved.dataCrc).toBe(crc32cJs(whole!.data));
    expect(engine.readInlineSync(moved)?.equals(whole!.data)).toBe(true);
    const kept = engine.stat(rotten!.id)!;
    expect(kept.segment).toBe(before.segment);
    expect(kept.dataCrc).toBe(crc32cJs(rotten!.data));
    expect(() => engine.readInlineSync(kept)).toThrow(/failed its checksum/);
    await engine.close();
  });
});
