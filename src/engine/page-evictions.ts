/**
 * Evidence that the kernel gave page-cache pages back, for the mapped reads of segment-reader.ts:
 * a page found in memory once is copied from its mapping from then on, until the kernel may have
 * dropped it. The kernel says so in /proc/vmstat, read every readMapCheckMs:
 *
 *   pgsteal_*                 pages reclaimed (kswapd, direct, proactive)
 *   drop_pagecache            a write to /proc/sys/vm/drop_caches
 *   workingset_refault_file   a file page read again after it was dropped (reclaim that counts no
 *                             pgsteal, as DAMON's pageout does, shows here on its first refault)
 *   nr_file_pages             file pages held: fewer than at the last look (a net count: advice
 *                             that drops fewer pages than other writers add in one look goes unseen)
 *
 * Any of them moving has every mapping in use checked again page by page (native mapRecheck:
 * mincore in the thread pool, ~1.5 ms per 256 MiB segment; past 8 GiB in use, every mark dropped
 * at once), which keeps the marks of the pages still held: one page dropped does not send every
 * read back to preadv2. Between a drop and the
 * recheck after the next look, a read may fault its page in from the disk on the event loop: a
 * slower GET, never a wrong byte (the mapping is the file, and every record is verified before it
 * is sent). Rechecks are spaced by their cost (RECHECK_SPACING), so pages reclaimed all the time
 * cost a pool thread little. Where /proc/vmstat cannot be read at the start, nothing is mapped.
 */
import { readFileSync } from 'node:fs';

/** A recheck starts at most once per this many times its own duration. */
const RECHECK_SPACING = 20;

const COUNTERS = /^(pgsteal_\w+|drop_pagecache|workingset_refault_file) (\d+)$/gm;
const FILE_PAGES = /^nr_file_pages (\d+)$/m;

/** What /proc/vmstat says now: the sum of the counters of pages dropped, and the file pages held. */
export interface PageCounts {
  dropped: number;
  filePages: number;
}

export function pageCountsOf(vmstat: string): PageCounts | undefined {
  const file = FILE_PAGES.exec(vmstat);
  if (file === null) return undefined;
  let dropped = 0;
  for (const m of vmstat.matchAll(COUNTERS)) dropped += Number(m[2]);
  return { dropped, filePages: Number(file[1]) };
}

/** Whether pages may have been dropped between two looks. */
export function pagesDropped(before: PageCounts, now: PageCounts): boolean {
  return now.dropped !== before.dropped || now.filePages < before.filePages;
}

function readVmstat(): string | undefined {
  try {
    return readFileSync('/proc/vmstat', 'latin1');
  } catch {
    return undefined;
  }
}

/**
 * One watch for the process (the addon's marks are the process's): started by the first reader
 * that maps, stopped with the last. `recheck` runs on evidence, one at a time (evidence seen
 * while one runs starts another after it).
 */
export class PageEvictions {
  private users = 0;
  private timer: NodeJS.Timeout | undefined;
  private last: PageCounts | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Rechecks run, and looks at the counters taken, since the watch started. */
  rechecks = 0;
  looks = 0;

  constructor(
    private readonly recheck: () => Promise<unknown>,
    private readonly read: () => string | undefined = readVmstat,
  ) {}

  /** Starts watching (or joins the watch); false where the counters cannot be read: map nothing then. */
  join(everyMs: number): boolean {
    if (this.users === 0) {
      const text = this.read();
      const counts = text === undefined ? undefined : pageCountsOf(text);
      if (counts === undefined) return false;
      this.last = counts;
      this.timer = setInterval(() => this.check(), everyMs);
      this.timer.unref();
    }
    this.users++;
    return true;
  }

  leave(): void {
    if (this.users === 0) return;
    if (--this.users > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.last = undefined;
  }

  /** One look at the counters; true when pages may have been dropped since the last (a recheck is started or queued). */
  check(): boolean {
    this.looks++;
    const text = this.read();
    const now = text === undefined ? undefined : pageCountsOf(text);
    const dropped = now === undefined || this.last === undefined || pagesDropped(this.last, now);
    this.last = now;
    if (dropped) this.startRecheck();
    return dropped;
  }

  /** The recheck under way, if any (tests wait for it). */
  get settled(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  private startRecheck(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.rechecks++;
    const start = performance.now();
    // A failed recheck leaves the marks as they were; the next evidence tries again. Evidence
    // that keeps coming (pages reclaimed all the time) costs at most 1 / RECHECK_SPACING of a
    // pool thread: the next recheck waits that many times as long as this one took.
    this.running = this.recheck().then(() => undefined, () => undefined).then(async () => {
      const pause = (RECHECK_SPACING - 1) * (performance.now() - start);
      if (pause >= 1) await new Promise<void>((resolve) => setTimeout(resolve, pause).unref());
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.startRecheck();
      }
    });
  }
}
