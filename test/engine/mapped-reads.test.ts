/**
 * Small records copied from mapped segments (src/engine/segment-reader.ts, native/src/binding_map.c,
 * src/engine/page-evictions.ts): a record is copied from its mapping, with no system call, only
 * once a read that does not wait (or a recheck of the page cache) has found its pages in memory,
 * and no longer once a recheck after the kernel gave pages back finds them gone; a page the
 * mapping cannot have answers an error, not a crash.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlobMeta } from '../../src/blob/meta.js';
import { native } from '../../src/ec/native.js';
import type { Engine } from '../../src/engine/engine.js';
import { PageEvictions, pageCountsOf, pagesDropped } from '../../src/engine/page-evictions.js';
import { HEADER_BYTES } from '../../src/engine/record.js';
import { pageEvictions, SegmentReader } from '../../src/engine/segment-reader.js';
import type { SegmentStore } from '../../src/engine/segment-store.js';
import { patternBytes } from '../helpers/blobs.js';
import { dropAllPages, dropBallastUntil, dropPages, pagesKept, writeSynced } from '../helpers/page-cache.js';
import { openEngine, testConfig } from '../helpers/engine.js';
import { tempDir } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { ADDON_RELATIVE_PATH } from '../../src/util/addon.js';
import { repoRoot } from '../../src/util/repo-root.js';

const EMPTY = Buffer.alloc(0);
const EAGAIN = 11;
const EIO = 5;

/** A file of `pages` pages of 4 KiB, page i filled with byte i + 1, synced. */
function pagedFile(pages: number): { path: string; fd: number } {
  const path = join(tempDir(), 'mapped');
  const bytes = Buffer.alloc(pages * 4096);
  for (let i = 0; i < pages; i++) bytes.fill(i + 1, i * 4096, (i + 1) * 4096);
  return { path, fd: writeSynced(path, bytes) };
}

const warmOnly = pagesKept();
const skipped = warmOnly ? ` - skipped: ${warmOnly}` : '';

/** A file of `pages` pages mapped for `use`, then unmapped and removed. */
async function withMapped(pages: number, use: (file: { handle: number; fd: number; path: string }) => void | Promise<void>): Promise<void> {
  const { path, fd } = pagedFile(pages);
  const handle = native().mapOpen(fd, pages * 4096);
  expect(handle).toBeGreaterThanOrEqual(0);
  try {
    await use({ handle, fd, path });
  } finally {
    native().mapClose(handle);
    closeSync(fd);
    rmSync(path);
  }
}

/**
 * mapRead of one page at `position`, which must not be copied from the mapping but read without
 * waiting (the page was not known): its answer, EAGAIN or the bytes.
 */
function probedRead(handle: number, fd: number, into: Buffer, position: number): number {
  const before = native().mapStats();
  const got = native().mapRead(handle, fd, into, 4096, position);
  const after = native().mapStats();
  expect([after.fromMap - before.fromMap, after.probed - before.probed]).toEqual([0, 1]);
  return got;
}

