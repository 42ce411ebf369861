/**
 * The index journal (src/index/blob-journal.ts): blob records are committed to the journal and
 * merged into the id-ordered index every `indexMergeRecords` changes, on the merge thread. Reads,
 * lists, counters and a restart see the same blobs whether a record is staged, journaled or
 * merged; and the id filter never hides a stored blob.
 */
import { join } from 'node:path';
import { open } from 'lmdb';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { patternBytes } from '../helpers/blobs.js';
import { openEngine, testConfig } from '../helpers/engine.js';
import { waitFor } from '../helpers/wait.js';

const EMPTY = Buffer.alloc(0);
const config = (flags: Record<string, unknown> = {}): ReturnType<typeof testConfig> => testConfig({ diskReserveBytes: '1MiB', ...flags });

function listAll(engine: Engine): string[] {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = engine.list('', cursor, 97);
    ids.push(...page.ids.map((b) => b.toString('hex')));
    if (!page.hasMore) return ids;
    cursor = page.nextCursor;
  }
}

/** Every blob in `live` reads back as stored, every id in `gone` is not found, and the list and counters agree. */
async function expectHolds(engine: Engine, live: Map<string, Buffer>, gone: Set<string>): Promise<void> {
  for (const [hex, data] of live) {
    const meta = engine.stat(Buffer.from(hex, 'hex'));
    expect(meta?.size, `stat ${hex}`).toBe(data.length);
    expect((await engine.readInline(meta!)).equals(data)).toBe(true);
    expect(engine.index.has(Buffer.from(hex, 'hex'))).toBe(true);
  }
  for (const hex of gone) {
    expect(engine.stat(Buffer.from(hex, 'hex')), `deleted ${hex}`).toBeUndefined();
    expect(engine.index.has(Buffer.from(hex, 'hex'))).toBe(false);
  }
  expect(listAll(engine)).toEqual([...live.keys()].sort());
  const stats = await engine.stats();
  expect(stats.blobCount).toBe(live.size);
  expect(stats.storedBytes).toBe([...live.values()].reduce((a, d) => a + d.length, 0));
}

