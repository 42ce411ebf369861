/**
 * The engine's durability rules, in-process: torn segment tails are cut back, whole records past
 * the checkpoint are replayed, corrupt copies are never served, and compaction gives space back.
 */
import { closeSync, existsSync, mkdirSync, openSync, statSync, writeSync, readdirSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { blobFilePath } from '../src/engine/blob-file.js';
import { unlinkReplayedDeletes } from '../src/engine/record-files.js';
import { describe, expect, it } from 'vitest';
import { blake3 } from '../src/hash/blake3.js';
import { HEADER_BYTES, padLength, RecordType, recordLength, writeHeader, writePad } from '../src/engine/record.js';
import { Location } from '../src/index/entry.js';
import type { Engine } from '../src/engine/engine.js';
import { flipByte, patternBytes } from './helpers/blobs.js';
import { openEngine, testConfig } from './helpers/engine.js';

const segmentPath = (engine: Engine, id: number): string => engine.store.path(id);

/** A whole, valid PUT_INLINE record as it would appear in a segment. */
function recordBytes(data: Buffer, lsn: number): Buffer {
  const checksum = blake3(data);
  const length = recordLength(0, data.length);
  const buf = Buffer.alloc(length);
  writeHeader(buf, 0, {
    type: RecordType.PUT_INLINE, policy: 1, labelsLength: 0, dataLength: data.length, relocatedFromSegment: 0, relocatedFromOffset: 0,
    size: data.length, createdAtNs: 1n, id: checksum.subarray(0, 16), checksum, lsn, flags: 0,
  }, Buffer.alloc(0));
  data.copy(buf, HEADER_BYTES);
  return buf;
}

function writeAt(path: string, bytes: Buffer, position: number): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, position);
  closeSync(fd);
}