describe('a mapped file read by the addon', () => {
  const addon = native();

  it('answers the file\'s bytes: read without waiting the first time, from the mapping once its pages are known', async () => {
    await withMapped(8, async ({ handle, fd }) => {
      const into = Buffer.alloc(6000);
      const before = addon.mapStats();
      // Bytes across pages 2 and 3.
      expect(addon.mapRead(handle, fd, into, 6000, 2 * 4096 + 100)).toBe(6000);
      expect(addon.mapStats().probed).toBe(before.probed + 1);
      expect(addon.mapStats().fromMap).toBe(before.fromMap);
      into.fill(0);
      expect(addon.mapRead(handle, fd, into, 6000, 2 * 4096 + 100)).toBe(6000);
      expect(addon.mapStats().fromMap).toBe(before.fromMap + 1);
      expect(into.subarray(0, 4096 - 100).every((b) => b === 3)).toBe(true);
      expect(into.subarray(4096 - 100).every((b) => b === 4)).toBe(true);
      // A range that reaches a page not read yet is read without waiting again.
      expect(addon.mapRead(handle, fd, into, 4096, 3 * 4096 + 10)).toBe(4096);
      expect(addon.mapStats().probed).toBe(before.probed + 2);
      // Past the mapping: refused.
      expect(addon.mapRead(handle, fd, into, 4096, 8 * 4096 - 10)).toBe(-22);
    });
  });

  it('keeps, on a recheck, the marks of pages still in memory, and adds none (a page of the log not yet written may be dropped by its O_DIRECT write)', async () => {
    await withMapped(4, async ({ handle, fd }) => {
      const into = Buffer.alloc(4096);
      // Page 0 read: marked. Pages 1 to 3 are in memory too (just written), never read.
      expect(addon.mapRead(handle, fd, into, 4096, 0)).toBe(4096);
      expect(await addon.mapRecheck()).toBeGreaterThanOrEqual(1);
      const before = addon.mapStats();
      expect(addon.mapRead(handle, fd, into, 4096, 0)).toBe(4096);
      expect(addon.mapStats().fromMap).toBe(before.fromMap + 1);
      expect(addon.mapRead(handle, fd, into, 4096, 2 * 4096)).toBe(4096);
      expect(addon.mapStats().probed).toBe(before.probed + 1);
      expect(into.every((b) => b === 3)).toBe(true);
    });
  });

  it.skipIf(warmOnly !== '')(`drops, on a recheck, the marks of pages the page cache no longer holds${skipped}`, async () => {
    await withMapped(4, async ({ handle, fd, path }) => {
      const into = Buffer.alloc(4096);
      // Known by a read without waiting (a page copied from the mapping is mapped, and the kernel
      // drops no mapped page on advice: only reclaim takes it).
      expect(addon.mapRead(handle, fd, into, 4096, 4096)).toBe(4096);
      await dropAllPages(path);
      await addon.mapRecheck();
      // Not copied from the mapping (which would read it from the disk here): read without waiting.
      expect(probedRead(handle, fd, into, 4096)).toBeOneOf([-EAGAIN, 4096]);
      expect(into.every((b) => b === 2)).toBe(true);
    });
  });

  it('unmaps a mapping closed while a recheck holds it once the recheck lets go, and the others at once', async () => {
    const files = [1, 2, 3].map(() => pagedFile(64));
    const handles = files.map(({ fd }) => addon.mapOpen(fd, 64 * 4096));
    for (const [i, h] of handles.entries()) addon.mapRead(h, files[i]!.fd, Buffer.alloc(4096), 4096, 0);
    const mappedIn = (path: string): boolean => readFileSync('/proc/self/maps', 'utf8').includes(path);
    expect(files.every((f) => mappedIn(f.path))).toBe(true);
    const mapped = addon.mapStats().mapped;
    // Each mapping held 300 ms in turn: the first is held once the pool has started.
    const recheck = addon.mapRecheck(300);
    await waitFor(() => addon.mapStats().pinned === 1, { what: 'a mapping held by the recheck', timeoutMs: 10_000, pollMs: 5 });
    for (const h of handles) expect(addon.mapClose(h)).toBe(0);
    expect(addon.mapStats().mapped).toBe(mapped - 3);
    // The one held is still mapped (the recheck reads it); the others are gone at once.
    expect(files.filter((f) => mappedIn(f.path)).length).toBe(1);
    await recheck;
    expect(files.some((f) => mappedIn(f.path))).toBe(false);
    expect(addon.mapStats().pinned).toBe(0);
    for (const { fd, path } of files) {
      closeSync(fd);
      rmSync(path);
    }
  });

  it.skipIf(warmOnly !== '')(`answers EAGAIN for pages not in memory, and never reads them on the calling thread${skipped}`, async () => {
    // A read that finds no page starts the kernel's readahead, which a busy machine may finish
    // before the read looks again: then the bytes are answered. EAGAIN must come in a few tries.
    let refused = false;
    for (let attempt = 0; attempt < 20 && !refused; attempt++) {
      await withMapped(4, async ({ handle, fd, path }) => {
        await dropAllPages(path);
        const into = Buffer.alloc(4096);
        const got = probedRead(handle, fd, into, 4096);
        refused = got === -EAGAIN;
        if (!refused) expect([got, into.every((b) => b === 2)]).toEqual([4096, true]);
      });
    }
    expect(refused).toBe(true);
  });

  it('answers EIO, and does not crash, when a known page is gone from the file (cut short under the mapping); a recheck drops the marks of the rest', async () => {
    await withMapped(4, async ({ handle, fd, path }) => {
      const into = Buffer.alloc(4096);
      expect(addon.mapRead(handle, fd, into, 4096, 2 * 4096)).toBe(4096);
      expect(addon.mapRead(handle, fd, into, 4096, 3 * 4096)).toBe(4096);
      truncateSync(path, 4096);
      // The page was known: the copy from the mapping faults (SIGBUS), which is caught.
      expect(addon.mapRead(handle, fd, into, 4096, 3 * 4096)).toBe(-EIO);
      // No longer known: read without waiting, which finds the end of the file.
      expect(addon.mapRead(handle, fd, into, 4096, 3 * 4096)).toBe(0);
      // Page 2 is known still, until a recheck finds it gone: then it is read without waiting too.
      await addon.mapRecheck();
      expect(addon.mapRead(handle, fd, into, 4096, 2 * 4096)).toBe(0);
      // The page still in the file is answered as before.
      expect(addon.mapRead(handle, fd, into, 4096, 0)).toBe(4096);
      expect(into.every((b) => b === 1)).toBe(true);
    });
  });
});

