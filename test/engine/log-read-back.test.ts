/**
 * With logWrites direct (the default) the log's batches go past the page cache, and are read back
 * into it by the device (src/engine/log.ts, the addon's read_back_run), so a blob read soon after
 * its store is in memory. The read-back gathers synced batches: one device request per
 * logReadBackBytes of them, or whatever has gathered once no batch is in flight. Every synced
 * batch's blocks are read back exactly once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import type { BatchWriter } from '../../src/engine/fs-util.js';
import { patternBytes } from '../helpers/blobs.js';
import { openEngine, testConfig } from '../helpers/engine.js';
import { directRefused, pageCacheUnseen, residentBytes, residentSoon } from '../helpers/page-cache.js';

const EMPTY = Buffer.alloc(0);
const KiB = 1024;

/**
 * The read-back ranges the engine's log asks its batch writer for, and the batches it writes,
 * while `run` runs. With `holdNewest`, the newest batch's write is held back until the next one
 * comes, until `run` calls release: so a batch is always in flight, and no read-back is cut by a
 * drained pipeline before then.
 */
async function watchReadBacks(
  engine: Engine, holdNewest: boolean, run: (release: () => void) => Promise<void>,
): Promise<{ ranges: [number, number][]; batches: number }> {
  const writer = (engine as unknown as { segmentLog: { writeBatch: BatchWriter } }).segmentLog.writeBatch;
  const { write, readBack } = writer;
  const ranges: [number, number][] = [];
  const held: Parameters<BatchWriter['write']>[] = [];
  let batches = 0;
  let holding = holdNewest;
  const writeHeld = (): void => {
    for (const args of held.splice(0)) expect(write(...args)).toBe(0);
  };
  const release = (): void => {
    holding = false;
    writeHeld();
  };
  writer.write = (...args: Parameters<BatchWriter['write']>) => {
    batches++;
    if ((args[8] ?? 0) > 0) ranges.push([args[7]!, args[7]! + args[8]!]);
    if (!holding) return write(...args);
    writeHeld();
    held.push(args);
    return 0;
  };
  writer.readBack = (fd, position, length) => {
    ranges.push([position, position + length]);
    return readBack(fd, position, length);
  };
  try {
    await run(release);
  } finally {
    release();
    writer.write = write;
    writer.readBack = readBack;
  }
  return { ranges: ranges.sort((x, y) => x[0] - y[0]), batches };
}

/**
 * Stores of ~4 KiB through the fast path (appended to the log in the call) across `turns`
 * event-loop turns, `perTurn` a turn, none awaited before the last: batches form a turn at a
 * time and overlap.
 */
async function storeAcrossTurns(engine: Engine, turns: number, perTurn: number, appended = (): void => undefined): Promise<void> {
  const stores: Promise<void>[] = [];
  for (let t = 0; t < turns; t++) {
    for (let i = 0; i < perTurn; i++) {
      const body = new Uint8Array(patternBytes(4000, t * perTurn + i)).buffer;
      stores.push(new Promise((resolve, reject) => engine.putSmall(body, 1, EMPTY, { stored: (err) => (err ? reject(err) : resolve()) })));
    }
    await new Promise((r) => setImmediate(r));
  }
  appended();
  await Promise.all(stores);
  await engine.settled();
}

/** Why these tests cannot run here (the temp dir's file system, fincore), or '' when they can. */
const skip = (await directRefused()) || (await pageCacheUnseen());

describe.skipIf(skip !== '')(`the log’s read-back into the page cache (logWrites direct)${skip ? ` - skipped: ${skip}` : ''}`, () => {
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
    engine = undefined;
  });

  /** An engine with `flags` and its first segment's path. */
  async function open(flags: Record<string, unknown> = {}): Promise<{ db: Engine; segment: string }> {
    const cfg = testConfig({ diskReserveBytes: '1MiB', ...flags });
    const db = (engine = await openEngine(cfg));
    return { db, segment: db.store.path(db.index.checkpoint.segment) };
  }

  it('reads every synced batch back once, gathered into ranges of logReadBackBytes, the rest once the pipeline drains', async () => {
    const { db, segment } = await open({ logReadBackBytes: '64KiB' });
    // A first store has the log ready its space ahead (the stores after it do not wait for that together).
    await storeAcrossTurns(db, 1, 1);
    const start = db.index.checkpoint.offset;
    const { ranges, batches } = await watchReadBacks(db, true, (release) => storeAcrossTurns(db, 80, 2, release));
    const end = db.index.checkpoint.offset;
    expect(db.index.checkpoint.segment).toBe(1);
    // Contiguous, no overlap, from the first batch to the log's end: each batch once.
    expect(ranges[0]![0]).toBe(start);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1]);
    expect(ranges.at(-1)![1]).toBe(end);
    // Gathered: a batch was always in flight until the last, so each read-back but the last (sent
    // once the pipeline drained) waited for 64 KiB of batches.
    expect(batches).toBeGreaterThan(ranges.length);
    for (const [a, b] of ranges.slice(0, -1)) expect(b - a).toBeGreaterThanOrEqual(64 * KiB);
    // And the device did read them: the page cache holds the log's written blocks, nothing else of it.
    expect(await residentSoon(segment, end)).toBe(end);
  });

  it('reads a lone store back once it is synced (nothing else in flight)', async () => {
    const { db, segment } = await open();
    const { ranges } = await watchReadBacks(db, false, async () => {
      await db.putInline(patternBytes(100, 1), 1, EMPTY);
      await db.settled();
    });
    expect(ranges).toEqual([[0, 4 * KiB]]);
    expect(await residentSoon(segment, 4 * KiB)).toBe(4 * KiB);
  });

  it('reads nothing back with logReadBackBytes 0', async () => {
    const { db, segment } = await open({ logReadBackBytes: '0' });
    const { ranges, batches } = await watchReadBacks(db, false, () => storeAcrossTurns(db, 10, 4));
    expect(batches).toBeGreaterThan(0);
    expect(ranges).toEqual([]);
    // No read-back was asked while the stores ran and settled (ranges), and a settled log asks
    // none later: what the page cache holds now is what it will hold.
    expect(residentBytes(segment)).toBe(0);
  });
});
