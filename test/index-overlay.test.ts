/**
 * The index overlay (src/index/overlay.ts): a store is acknowledged once its log record is
 * fsynced, and its index record is served from memory until its LMDB transaction commits. These
 * tests hold the commits back: in-process (reads, dedup, list, deletes and the replication queue
 * see the held records, and LMDB has them once the commits go), and in a node process killed
 * while its acknowledged records were in the overlay only (a restart replays them from the log).
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../src/engine/engine.js';
import type { Checkpoint } from '../src/index/blob-index.js';
import { GatheredWrites } from '../src/index/gathered-writes.js';
import { expectedId, patternBytes } from './helpers/blobs.js';
import { holdCommits, openEngine, testConfig } from './helpers/engine.js';
import { type NodeProcess, startNode, tempDir } from './helpers/node-process.js';

const EMPTY = Buffer.alloc(0);
const hex = (id: Buffer): string => id.toString('hex');
/**
 * Small reserve: this shared machine's disk is often nearly full. Stores go through the page cache
 * (logWrites buffered): the tests read them back on the in-memory path, which takes only what the
 * page cache holds.
 */
const config = (flags: Record<string, unknown> = {}): ReturnType<typeof testConfig> =>
  testConfig({ diskReserveBytes: '1MiB', logWrites: 'buffered', ...flags });

/** Every id the engine lists, page by page. */
function listAll(engine: Engine, prefix = '', limit = 7): string[] {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = engine.list(prefix, cursor, limit);
    ids.push(...page.ids.map(hex));
    if (!page.hasMore) return ids;
    cursor = page.nextCursor;
  }
}

