/**
 * A user's deletes kept in the index (src/index/delete-records.ts) and forgotten once older than
 * the retention (deleteRetentionMs). Pruning reads the records it forgets by their time, a page
 * per transaction, not every delete the node keeps: a node keeping a million deletes held its
 * event loop for seconds at each look while it scanned them all. Deletes of blobs the node held
 * nothing of are kept apart, newest first, at most as many as the node remembers.
 */
import { randomBytes } from 'node:crypto';
import { type Database, open, type RootDatabase } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { DeleteRecords } from '../../src/index/delete-records.js';
import { UnheldDeletes } from '../../src/index/unheld-deletes.js';
import { type DeletedEntry, StagedMap } from '../../src/index/overlay.js';
import { tempDir } from '../helpers/node-process.js';

const NOW = 1_800_000_000_000;
const DAY = 86_400_000;
const roots: RootDatabase[] = [];

afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => root.close()));
});

interface Opened {
  root: RootDatabase;
  records: DeleteRecords;
  /** Entries read from the index's tables since `reads.n` was last set. */
  reads: { n: number };
}

/** Opens the index's delete tables in `dir`, counting every entry the records read by range. */
function openRecords(dir: string): Opened {
  const root = open({ path: dir, maxDbs: 4, compression: false });
  roots.push(root);
  const reads = { n: 0 };
  const counting = new Proxy(root, {
    get(target, name) {
      if (name === 'openDB') {
        return (options: { name: string }) => {
          const db = target.openDB(options) as Database;
          // getKeys and getCount read by getRange too.
          const range = db.getRange.bind(db) as (options?: { onlyCount?: boolean }) => { map(f: (x: unknown) => unknown): unknown };
          (db as unknown as Record<string, unknown>).getRange = (options?: { onlyCount?: boolean }) =>
            options?.onlyCount ? range(options) : range(options).map((item) => (reads.n++, item));
          return db;
        };
      }
      const value: unknown = Reflect.get(target, name);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { root, records: new DeleteRecords(counting, new StagedMap<DeletedEntry>()), reads };
}

async function mark(o: Opened, deletes: { id: Buffer; atMs: number; policy?: number }[]): Promise<void> {
  await o.root.transaction(() => {
    for (const { id, atMs, policy } of deletes) o.records.mark(id, atMs, policy ?? 3);
  });
}

const ids = (n: number): Buffer[] => Array.from({ length: n }, () => randomBytes(32));

describe('the deletes a node keeps, forgotten after the retention', () => {
  it('forgets the deletes older than the cut-off, keeps the newer ones, and tells the id watcher of each it forgot', async () => {
    const o = openRecords(tempDir());
    const [old1, old2, young] = ids(3);
    await mark(o, [{ id: old1!, atMs: NOW - 40 * DAY, policy: 2 }, { id: old2!, atMs: NOW - 31 * DAY }, { id: young!, atMs: NOW - DAY }]);
    const left: string[] = [];
    const pruned = await o.records.prune(NOW - 30 * DAY, (set, id, policy) => left.push(`${set} ${id.toString('hex')} ${policy}`));
    expect(pruned).toBe(2);
    expect(o.records.deletedAt(old1!)).toBeUndefined();
    expect(o.records.deletedAt(old2!)).toBeUndefined();
    expect(o.records.deletedAt(young!)).toBe(NOW - DAY);
    expect(left.sort()).toEqual([`deleted ${old1!.toString('hex')} 2`, `deleted ${old2!.toString('hex')} 3`].sort());
    expect(await o.records.prune(NOW - 30 * DAY)).toBe(0);
  });

  it('keeps a delete made again since, and drops quietly the time of one cleared by a store', async () => {
    const o = openRecords(tempDir());
    const [again, cleared] = ids(2);
    await mark(o, [{ id: again!, atMs: NOW - 40 * DAY }, { id: cleared!, atMs: NOW - 40 * DAY }]);
    await mark(o, [{ id: again!, atMs: NOW - DAY }]);
    await o.root.transaction(() => o.records.clear(cleared!));
    const left: Buffer[] = [];
    expect(await o.records.prune(NOW - 30 * DAY, (_set, id) => left.push(id))).toBe(0);
    expect(left).toEqual([]);
    expect(o.records.deletedAt(again!)).toBe(NOW - DAY);
    expect(o.records.deletedAt(cleared!)).toBeUndefined();
    // Its later time is forgotten in turn.
    expect(await o.records.prune(NOW)).toBe(1);
    expect(o.records.deletedAt(again!)).toBeUndefined();
  });

  it('reads only the deletes it forgets, over several pages, whatever the number kept', async () => {
    const o = openRecords(tempDir());
    const kept = ids(6000).map((id, i) => ({ id, atMs: NOW - (i % 30) * 3_600_000 }));
    const old = ids(2500).map((id, i) => ({ id, atMs: NOW - 40 * DAY - i }));
    await mark(o, [...kept, ...old]);
    o.reads.n = 0;
    expect(await o.records.prune(NOW - 30 * DAY)).toBe(old.length);
    // Each page reads the keys it forgets; the last, one more to see where the old ones end.
    expect(o.reads.n).toBe(old.length + 1);
    for (const { id } of old) expect(o.records.deletedAt(id)).toBeUndefined();
    for (const { id, atMs } of kept) expect(o.records.deletedAt(id)).toBe(atMs);
  });

  it('finds the times of deletes recorded before it kept them (an older data directory) when it opens', async () => {
    const dir = tempDir();
    const raw = open({ path: dir, maxDbs: 4, compression: false });
    const db = raw.openDB<DeletedEntry, Buffer>({ name: 'deleted', keyEncoding: 'binary' });
    const [old, young] = ids(2);
    await raw.transaction(() => {
      db.putSync(old!, { atMs: NOW - 40 * DAY, policy: 3 });
      db.putSync(young!, { atMs: NOW - DAY, policy: 3 });
    });
    await raw.close();
    const o = openRecords(dir);
    expect(await o.records.prune(NOW - 30 * DAY)).toBe(1);
    expect(o.records.deletedAt(old!)).toBeUndefined();
    expect(o.records.deletedAt(young!)).toBe(NOW - DAY);
  });
});

describe('the deletes of blobs a node held nothing of', () => {
  it('answers when each was made, and forgets the old ones and the oldest beyond the bound', async () => {
    const dir = tempDir();
    const root = open({ path: dir, maxDbs: 4, compression: false });
    roots.push(root);
    const unheld = new UnheldDeletes(root);
    const made = ids(6).map((id, i) => ({ id, atMs: NOW - (6 - i) * DAY }));
    for (const { id, atMs } of made) await unheld.add(id, atMs);
    expect(unheld.count).toBe(6);
    expect(made.map(({ id }) => unheld.at(id))).toEqual(made.map(({ atMs }) => atMs));
    // Older than 5 days: the first; beyond 3 kept: two more.
    expect(await unheld.prune(NOW - 5 * DAY - 1, 3)).toBe(3);
    expect(made.map(({ id }) => unheld.at(id))).toEqual([undefined, undefined, undefined, ...made.slice(3).map(({ atMs }) => atMs)]);
    expect(unheld.count).toBe(3);
    // A delete made again later is kept by its later time.
    await unheld.add(made[3]!.id, NOW);
    expect(await unheld.prune(NOW - 2 * DAY + 1, 3)).toBe(1);
    expect(made.slice(3).map(({ id }) => unheld.at(id))).toEqual([NOW, undefined, made[5]!.atMs]);
    // Kept across a reopen.
    await root.close();
    roots.splice(roots.indexOf(root), 1);
    const again = open({ path: dir, maxDbs: 4, compression: false });
    roots.push(again);
    const reopened = new UnheldDeletes(again);
    expect(reopened.count).toBe(2);
    expect(reopened.at(made[3]!.id)).toBe(NOW);
  });
});