describe('recovery of the segment log', () => {
  it('cuts a torn tail back to the last whole record, keeps every stored blob, and takes new writes', async () => {
    const config = testConfig();
    let engine = await openEngine(config);
    const kept = await engine.putInline(Buffer.from('before the crash'), 1, Buffer.alloc(0));
    const { segment, offset, nextLsn } = engine.index.checkpoint;
    await engine.close();

    // A record that reached the disk only in part: whole header, half of its data.
    const torn = recordBytes(patternBytes(6000, 5), nextLsn);
    writeAt(segmentPath(engine, segment), torn.subarray(0, HEADER_BYTES + 3000), offset);

    engine = await openEngine(config);
    const tornId = torn.subarray(40, 56);
    expect(engine.stat(tornId)).toBeUndefined();
    expect(engine.index.checkpoint.offset).toBe(offset);
    const after = await engine.putInline(Buffer.from('after the crash'), 1, Buffer.alloc(0));
    await engine.close();

    engine = await openEngine(config);
    for (const [r, text] of [[kept, 'before the crash'], [after, 'after the crash']] as const) {
      expect((await engine.readInline(engine.stat(r.id)!)).toString()).toBe(text);
    }
    expect(engine.index.counters.blobCount).toBe(2);
    await engine.close();
  });

  it('replays whole records written after the checkpoint (fsynced but not indexed)', async () => {
    const config = testConfig();
    let engine = await openEngine(config);
    await engine.putInline(Buffer.from('indexed'), 1, Buffer.alloc(0));
    const { segment, offset, nextLsn } = engine.index.checkpoint;
    await engine.close();

    const data = patternBytes(5000, 77);
    const whole = recordBytes(data, nextLsn);
    writeAt(segmentPath(engine, segment), whole, offset);

    engine = await openEngine(config);
    const meta = engine.stat(whole.subarray(40, 56));
    expect(meta?.location).toBe(Location.SEGMENT);
    expect((await engine.readInline(meta!)).equals(data)).toBe(true);
    expect(engine.index.checkpoint.offset).toBe(offset + whole.length);
    await engine.close();
  });

  it('after replaying a batch that ends with a PAD, keeps what is written next through the crash after it', async () => {
    const config = testConfig();
    let engine = await openEngine(config);
    await engine.putInline(Buffer.from('indexed'), 1, Buffer.alloc(0));
    const { segment, offset, nextLsn } = engine.index.checkpoint;
    await engine.close();

    // A batch the index never took: a record, then the PAD that ends it on a block boundary.
    const replayed = recordBytes(patternBytes(3000, 78), nextLsn);
    const pad = Buffer.alloc(padLength(offset + replayed.length));
    writePad(pad, 0, pad.length, nextLsn + 1);
    writeAt(segmentPath(engine, segment), Buffer.concat([replayed, pad]), offset);
    engine = await openEngine(config);
    expect(engine.stat(replayed.subarray(40, 56))).toBeDefined();
    // The checkpoint is where the next record goes, with the sequence number it will carry.
    const end = offset + replayed.length + pad.length;
    expect(engine.index.checkpoint).toMatchObject({ segment, offset: end, nextLsn: nextLsn + 2 });
    await engine.close();

    // What the next life wrote there before it was killed, its index commit not made.
    const next = recordBytes(patternBytes(2000, 79), nextLsn + 2);
    writeAt(segmentPath(engine, segment), next, end);
    engine = await openEngine(config);
    for (const record of [replayed, next]) expect(engine.stat(record.subarray(40, 56)), 'a record written before the crash').toBeDefined();
    await engine.close();
  });

  it('ignores stale bytes past the end whose sequence number does not follow', async () => {
    const config = testConfig();
    let engine = await openEngine(config);
    const { segment, offset, nextLsn } = engine.index.checkpoint;
    await engine.close();
    // A whole record, but with a sequence number from an older life of this space.
    writeAt(segmentPath(engine, segment), recordBytes(Buffer.from('stale'), nextLsn + 5), offset);
    engine = await openEngine(config);
    expect(engine.index.counters.blobCount).toBe(0);
    await engine.close();
  });

  it('refuses a data dir of an unknown format version, and one another process holds', async () => {
    const config = testConfig();
    const engine = await openEngine(config);
    await expect(openEngine(config)).rejects.toThrow(/in use by another blobstore process/);
    await engine.close();
    const format = join(config.dataDir, 'FORMAT');
    writeFileSync(format, JSON.stringify({ format: 99, nodeId: 'engine-test' }));
    await expect(openEngine(config)).rejects.toThrow(/on-disk format 99/);
    writeFileSync(format, JSON.stringify({ format: 1, nodeId: 'someone-else' }));
    await expect(openEngine(config)).rejects.toThrow(/belongs to node "someone-else"/);
  });

  it('takes a format-1 data dir (before the index journal) and marks it format 4, so that an older build refuses it', async () => {
    const config = testConfig();
    let engine = await openEngine(config);
    const { id } = await engine.putInline(Buffer.from('stored under format 1'), 1, Buffer.alloc(0));
    await engine.close();
    const format = join(config.dataDir, 'FORMAT');
    writeFileSync(format, JSON.stringify({ format: 1, nodeId: 'engine-test', createdAt: '2026-11-01T00:00:00.000Z' }));
    engine = await openEngine(config);
    expect(engine.stat(id)?.size).toBe(21);
    await engine.close();
    const marked = JSON.parse(readFileSync(format, 'utf8')) as { format: number; nodeId: string; createdAt: string };
    expect(marked.format).toBe(4);
    expect(marked.nodeId).toBe('engine-test');
    expect(marked.createdAt).toBe('2026-11-01T00:00:00.000Z');
  });
});

describe('corruption', () => {
  it('a flipped byte in a segment record gives a corruption error, never the bytes', async () => {
    const engine = await openEngine(testConfig());
    const data = patternBytes(4096, 9);
    const { id } = await engine.putInline(data, 1, Buffer.alloc(0));
    const meta = engine.stat(id)!;
    const path = segmentPath(engine, meta.segment);
    flipByte(path, meta.offset + HEADER_BYTES + 100, 0x40);
    await expect(engine.readInline(meta)).rejects.toMatchObject({ kind: 'corruption', status: 500 });
    expect(engine.corruptionsDetected).toBe(1);
    await engine.close();
  });
});