describe('a SIGBUS that is not a fault of a mapped read', () => {
  it('ends the process as it would without the addon (the handler passes it on)', () => {
    const { path, fd } = pagedFile(1);
    closeSync(fd);
    const script = `
      const fs = require('node:fs');
      const addon = require(${JSON.stringify(join(repoRoot(), ADDON_RELATIVE_PATH))});
      const fd = fs.openSync(${JSON.stringify(path)}, 'r');
      if (addon.mapOpen(fd, 4096) < 0) process.exit(3);
      process.kill(process.pid, 'SIGBUS');
      setTimeout(() => process.exit(0), 2000);`;
    const run = spawnSync(process.execPath, ['-e', script], { timeout: 30_000 });
    rmSync(path);
    expect(run.signal).toBe('SIGBUS');
  });
});

describe('the watch for pages the kernel gives back', () => {
  const vmstat = (dropped: { steal?: number; drops?: number; refaults?: number }, filePages: number): string =>
    [
      `nr_free_pages 100`, `nr_file_pages ${filePages}`, `workingset_refault_anon 7`, `workingset_refault_file ${dropped.refaults ?? 0}`,
      `drop_pagecache ${dropped.drops ?? 0}`, `pgsteal_kswapd ${dropped.steal ?? 0}`, `pgsteal_direct 0`, `pgscan_kswapd 99`,
    ].join('\n') + '\n';

  it('reads the counters of pages dropped and the file pages held', () => {
    expect(pageCountsOf(vmstat({ steal: 5, drops: 1, refaults: 2 }, 1000))).toEqual({ dropped: 8, filePages: 1000 });
    expect(pageCountsOf('nr_free_pages 1\n')).toBeUndefined();
  });

  it('sees pages dropped when a counter moves or fewer file pages are held, not when more are', () => {
    const base = pageCountsOf(vmstat({}, 1000))!;
    expect(pagesDropped(base, pageCountsOf(vmstat({}, 1200))!)).toBe(false);
    expect(pagesDropped(base, pageCountsOf(vmstat({}, 999))!)).toBe(true);
    expect(pagesDropped(base, pageCountsOf(vmstat({ steal: 1 }, 1200))!)).toBe(true);
    expect(pagesDropped(base, pageCountsOf(vmstat({ drops: 1 }, 1200))!)).toBe(true);
    expect(pagesDropped(base, pageCountsOf(vmstat({ refaults: 1 }, 1200))!)).toBe(true);
  });

  it('rechecks on evidence, and on counters it cannot read, one recheck at a time; maps nothing where they cannot be read at the start', async () => {
    let text: string | undefined = vmstat({}, 1000);
    let runs = 0;
    let finish!: () => void;
    const watch = new PageEvictions(() => (runs++, new Promise<void>((resolve) => (finish = resolve))), () => text);
    expect(watch.join(60_000)).toBe(true);
    text = vmstat({}, 1100);
    expect(watch.check()).toBe(false);
    text = vmstat({ refaults: 3 }, 1100);
    expect(watch.check()).toBe(true);
    expect(runs).toBe(1);
    // Evidence while it runs: one more after it, not two at once.
    text = undefined;
    expect(watch.check()).toBe(true);
    expect(watch.check()).toBe(true);
    expect(runs).toBe(1);
    finish();
    await waitFor(() => runs === 2, { what: 'the queued recheck', timeoutMs: 5_000 });
    finish();
    await watch.settled;
    expect(runs).toBe(2);
    watch.leave();
    expect(new PageEvictions(async () => undefined, () => undefined).join(60_000)).toBe(false);
  });
});