describe('the index journal', () => {
  it('stores, deletes and stores again across many merges, and a restart finds the same', async () => {
    const cfg = config({ indexMergeRecords: 40 });
    let engine = await openEngine(cfg);
    const live = new Map<string, Buffer>();
    const gone = new Set<string>();
    const ever = new Map<string, Buffer>();
    let seed = 1;
    for (let round = 0; round < 6; round++) {
      const stored = await Promise.all(Array.from({ length: 60 }, () => {
        const data = patternBytes(100 + (seed % 900), seed++);
        return engine.putInline(data, 1, EMPTY).then((r) => ({ hex: r.id.toString('hex'), data }));
      }));
      for (const { hex, data } of stored) {
        live.set(hex, data);
        ever.set(hex, data);
        gone.delete(hex);
      }
      // Delete a third of what is there, and store a few deleted ones again.
      const victims = [...live.keys()].filter((_, i) => i % 3 === round % 3).slice(0, 20);
      await Promise.all(victims.map((hex) => engine.delete(Buffer.from(hex, 'hex'))));
      for (const hex of victims) {
        gone.add(hex);
        live.delete(hex);
      }
      for (const hex of [...gone].slice(0, 3)) {
        const data = ever.get(hex)!;
        expect((await engine.putInline(data, 1, EMPTY)).created).toBe(true);
        live.set(hex, data);
        gone.delete(hex);
      }
      await engine.settled();
      await expectHolds(engine, live, gone);
    }
    await engine.index.journal.settled();
    // Merges ran: most changes left the journal for the id-ordered index.
    expect(engine.index.journal.size).toBeLessThan(live.size + gone.size);
    await engine.close();
    engine = await openEngine(cfg);
    await expectHolds(engine, live, gone);
    await engine.close();
    // Without merges (a large threshold) the same blobs come back from the journal alone.
    engine = await openEngine(config({ dataDir: cfg.dataDir, indexMergeRecords: 1_000_000 }));
    await expectHolds(engine, live, gone);
    await engine.close();
  }, 60_000);

  it('the id filter answers once built and never hides a blob stored before or after', async () => {
    const cfg = config();
    let engine = await openEngine(cfg);
    const before = await Promise.all([1, 2, 3].map((n) => engine.putInline(patternBytes(500, 70 + n), 1, EMPTY)));
    await engine.settled();
    await engine.close();
    engine = await openEngine(cfg);
    await waitFor(() => engine.index.idFilter?.complete === true, { what: 'the id filter', timeoutMs: 10_000 });
    const after = await engine.putInline(patternBytes(500, 80), 1, EMPTY);
    for (const r of [...before, after]) expect(engine.index.has(r.id)).toBe(true);
    // The filter says no to ids it never saw: the index is not read for them.
    let no = 0;
    for (let i = 0; i < 1000; i++) if (!engine.index.idFilter!.mayHave(patternBytes(16, 1000 + i))) no++;
    expect(no).toBeGreaterThan(990);
    // A store of bytes already here is still found (200, not a second record).
    expect((await engine.putInline(patternBytes(500, 71), 1, EMPTY)).created).toBe(false);
    await engine.close();
  });
  it('the id filter built at start holds every id, across slices of LMDB and in the journal', async () => {
    // Merges every 512 changes: most ids are in LMDB, read a slice (2,048) per turn; the rest in the journal.
    const cfg = config({ indexMergeRecords: 512 });
    let engine = await openEngine(cfg);
    const ids: Buffer[] = [];
    for (let from = 0; from < 9000; from += 500) {
      const stored = await Promise.all(Array.from({ length: 500 }, (_, i) => engine.putInline(patternBytes(64, 100_000 + from + i), 1, EMPTY)));
      ids.push(...stored.map((r) => r.id));
      // Committed, and the merge that commit started done: the next commit starts another.
      await engine.settled();
      await engine.index.journal.settled();
    }
    // And fewer than a merge's worth after the last merge: in the journal.
    ids.push(...(await Promise.all(Array.from({ length: 300 }, (_, i) => engine.putInline(patternBytes(64, 200_000 + i), 1, EMPTY)))).map((r) => r.id));
    await engine.settled();
    expect(engine.index.journal.size).toBeGreaterThan(0);
    expect(ids.length - engine.index.journal.size).toBeGreaterThan(2 * 2048);
    await engine.close();
    engine = await openEngine(cfg);
    await waitFor(() => engine.index.idFilter?.complete === true, { what: 'the id filter', timeoutMs: 10_000 });
    expect(ids.filter((id) => !engine.index.idFilter!.mayHave(id))).toEqual([]);
    await engine.close();
  }, 60_000);
});