describe('compaction', () => {
  it('rewrites segments whose live fraction fell under the ratio and gives the space back', async () => {
    const engine = await openEngine(testConfig({ segmentSizeBytes: '2MiB', smallBlobMaxBytes: '64KiB', compactionLiveRatio: 50 }));
    const stored: { id: Buffer; data: Buffer }[] = [];
    for (let i = 0; i < 400; i++) {
      const data = patternBytes(20_000, i + 1);
      stored.push({ id: (await engine.putInline(data, 1, Buffer.alloc(0))).id, data });
    }
    const segmentsBefore = readdirSync(join(engine.dataDir.path, 'segments')).filter((n) => n.endsWith('.seg'));
    expect(segmentsBefore.length).toBeGreaterThan(3);
    const bytesOf = (names: string[]): number => names.reduce((n, f) => n + statSync(join(engine.dataDir.path, 'segments', f)).size, 0);
    const bytesBefore = bytesOf(segmentsBefore);
    // Delete 3 of every 4 blobs.
    for (const [i, s] of stored.entries()) if (i % 4 !== 0) await engine.delete(s.id);
    const removed = await engine.compactNow();
    expect(removed).toBeGreaterThan(0);
    const segmentsAfter = readdirSync(join(engine.dataDir.path, 'segments')).filter((n) => n.endsWith('.seg'));
    expect(bytesOf(segmentsAfter)).toBeLessThan(bytesBefore);
    expect(segmentsAfter.length).toBeLessThan(segmentsBefore.length);
    for (const [i, s] of stored.entries()) {
      const meta = engine.stat(s.id);
      if (i % 4 !== 0) expect(meta).toBeUndefined();
      else expect((await engine.readInline(meta!)).equals(s.data)).toBe(true);
    }
    expect(engine.index.counters.blobCount).toBe(100);
    const config = engine.config;
    await engine.close();
    // The relocated records survive a restart.
    const reopened = await openEngine(config);
    for (const [i, s] of stored.entries()) if (i % 4 === 0) expect((await reopened.readInline(reopened.stat(s.id)!)).equals(s.data)).toBe(true);
    await reopened.close();
  });
});


describe('space accounting', () => {
  it('tracks blob count, stored bytes, disk use and capacity (statfs) across puts and deletes', async () => {
    const engine = await openEngine(testConfig({ smallBlobMaxBytes: '64KiB' }));
    const small = await engine.putInline(patternBytes(1000, 1), 1, Buffer.alloc(0));
    await engine.putInline(patternBytes(2000, 2), 1, Buffer.alloc(0));
    let stats = await engine.stats();
    expect(stats).toMatchObject({ blobCount: 2, storedBytes: 3000 });
    expect(stats.capacityBytes).toBeGreaterThan(stats.freeBytes);
    expect(stats.usedBytes).toBeGreaterThanOrEqual(3000);
    await engine.delete(small.id);
    stats = await engine.stats();
    expect(stats).toMatchObject({ blobCount: 1, storedBytes: 2000 });
    const config = engine.config;
    await engine.close();
    // Counters are persisted with the index, not recounted at start.
    const reopened = await openEngine(config);
    expect(await reopened.stats()).toMatchObject({ blobCount: 1, storedBytes: 2000 });
    await reopened.close();
  });
});

describe('replay of deletes of file blobs', () => {
  it('removes the file of a blob whose store and delete are both past the checkpoint, and keeps one stored again after', async () => {
    const engine = await openEngine(testConfig());
    const dir = engine.config.dataDir;
    const EMPTY = Buffer.alloc(0);
    const fileOf = (id: Buffer): string => blobFilePath(dir, id.toString('hex'));
    const make = (id: Buffer): void => {
      mkdirSync(dirname(fileOf(id)), { recursive: true });
      writeFileSync(fileOf(id), 'bytes');
    };
    const [gone, back, other] = [Buffer.alloc(16, 1), Buffer.alloc(16, 2), Buffer.alloc(16, 3)];
    for (const id of [gone, back, other]) make(id);
    const rec = (type: number, id: Buffer) => ({ type, id, labels: EMPTY });
    // The index has never seen any of them: stored and deleted since the checkpoint.
    await unlinkReplayedDeletes(dir, engine.index, [
      rec(RecordType.PUT_FILE, gone), rec(RecordType.PUT_FILE, back), rec(RecordType.DELETE, gone),
      rec(RecordType.DELETE, back), rec(RecordType.PUT_FILE, back), rec(RecordType.PUT_FILE, other),
    ]);
    expect(existsSync(fileOf(gone))).toBe(false);
    expect(existsSync(fileOf(back))).toBe(true);
    expect(existsSync(fileOf(other))).toBe(true);
    await engine.close();
  });
});