describe('the index overlay, commits held back', () => {
  it('serves an acknowledged record whose transaction has not committed: read, stat, dedup, counters', async () => {
    const engine = await openEngine(config());
    const first = await engine.putInline(patternBytes(3000, 1), 1, EMPTY);
    await engine.settled();
    const committed = engine.index.committedCheckpoint.nextLsn;
    const release = holdCommits(engine);
    const data = patternBytes(4096, 2);
    const put = await engine.putInline(data, 1, EMPTY);
    expect(put.created).toBe(true);
    // Acknowledged, but LMDB has neither the record nor a checkpoint past it.
    expect(engine.index.committedCheckpoint.nextLsn).toBe(committed);
    expect(engine.index.direct.has(put.id)).toBe(false);
    expect(engine.index.checkpoint.nextLsn).toBeGreaterThan(committed);
    const meta = engine.stat(put.id);
    expect(meta?.size).toBe(4096);
    expect((await engine.readInline(meta!)).equals(data)).toBe(true);
    expect(engine.readInlineSync(meta!)?.equals(data)).toBe(true);
    expect((await engine.putInline(data, 1, EMPTY)).created).toBe(false);
    expect(engine.index.counters).toMatchObject({ blobCount: 2, storedBytes: 7096 });
    expect(listAll(engine)).toEqual([hex(first.id), hex(put.id)].sort());
    release();
    await engine.settled();
    expect(engine.index.direct.has(put.id)).toBe(true);
    expect(engine.index.overlay.empty).toBe(true);
    expect(engine.index.counters).toMatchObject({ blobCount: 2, storedBytes: 7096 });
    await engine.close();
  });

  it('a GET of a blob in the read cache sees a held delete, and a held store, through the overlay', async () => {
    const engine = await openEngine(config());
    const data = patternBytes(4096, 7);
    const { id } = await engine.putInline(data, 1, EMPTY);
    await engine.settled();
    // Kept on its second read: from then on a GET is answered from memory.
    engine.cachedRecord(id);
    expect(engine.cachedRecord(id)?.data.equals(data)).toBe(true);
    const release = holdCommits(engine);
    await engine.delete(id);
    // Acknowledged, not committed: LMDB still has the record, the cache still holds its bytes.
    expect(engine.index.direct.has(id)).toBe(true);
    expect(engine.cachedRecord(id)).toBeUndefined();
    expect(engine.stat(id)).toBeUndefined();
    await engine.putInline(data, 1, EMPTY);
    expect(engine.cachedRecord(id)).toBeUndefined(); // the long path answers it (from the overlay)
    expect(engine.stat(id)?.size).toBe(4096);
    release();
    await engine.settled();
    engine.cachedRecord(id);
    expect(engine.cachedRecord(id)?.data.equals(data)).toBe(true);
    await engine.close();
  });

  it('merges held records into list pages in id order, with held deletes of committed blobs', async () => {
    const engine = await openEngine(config());
    const committed: string[] = [];
    for (let i = 0; i < 30; i++) committed.push(hex((await engine.putInline(patternBytes(500, 100 + i), 1, EMPTY)).id));
    await engine.settled();
    const release = holdCommits(engine);
    const held: string[] = [];
    const puts = Array.from({ length: 30 }, (_, i) => engine.putInline(patternBytes(600, 200 + i), 1, EMPTY));
    for (const p of await Promise.all(puts)) held.push(hex(p.id));
    const gone = [...committed.slice(0, 5), ...held.slice(0, 5)];
    await Promise.all(gone.map((id) => engine.delete(Buffer.from(id, 'hex'))));
    expect(engine.index.overlay.blobs.size).toBe(35);
    const expected = [...committed, ...held].filter((id) => !gone.includes(id)).sort();
    for (const limit of [1, 7, 100]) expect(listAll(engine, '', limit)).toEqual(expected);
    const prefix = expected[10]!.slice(0, 1);
    expect(listAll(engine, prefix, 3)).toEqual(expected.filter((id) => id.startsWith(prefix)));
    const scanned: string[] = [];
    engine.scan(undefined, (id) => scanned.push(hex(id)) > 0);
    expect(scanned).toEqual(expected);
    expect(engine.index.counters.blobCount).toBe(50);
    release();
    await engine.settled();
    expect(engine.index.overlay.empty).toBe(true);
    expect(listAll(engine, '', 9)).toEqual(expected);
    const cfg = engine.config;
    await engine.close();
    const reopened = await openEngine(cfg);
    expect(listAll(reopened)).toEqual(expected);
    expect(reopened.index.counters.blobCount).toBe(50);
    await reopened.close();
  });

  it('deletes a record that is in the overlay only, stores it again, and LMDB ends the same', async () => {
    const engine = await openEngine(config());
    const release = holdCommits(engine);
    const data = patternBytes(2048, 7);
    const { id } = await engine.putInline(data, 1, EMPTY);
    expect(engine.index.overlay.blobs.size).toBe(1);
    await engine.delete(id);
    expect(engine.stat(id)).toBeUndefined();
    expect(engine.index.has(id)).toBe(false);
    expect(engine.deletedAt(id)).toBeGreaterThan(0);
    expect(listAll(engine)).toEqual([]);
    expect(engine.index.counters).toMatchObject({ blobCount: 0, storedBytes: 0 });
    const deleted: string[] = [];
    engine.scanDeleted(undefined, (d) => deleted.push(hex(d)) > 0);
    expect(deleted).toEqual([hex(id)]);
    // Stored again (a new record), deleted again is idempotent on the second call.
    expect((await engine.putInline(data, 1, EMPTY)).created).toBe(true);
    expect(engine.deletedAt(id)).toBeUndefined();
    const other = await engine.putInline(patternBytes(100, 8), 1, EMPTY);
    await engine.delete(other.id);
    await engine.delete(other.id);
    expect(engine.index.direct.has(id)).toBe(false);
    release();
    await engine.settled();
    expect(engine.index.direct.has(id)).toBe(true);
    expect(engine.index.direct.has(other.id)).toBe(false);
    expect(engine.deletedAt(other.id)).toBeGreaterThan(0);
    expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
    const cfg = engine.config;
    await engine.close();
    const reopened = await openEngine(cfg);
    expect(reopened.stat(other.id)).toBeUndefined();
    expect((await reopened.readInline(reopened.stat(id)!)).equals(data)).toBe(true);
    expect(reopened.index.counters).toMatchObject({ blobCount: 1, storedBytes: 2048 });
    await reopened.close();
  });

  it('shows held stores in the replication queue; a copy finished before the commit leaves no entry', async () => {
    const engine = await openEngine(config());
    const release = holdCommits(engine);
    const a = await engine.putInline(patternBytes(1000, 11), 1, EMPTY, { replicate: true });
    const b = await engine.putInline(patternBytes(1000, 12), 1, EMPTY, { replicate: true });
    expect(engine.replication.depth).toBe(2);
    expect(engine.replication.get(a.id)?.done).toEqual([]);
    expect(engine.replication.page(10).map((e) => hex(e.id))).toEqual([hex(a.id), hex(b.id)].sort());
    await engine.replication.update(b.id, { queuedAtMs: 1, done: ['peer-1'] });
    await engine.replication.remove(a.id);
    expect(engine.replication.get(a.id)).toBeUndefined();
    expect(engine.replication.depth).toBe(1);
    release();
    await engine.settled();
    expect(engine.replication.depth).toBe(1);
    expect(engine.replication.get(b.id)?.done).toEqual(['peer-1']);
    const cfg = engine.config;
    await engine.close();
    const reopened = await openEngine(cfg);
    expect(reopened.replication.depth).toBe(1);
    expect(reopened.replication.page(10).map((e) => hex(e.id))).toEqual([hex(b.id)]);
    expect(reopened.replication.get(b.id)?.done).toEqual(['peer-1']);
    await reopened.close();
  });
});