describe('the index journal when LMDB refuses a write', () => {
  it('a merge whose journal records could not be removed leaves them to the next one: a deleted blob stays deleted after a restart', async () => {
    const cfg = config({ indexMergeRecords: 8 });
    let engine = await openEngine(cfg);
    const journal = engine.index.journal as unknown as { db: { remove: (key: number) => Promise<boolean> } };
    const remove = journal.db.remove.bind(journal.db);
    let failing = true;
    journal.db.remove = (key) => (failing ? Promise.reject(new Error('injected: no room')) : remove(key));
    const x = await engine.putInline(Buffer.from('the blob X'), 1, EMPTY);
    for (let i = 0; i < 10; i++) {
      await engine.putInline(Buffer.from(`filler ${i}`), 1, EMPTY);
      await engine.settled();
    }
    await engine.index.journal.settled();
    failing = false;
    await engine.delete(x.id);
    for (let i = 0; i < 10; i++) {
      await engine.putInline(Buffer.from(`more ${i}`), 1, EMPTY);
      await engine.settled();
    }
    await engine.index.journal.settled();
    expect(engine.stat(x.id)).toBeUndefined();
    await engine.close();
    engine = await openEngine(cfg);
    expect(engine.stat(x.id)).toBeUndefined();
    expect(engine.index.has(x.id)).toBe(false);
    expect(listAll(engine)).not.toContain(x.id.toString('hex'));
    expect((await engine.stats()).blobCount).toBe(20);
    await engine.close();
  });

  it('merges that keep failing: the tables stay under four merges of changes, then stores fail, and a restart finds every acknowledged blob', async () => {
    const cfg = config({ indexMergeRecords: 8 });
    let engine = await openEngine(cfg);
    const journal = engine.index.journal as unknown as { db: { remove: (key: number) => Promise<boolean> }; size: number };
    // Every merge fails at its last step (the journal records' removal), so its changes come back.
    journal.db.remove = () => Promise.reject(new Error('injected: merges keep failing'));
    const acknowledged = new Map<string, Buffer>();
    let largest = 0;
    let failure: unknown;
    for (let i = 0; i < 200 && failure === undefined; i++) {
      const data = Buffer.from(`kept while merges fail ${i}`);
      try {
        acknowledged.set((await engine.putInline(data, 1, EMPTY)).id.toString('hex'), data);
        await engine.settled();
      } catch (err) {
        failure = err;
      }
      largest = Math.max(largest, journal.size);
    }
    expect(failure, 'a store fails once the journal cannot merge').toBeDefined();
    expect(largest).toBeLessThanOrEqual(4 * 8 + 1);
    expect(acknowledged.size).toBeGreaterThanOrEqual(3 * 8);
    await engine.close().catch(() => undefined);
    engine = await openEngine(cfg);
    await expectHolds(engine, acknowledged, new Set());
    await engine.close();
  });

  it("a small store whose index read fails is answered with the error and gives its id's lock back: the next store of the bytes goes through", async () => {
    const engine = await openEngine(config());
    const data = Buffer.from('bytes whose first store meets a failing read');
    const has = engine.index.has.bind(engine.index);
    engine.index.has = () => {
      throw new Error('injected: read failed');
    };
    // The read runs at the log's next turn, once the turn's small stores are hashed.
    const failed = await new Promise<{ err?: Error; existed: boolean }>((resolve) => engine.putSmall(data, 1, EMPTY, { stored: (err, _id, existed) => resolve({ err, existed }) }));
    engine.index.has = has;
    expect(failed.err?.message).toContain('injected');
    expect(failed.existed).toBe(false);
    const stored = await new Promise<{ err?: Error; existed: boolean }>((resolve) => engine.putSmall(data, 1, EMPTY, { stored: (err, _id, existed) => resolve({ err, existed }) }));
    expect(stored.err).toBeUndefined();
    expect(stored.existed).toBe(false);
    // And the general path (which waits for the lock) is not stuck either.
    expect((await engine.putInline(data, 1, EMPTY)).created).toBe(false);
    await engine.close();
  });
});

/** The page size the index under `dataDir` was made with, read by LMDB itself. */
function indexPageBytes(dataDir: string): number {
  const env = open({ path: join(dataDir, 'index'), readOnly: true, maxDbs: 12 });
  try {
    return (env.getStats() as { pageSize: number }).pageSize;
  } finally {
    void env.close();
  }
}

describe('the index page size', () => {
  it('a new index takes indexPageBytes (16 KiB unless set); an index made with other pages keeps them and reads back', async () => {
    const fresh = config();
    await (await openEngine(fresh)).close();
    expect(indexPageBytes(fresh.dataDir)).toBe(16 * 1024);

    const made = config({ indexPageBytes: '4KiB', indexMergeRecords: 30 });
    let engine = await openEngine(made);
    const stored = await Promise.all(Array.from({ length: 100 }, (_, i) => engine.putInline(patternBytes(200 + i, i), 1, EMPTY)));
    await engine.close();
    expect(indexPageBytes(made.dataDir)).toBe(4096);
    // Opened again with the default: the index keeps its 4 KiB pages, and merges and reads work on them.
    engine = await openEngine({ ...made, indexPageBytes: 16 * 1024 });
    const more = await Promise.all(Array.from({ length: 100 }, (_, i) => engine.putInline(patternBytes(300 + i, 1000 + i), 1, EMPTY)));
    for (const [i, r] of [...stored, ...more].entries()) {
      const meta = engine.stat(r.id);
      expect(meta?.size, `blob ${i}`).toBe(i < 100 ? 200 + i : 300 + (i - 100));
    }
    await engine.close();
    expect(indexPageBytes(made.dataDir)).toBe(4096);
  });
});
