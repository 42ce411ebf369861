/**
 * The segment log is written in whole 4 KiB blocks (src/engine/log.ts, record.ts): each
 * group-commit batch ends with a PAD record on a block boundary and, with logWrites direct (the
 * default), goes past the page cache where the file system allows it. No write touches a block
 * that holds an earlier batch's records: a log whose tail is off the grid (a torn PAD cut back, or
 * a log written by format 3) goes on in a new segment. Segment space is readied a step ahead of the
 * tail, and with logSpace zeroed (the default) written with zeros past the page cache, so a batch
 * overwrites written blocks and its fdatasync commits no extent change.
 */
import { constants as fsc, cpSync, promises as fsp } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { directWriteBytes } from '../../src/engine/fs-util.js';
import {
  HEADER_BYTES, LOG_BLOCK_BYTES, MAX_PAD_BYTES, padLength, readHeader, recordLength, RecordType, writeHeader, writePad,
} from '../../src/engine/record.js';
import { scanSegment } from '../../src/engine/scan.js';
import { patternBytes } from '../helpers/blobs.js';
import { holdCommits, openEngine, testConfig } from '../helpers/engine.js';
import { tempDir } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';

const EMPTY = Buffer.alloc(0);
/** Small reserve: this shared machine's disk is often nearly full. */
const config = (): ReturnType<typeof testConfig> => testConfig({ diskReserveBytes: '1MiB' });

describe('PAD records', () => {
  it('take an 8-aligned end to the next block boundary, a gap shorter than a header to the one after', () => {
    expect(padLength(0)).toBe(0);
    expect(padLength(3 * LOG_BLOCK_BYTES)).toBe(0);
    expect(padLength(LOG_BLOCK_BYTES - HEADER_BYTES)).toBe(HEADER_BYTES);
    expect(padLength(LOG_BLOCK_BYTES - 96)).toBe(MAX_PAD_BYTES);
    expect(padLength(LOG_BLOCK_BYTES - 8)).toBe(8 + LOG_BLOCK_BYTES);
    expect(padLength(4200)).toBe(2 * LOG_BLOCK_BYTES - 4200);
    for (let end = 8; end < 3 * LOG_BLOCK_BYTES; end += 8) {
      const pad = padLength(end);
      expect((end + pad) % LOG_BLOCK_BYTES).toBe(0);
      expect(pad === 0 || (pad >= HEADER_BYTES && pad <= MAX_PAD_BYTES)).toBe(true);
    }
  });

  it('are records in the sequence-number chain, and a scan steps over them', async () => {
    const path = join(tempDir('log-blocks'), 'seg');
    const put = (lsn: number, data: Buffer): Buffer => {
      const buf = Buffer.alloc(recordLength(0, data.length));
      writeHeader(buf, 0, {
        type: RecordType.PUT_INLINE, policy: 1, labelsLength: 0, dataLength: data.length, relocatedFromSegment: 0, relocatedFromOffset: 0,
        size: data.length, createdAtNs: 1n, id: Buffer.alloc(16, lsn), checksum: Buffer.alloc(32), lsn, flags: 0,
      }, EMPTY);
      data.copy(buf, HEADER_BYTES);
      return buf;
    };
    const first = put(1, patternBytes(300, 1));
    const pad = Buffer.alloc(padLength(first.length));
    writePad(pad, 0, pad.length, 2);
    expect(readHeader(pad, 0, pad.length)).toMatchObject({ type: RecordType.PAD, lsn: 2, dataLength: pad.length - HEADER_BYTES });
    const second = put(3, patternBytes(500, 2));
    await fsp.writeFile(path, Buffer.concat([first, pad, second, Buffer.alloc(8192)]));
    const scan = async (): Promise<{ seen: number[]; end: { endOffset: number; lastLsn: number } }> => {
      const handle = await fsp.open(path, 'r');
      const seen: number[] = [];
      try {
        const { size } = await handle.stat();
        const end = await scanSegment(handle, size, 0, { firstLsn: 1, exact: true, verifyData: false, bufferBytes: 1 << 16 }, (r) => {
          seen.push(r.header.lsn);
        });
        return { seen, end };
      } finally {
        await handle.close();
      }
    };
    expect(await scan()).toEqual({ seen: [1, 3], end: { endOffset: LOG_BLOCK_BYTES + second.length, lastLsn: 3 } });
    // The chain runs through the PAD: one with another sequence number ends the log there.
    writePad(pad, 0, pad.length, 7);
    const handle = await fsp.open(path, 'r+');
    await handle.write(pad, 0, pad.length, first.length);
    await handle.close();
    expect(await scan()).toEqual({ seen: [1], end: { endOffset: first.length, lastLsn: 1 } });
  });
});