describe('replication-queue entries removed before their commit', () => {
  /** The queue entries (values with `done`) a commit gathers for LMDB, and every key it removes. */
  function gatheredQueueWrites(): { puts: Buffer[]; removes: unknown[]; restore: () => void } {
    const puts = vi.spyOn(GatheredWrites.prototype, 'put');
    const removes = vi.spyOn(GatheredWrites.prototype, 'remove');
    return {
      get puts() {
        return puts.mock.calls.filter(([, , value]) => typeof value === 'object' && value !== null && 'done' in value).map(([, key]) => key as Buffer);
      },
      get removes() {
        return removes.mock.calls.map(([, key]) => key);
      },
      restore: () => {
        puts.mockRestore();
        removes.mockRestore();
      },
    };
  }

  it('writes nothing to LMDB for an entry whose copies were confirmed before its commit', async () => {
    const engine = await openEngine(config());
    const release = holdCommits(engine);
    const a = await engine.putInline(patternBytes(1000, 31), 1, EMPTY, { replicate: true });
    const b = await engine.putInline(patternBytes(1000, 32), 1, EMPTY, { replicate: true });
    await engine.replication.remove(a.id);
    const writes = gatheredQueueWrites();
    try {
      release();
      await engine.settled();
      expect(writes.puts.map(hex)).toEqual([hex(b.id)]);
      expect(writes.removes).toEqual([]);
    } finally {
      writes.restore();
    }
    const cfg = engine.config;
    await engine.close();
    const reopened = await openEngine(cfg);
    expect(reopened.replication.page(10).map((e) => hex(e.id))).toEqual([hex(b.id)]);
    expect(reopened.replication.depth).toBe(1);
    await reopened.close();
  });

  it('removes the entry LMDB held from an earlier store of the same id (deleted, stored again)', async () => {
    const engine = await openEngine(config());
    const data = patternBytes(1000, 33);
    const { id } = await engine.putInline(data, 1, EMPTY, { replicate: true });
    await engine.settled();
    await engine.delete(id);
    await engine.settled();
    expect(engine.replication.get(id)).toBeDefined();
    const release = holdCommits(engine);
    await engine.putInline(data, 1, EMPTY, { replicate: true });
    await engine.replication.remove(id);
    expect(engine.replication.depth).toBe(0);
    release();
    await engine.settled();
    const cfg = engine.config;
    await engine.close();
    const reopened = await openEngine(cfg);
    expect(reopened.replication.get(id)).toBeUndefined();
    expect(reopened.replication.depth).toBe(0);
    await reopened.close();
  });
});

describe('replication-queue changes on their way to LMDB', () => {
  /** Holds every gathered batch back (its commit has taken the queue's changes, LMDB has not got them) until released. */
  function holdBatches(): { taken: () => boolean; release: () => void } {
    const queue = GatheredWrites.prototype.queue;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Only this commit is under way while it waits: nothing else gathers meanwhile.
    const spy = vi.spyOn(GatheredWrites.prototype, 'queue').mockImplementation(function (this: GatheredWrites, more: () => void) {
      return gate.then(() => queue.call(this, more));
    });
    return { taken: () => spy.mock.calls.length > 0, release: () => { spy.mockRestore(); release(); } };
  }

  it('counts an entry out once when it is removed again while the commit that removes it is under way', async () => {
    const engine = await openEngine(config());
    const a = await engine.putInline(patternBytes(1000, 41), 1, EMPTY, { replicate: true });
    await engine.settled();
    expect(engine.replication.depth).toBe(1);
    await engine.replication.remove(a.id);
    expect(engine.replication.depth).toBe(0);
    const batches = holdBatches();
    try {
      // The next store's commit takes the removal with it; its batch waits.
      await engine.putInline(patternBytes(1000, 42), 1, EMPTY);
      await vi.waitFor(() => expect(batches.taken()).toBe(true), { timeout: 10_000 });
      expect(engine.replication.get(a.id)).toBeUndefined();
      expect(engine.replication.page(10)).toEqual([]);
      // A second pass of the replicator removes it again.
      await engine.replication.remove(a.id);
      expect(engine.replication.depth).toBe(0);
    } finally {
      batches.release();
    }
    await engine.settled();
    expect(engine.replication.depth).toBe(0);
    const cfg = engine.config;
    await engine.close();
    const reopened = await openEngine(cfg);
    expect(reopened.replication.depth).toBe(0);
    await reopened.close();
  });
});