describe('small records of an engine', () => {
  let engine: Engine;
  let dataDir: string;
  beforeAll(async () => {
    const config = testConfig({ diskReserveBytes: '1MiB', readCacheBytes: 0, readMapCheckMs: 20 });
    dataDir = config.dataDir;
    engine = await openEngine(config);
  });
  afterAll(async () => {
    await engine.close();
  });

  it('are copied from the mapped segment on the calling thread once a read has found them in memory, verified', async () => {
    const blobs = [1, 2, 3].map((n) => patternBytes(4096 + n * 100, 80 + n));
    const metas: BlobMeta[] = [];
    for (const data of blobs) metas.push(engine.stat((await engine.putInline(data, 1, EMPTY)).id)!);
    await engine.settled();
    for (const [i, meta] of metas.entries()) expect((await engine.readInline(meta)).equals(blobs[i]!)).toBe(true);
    // Each read on the calling thread either finds the pages known or learns them; a later one copies them.
    await waitFor(() => {
      const before = native().mapStats().fromMap;
      const all = metas.every((meta, i) => engine.readInlineSync(meta)?.equals(blobs[i]!));
      return all && native().mapStats().fromMap >= before + metas.length;
    }, { what: 'the records copied from the mapping', timeoutMs: 10_000 });
  });

  /**
   * A new record found in memory by a read that does not wait (known from then on; nothing copies it
   * from the mapping, and a mapped page is not dropped on advice), its segment's pages dropped, then
   * `recheck`, then a read on the calling thread: 'probed' when that read was not copied from the
   * mapping (it answered the bytes or nothing), 'kept' when it was, the recheck having found the
   * page in memory (a page held at the moment of the advice, as by a recheck's own look at it,
   * survives it). Nothing may read the record between the drop and the recheck, as a read that finds
   * no page starts the disk read.
   */
  async function readAfterDrop(seed: number, recheck: () => Promise<void>): Promise<'probed' | 'kept'> {
    const data = patternBytes(4096, seed);
    const meta = engine.stat((await engine.putInline(data, 1, EMPTY)).id)!;
    await engine.settled();
    await waitFor(() => engine.readInlineSync(meta)?.equals(data) === true, { what: 'the record found in memory', timeoutMs: 10_000 });
    dropPages(join(dataDir, 'segments', `${String(meta.segment).padStart(8, '0')}.seg`));
    await recheck();
    const before = native().mapStats();
    const got = engine.readInlineSync(meta);
    const after = native().mapStats();
    if (got !== undefined) expect(got.equals(data)).toBe(true);
    if (after.fromMap > before.fromMap) return 'kept';
    expect(after.probed).toBe(before.probed + 1);
    expect((await engine.readInline(meta)).equals(data)).toBe(true);
    return 'probed';
  }

  /** readAfterDrop() with new records until one is 'probed', five at most. */
  async function probedOnce(seed: number, recheck: () => Promise<void>): Promise<'probed' | 'kept'> {
    let seen: 'probed' | 'kept' = 'kept';
    for (let attempt = 0; attempt < 5 && seen === 'kept'; attempt++) seen = await readAfterDrop(seed + attempt, recheck);
    return seen;
  }

  it.skipIf(warmOnly !== '')(`are read without waiting again once a recheck finds their pages dropped: not faulted in on the calling thread${skipped}`, async () => {
    // The recheck the watch would start.
    expect(await probedOnce(9100, async () => void (await native().mapRecheck()))).toBe('probed');
  });

  it.skipIf(warmOnly !== '')(`lose their marks when the process's watch sees file pages dropped and rechecks${skipped}`, async () => {
    const watch = pageEvictions()!;
    // Dropped: fewer file pages at a look of the watch (readMapCheckMs 20 here), then a recheck
    // that started after the drop. A ballast's drop makes the evidence plain where other writers
    // fill the page cache between two looks.
    const recheckByWatch = async (): Promise<void> => {
      const after = watch.rechecks;
      await dropBallastUntil(() => watch.rechecks > after, 100, 20_000);
      await watch.settled;
    };
    expect(await probedOnce(9200, recheckByWatch)).toBe('probed');
  });
});