describe('the segment log', () => {
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
    engine = undefined;
  });

  it('ends every batch on a block boundary, written past the page cache where the file system allows it', async () => {
    const cfg = config();
    engine = await openEngine(cfg);
    const probe = join(cfg.dataDir, 'direct-probe');
    await fsp.writeFile(probe, '');
    const directOk = await fsp.open(probe, fsc.O_WRONLY | fsc.O_DIRECT).then(async (h) => (await h.close(), true), () => false);
    const before = directWriteBytes();
    const stored: { id: Buffer; data: Buffer }[] = [];
    for (const [i, size] of [1, 100, 3984, 4096, 5000, 40_000, 200_000].entries()) {
      const data = patternBytes(size, 20 + i);
      stored.push({ id: (await engine.putInline(data, 1, EMPTY)).id, data });
      await engine.settled();
      expect(engine.index.committedCheckpoint.offset % LOG_BLOCK_BYTES).toBe(0);
    }
    // Many stores in one turn: batches of several records, each ending on a boundary too.
    const many = Array.from({ length: 64 }, (_, i) => patternBytes(700 + i * 8, 100 + i));
    const results = await Promise.all(many.map((data) => engine!.putInline(data, 1, EMPTY)));
    await engine.settled();
    expect(engine.index.committedCheckpoint.offset % LOG_BLOCK_BYTES).toBe(0);
    results.forEach((r, i) => stored.push({ id: r.id, data: many[i]! }));
    const written = directWriteBytes() - before;
    if (directOk) {
      expect(written).toBeGreaterThan(0);
      expect(written % LOG_BLOCK_BYTES).toBe(0);
    } else {
      console.warn(`O_DIRECT not tested: ${cfg.dataDir}'s file system refuses it`);
    }
    for (const { id, data } of stored) expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
    await engine.close();
    engine = await openEngine(cfg);
    for (const { id, data } of stored) expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
  });

  it('goes on in a new segment when its tail is off the block grid (a torn PAD), and loses nothing', async () => {
    const cfg = config();
    engine = await openEngine(cfg);
    const kept = patternBytes(3000, 1);
    const { id: keptId } = await engine.putInline(kept, 1, EMPTY);
    await engine.settled();
    // A store acknowledged (fsynced) but not in LMDB yet: a copy of the data dir now is what a crash
    // would leave, with the store to replay from the log.
    const release = holdCommits(engine);
    const a = patternBytes(1000, 2);
    const { id: idA } = await engine.putInline(a, 1, EMPTY);
    const metaA = engine.stat(idA)!;
    const crashed = { ...cfg, dataDir: tempDir('log-blocks-crash') };
    cpSync(cfg.dataDir, crashed.dataDir, { recursive: true, filter: (src) => !src.endsWith('LOCK') });
    release();
    // And the PAD after A never made it: the log ends at A's end, inside a block.
    const end = metaA.offset + recordLength(0, a.length);
    expect(end % LOG_BLOCK_BYTES).not.toBe(0);
    const handle = await fsp.open(join(crashed.dataDir, relative(cfg.dataDir, engine.store.path(metaA.segment))), 'r+');
    await handle.write(Buffer.alloc(padLength(end)), 0, padLength(end), end);
    await handle.close();
    await engine.close();

    engine = await openEngine(crashed);
    expect((await engine.readInline(engine.stat(idA)!)).equals(a)).toBe(true);
    const b = patternBytes(1000, 3);
    const { id: idB } = await engine.putInline(b, 1, EMPTY);
    await engine.settled();
    const metaB = engine.stat(idB)!;
    expect(metaB.segment).toBe(metaA.segment + 1);
    expect(metaB.offset).toBe(0);
    await engine.close();
    engine = await openEngine(crashed);
    for (const [id, data] of [[keptId, kept], [idA, a], [idB, b]] as const) expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
  });

  it('readies space a step ahead of the tail, written with zeros past the page cache with logSpace zeroed', async () => {
    const STEP = 1024 * 1024;
    /** Bytes of the segment file with blocks (allocated), once the step under way is done (10 s at most, then what they were). */
    const allocatedOf = async (e: Engine, segment: number, atLeast: number): Promise<number> => {
      let bytes = 0;
      const allocated = async (): Promise<boolean> => (bytes = (await fsp.stat(e.store.path(segment))).blocks * 512) >= atLeast;
      await waitFor(allocated, { what: `${atLeast} bytes of segment ${segment} allocated`, timeoutMs: 10_000, pollMs: 20 }).catch(() => undefined);
      return bytes;
    };
    for (const logSpace of ['zeroed', 'allocated'] as const) {
      const cfg = testConfig({ diskReserveBytes: '1MiB', segmentAllocBytes: '1MiB', logSpace });
      engine = await openEngine(cfg);
      const probe = join(cfg.dataDir, 'direct-probe');
      await fsp.writeFile(probe, '');
      const directOk = await fsp.open(probe, fsc.O_WRONLY | fsc.O_DIRECT).then(async (h) => (await h.close(), true), () => false);
      const before = directWriteBytes();
      const first = patternBytes(2000, 1);
      const { id } = await engine.putInline(first, 1, EMPTY);
      await engine.settled();
      const segment = engine.stat(id)!.segment;
      expect(await allocatedOf(engine, segment, STEP)).toBeGreaterThanOrEqual(STEP);
      if (directOk) {
        // One 4 KiB block of records, and with zeroed the whole step of zeros before it.
        const written = directWriteBytes() - before;
        if (logSpace === 'zeroed') expect(written).toBeGreaterThanOrEqual(STEP);
        else expect(written).toBe(LOG_BLOCK_BYTES);
      } else {
        console.warn(`O_DIRECT not tested: ${cfg.dataDir}'s file system refuses it`);
      }
      // Past half the step: the next one is taken before any record needs it.
      const stored = [{ id, data: first }];
      for (let i = 0; i < 12; i++) {
        const data = patternBytes(50_000, 10 + i);
        stored.push({ id: (await engine.putInline(data, 1, EMPTY)).id, data });
      }
      await engine.settled();
      const tail = engine.index.committedCheckpoint.offset;
      expect(tail).toBeGreaterThan(STEP / 2);
      expect(tail).toBeLessThan(STEP);
      expect(await allocatedOf(engine, segment, 2 * STEP)).toBeGreaterThanOrEqual(2 * STEP);
      for (const { id: storedId, data } of stored) expect((await engine.readInline(engine.stat(storedId)!)).equals(data)).toBe(true);
      await engine.close();
      engine = await openEngine(cfg);
      for (const { id: storedId, data } of stored) expect((await engine.readInline(engine.stat(storedId)!)).equals(data)).toBe(true);
      await engine.close();
      engine = undefined;
    }
  });
});