/** The log's committer, reached into: a group it has taken out of its queue but not committed yet. */
interface Committer {
  committing: boolean;
  commitSynced(): Promise<void>;
}

describe('compaction while a group is taken for commit but not committed', () => {
  it('keeps the segments that hold acknowledged records, and settled() waits for that group', async () => {
    const engine = await openEngine(config({ segmentSizeBytes: '1MiB', smallBlobMaxBytes: '128KiB', compactionIntervalMs: 3_600_000 }));
    const log = (engine as unknown as { segmentLog: Committer }).segmentLog;
    // The committer is busy meanwhile: 20 stores of 60 KiB (two segments) are staged and acknowledged.
    log.committing = true;
    const stored: { id: Buffer; data: Buffer }[] = [];
    for (let i = 0; i < 20; i++) {
      const data = patternBytes(60 * 1024, 10 + i);
      stored.push({ id: (await engine.putInline(data, 1, EMPTY)).id, data });
    }
    expect(engine.activeSegment).toBeGreaterThan(1);
    // It takes every staged batch as one group, whose transaction waits (as for a file's unlink).
    const release = holdCommits(engine);
    log.committing = false;
    const committing = log.commitSynced();
    let settled = false;
    const settling = engine.settled().then(() => (settled = true));
    // A settled() that did not wait for the group would resolve after the index's flush, the last
    // thing it waits for: by the time that flush and every callback queued meanwhile have run.
    await engine.index.flushed();
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    // Nothing is committed: no segment may go (recovery would start from the first).
    expect(await engine.compactNow()).toBe(0);
    release();
    await committing;
    await settling;
    for (const { id, data } of stored) expect((await engine.readInline(engine.stat(id)!)).equals(data)).toBe(true);
    await engine.close();
  });
});

describe('an index commit whose apply throws part way', () => {
  // addsOnly: the writes are gathered and queued to lmdb-js's write thread once apply returns;
  // otherwise a child transaction runs apply. Neither may commit part of a failed apply.
  it.each([false, true])('commits none of its writes, nor its checkpoint (after a reopen too; addsOnly %s)', async (addsOnly) => {
    const cfg = config();
    let engine = await openEngine(cfg);
    const kept = await engine.putInline(patternBytes(3000, 40), 1, EMPTY);
    await engine.settled();
    const before = engine.index.committedCheckpoint;
    const id = Buffer.alloc(16, 0x77);
    const entry = engine.index.direct.get(kept.id)!;
    const failed = engine.index.commit({ ...before, nextLsn: before.nextLsn + 5 }, (w) => {
      w.put(id, entry);
      throw new Error('apply failed');
    }, addsOnly);
    await expect(failed).rejects.toThrow('apply failed');
    expect(engine.index.direct.has(id)).toBe(false);
    // The next commit does not carry the failed one's writes along.
    await engine.putInline(patternBytes(3000, 41), 1, EMPTY);
    await engine.settled();
    expect(engine.index.direct.has(id)).toBe(false);
    await engine.close();
    engine = await openEngine(cfg);
    expect(engine.index.direct.has(id)).toBe(false);
    // The store's record and the PAD that ends its batch on a block boundary.
    expect(engine.index.committedCheckpoint.nextLsn).toBe(before.nextLsn + 2);
    expect(engine.stat(kept.id)?.size).toBe(3000);
    await engine.close();
  });
});