describe('a reader with readMapSegments 1', () => {
  it('maps one segment at most, and a segment the kernel refused to map takes no place', async () => {
    const config = testConfig({ diskReserveBytes: '1MiB', readCacheBytes: 0, segmentSizeBytes: '1MiB', smallBlobMaxBytes: '64KiB', readMapSegments: 0 });
    const engine = await openEngine(config);
    try {
      const blobs = Array.from({ length: 400 }, (_, n) => patternBytes(4096, 1000 + n));
      const metas: BlobMeta[] = [];
      for (const data of blobs) metas.push(engine.stat((await engine.putInline(data, 1, EMPTY)).id)!);
      await engine.settled();
      const segments = [...new Set(metas.map((m) => m.segment))];
      expect(segments.length).toBeGreaterThanOrEqual(3);
      const store = { path: (segment: number) => join(config.dataDir, 'segments', `${String(segment).padStart(8, '0')}.seg`) } as SegmentStore;
      const reader = new SegmentReader(store, 64 * 1024, { segments: 1, checkMs: 1000 });
      // The kernel refuses the first map (as with vm.max_map_count reached).
      const addon = native();
      let refusals = 1;
      let opened = 0;
      (reader as unknown as { mapper: unknown }).mapper = {
        mapOpen: (fd: number, length: number) => (refusals-- > 0 ? -12 /* ENOMEM */ : (opened++, addon.mapOpen(fd, length))),
        mapRead: addon.mapRead.bind(addon),
        mapClose: addon.mapClose.bind(addon),
        mapRecheck: addon.mapRecheck.bind(addon),
      };
      try {
        for (const segment of segments) {
          const meta = metas.find((m) => m.segment === segment)!;
          const at = meta.offset + HEADER_BYTES;
          // Twice: the first finds the pages (or reads them in the pool), the second copies them.
          for (let i = 0; i < 2; i++) {
            const bytes = reader.readSmallScratch(segment, at, meta.size) ?? (await reader.read(segment, at, meta.size));
            expect(bytes.equals(blobs[metas.indexOf(meta)]!)).toBe(true);
          }
        }
        // The first segment refused, the second mapped, the third over the limit.
        expect(opened).toBe(1);
      } finally {
        reader.close();
      }
    } finally {
      await engine.close();
    }
  });
});