describe('an index commit of added keys only (gathered for lmdb-js\'s write thread)', () => {
  it('refuses to read a key: it would not see its own writes', async () => {
    const engine = await openEngine(config());
    const before = engine.index.committedCheckpoint;
    const failed = engine.index.commit({ ...before }, (w) => void w.has(Buffer.alloc(16, 1)), true);
    await expect(failed).rejects.toThrow('read a key');
    await engine.close();
  });

  it('commits stores with their counters and segment space, and a store after a delete clears the delete mark', async () => {
    const cfg = config();
    let engine = await openEngine(cfg);
    const puts = await Promise.all([1, 2, 3].map((n) => engine.putInline(patternBytes(4096, 50 + n), 1, EMPTY)));
    await engine.settled();
    const [gone] = puts;
    await engine.delete(gone!.id);
    await engine.settled();
    expect(engine.deletedAt(gone!.id)).toBeTypeOf('number');
    expect((await engine.putInline(patternBytes(4096, 51), 1, EMPTY)).created).toBe(true);
    await engine.settled();
    expect(engine.deletedAt(gone!.id)).toBeUndefined();
    const counters = { ...engine.index.counters };
    const space = [...engine.index.segments.entries()].map(([k, v]) => [k, { ...v }]);
    expect(counters.blobCount).toBe(3);
    await engine.close();
    engine = await openEngine(cfg);
    expect(engine.deletedAt(gone!.id)).toBeUndefined();
    for (const p of puts) expect(engine.index.direct.has(p.id)).toBe(true);
    expect(engine.index.counters).toStrictEqual(counters);
    expect([...engine.index.segments.entries()]).toStrictEqual(space);
    await engine.close();
  });

  it('carries the replicator\'s changes to committed queue entries, before the stores it commits', async () => {
    const cfg = config();
    let engine = await openEngine(cfg);
    const a = await engine.putInline(patternBytes(1000, 81), 1, EMPTY, { replicate: true });
    const b = await engine.putInline(patternBytes(1000, 82), 1, EMPTY, { replicate: true });
    await engine.settled();
    // Changes to committed entries wait for the next index commit (or a transaction of their own after 50 ms).
    await engine.replication.update(b.id, { queuedAtMs: 1, done: ['peer-1'] });
    await engine.replication.remove(a.id);
    const c = await engine.putInline(patternBytes(1000, 83), 1, EMPTY, { replicate: true });
    await engine.settled();
    expect(engine.replication.depth).toBe(2);
    await engine.close();
    engine = await openEngine(cfg);
    expect(engine.replication.depth).toBe(2);
    expect(engine.replication.page(10).map((e) => hex(e.id))).toEqual([hex(b.id), hex(c.id)].sort());
    expect(engine.replication.get(b.id)?.done).toEqual(['peer-1']);
    expect(engine.replication.get(c.id)?.done).toEqual([]);
    await engine.close();
  });
});

describe('a crash after the acknowledgement, before the index commit', () => {
  const ARGS = ['--small-blob-max-bytes', '64KiB', '--disk-reserve-bytes', '1MiB', '--durable-ack', 'log'];
  const HOLD = { BLOBSTORE_TEST_INDEX_COMMIT_DELAY_MS: '600000' };
  const dataDir = tempDir();
  let node: NodeProcess | undefined;
  afterAll(async () => {
    await node?.kill();
  });

  const put = async (url: string, data: Buffer): Promise<string> => {
    const res = await fetch(`${url}/v1/blobs`, { method: 'POST', body: data, headers: { 'Content-Type': 'application/octet-stream' } });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  };
  const get = async (url: string, id: string): Promise<Buffer | number> => {
    const res = await fetch(`${url}/v1/blobs/${id}`);
    return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : res.status;
  };
  const list = async (url: string): Promise<string[]> =>
    ((await (await fetch(`${url}/v1/blobs?limit=1000`)).json()) as { ids: string[] }).ids;

  it('loses nothing acknowledged: stores (small and large) and deletes come back from the log', async () => {
    // Committed before: one to delete while commits are held, one to keep.
    node = await startNode({ dataDir, args: ARGS });
    const doomed = await put(node.url, patternBytes(3000, 1));
    const kept = await put(node.url, patternBytes(200_000, 2));
    expect(await node.stop()).toBe(0);

    node = await startNode({ dataDir, args: ARGS, env: HOLD });
    const blobs = new Map<string, Buffer>([[kept, patternBytes(200_000, 2)]]);
    for (let i = 0; i < 12; i++) {
      const data = patternBytes(i % 4 === 3 ? 150_000 + i : 1000 + i * 300, 10 + i);
      const id = await put(node.url, data);
      expect(id).toBe(await expectedId(data));
      blobs.set(id, data);
    }
    const short = [...blobs.keys()][3]!;
    const large = [...blobs.keys()][4]!;
    for (const id of [doomed, short, large]) expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBe(200);
    blobs.delete(short);
    blobs.delete(large);
    // Served from the overlay: nothing of this life is committed.
    for (const [id, data] of blobs) expect(await get(node.url, id)).toEqual(data);
    for (const id of [doomed, short, large]) expect(await get(node.url, id)).toBe(404);
    expect((await list(node.url)).sort()).toEqual([...blobs.keys()].sort());
    await node.kill();

    node = await startNode({ dataDir, args: ARGS });
    for (const [id, data] of blobs) expect(await get(node.url, id), id).toEqual(data);
    for (const id of [doomed, short, large]) expect(await get(node.url, id), id).toBe(404);
    expect((await list(node.url)).sort()).toEqual([...blobs.keys()].sort());
    expect(await node.stop()).toBe(0);
    node = undefined;
  }, 60_000);
});
