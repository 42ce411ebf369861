/** What the page cache holds of a file, seen from outside the process (util-linux's fincore). */
import { execFileSync } from 'node:child_process';
import { closeSync, constants as fsc, fsyncSync, openSync, promises as fsp, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../../src/ec/native.js';
import { tempDir } from './node-process.js';
import { waitFor } from './wait.js';

/** Bytes of `path` the page cache holds, or undefined without fincore (Debian's util-linux-extra). */
export function residentBytes(path: string): number | undefined {
  try {
    return Number(execFileSync('fincore', ['--bytes', '--raw', '--noheadings', '--output', 'RES', path], { encoding: 'utf8' }).trim());
  } catch {
    return undefined;
  }
}

/**
 * residentBytes(), once it reaches `want` (a read-back's device read completes after the call that
 * asks for it): up to 10 s, then what it was, for the caller's expect to show.
 */
export async function residentSoon(path: string, want: number): Promise<number | undefined> {
  let got = residentBytes(path);
  await waitFor(() => (got = residentBytes(path)) === want, { what: `${want} bytes of ${path} in the page cache`, timeoutMs: 10_000, pollMs: 10 }).catch(() => undefined);
  return got;
}

/** Why O_DIRECT cannot be tried in the tests' temp dirs (their file system refuses it), or '' when it can. */
export async function directRefused(): Promise<string> {
  const dir = tempDir();
  const probe = join(dir, 'direct-probe');
  await fsp.writeFile(probe, '');
  const ok = await fsp.open(probe, fsc.O_WRONLY | fsc.O_DIRECT).then(async (h) => (await h.close(), true), () => false);
  return ok ? '' : `${dir}'s file system refuses O_DIRECT`;
}

/** Why the page cache cannot be seen here (no fincore), or '' when it can. */
export async function pageCacheUnseen(): Promise<string> {
  const probe = join(tempDir(), 'fincore-probe');
  await fsp.writeFile(probe, 'x');
  return residentBytes(probe) === undefined ? 'no fincore (util-linux-extra) to see the page cache' : '';
}

/** Drops the file's pages from the page cache (posix_fadvise DONTNEED, as GNU dd's iflag=nocache count=0). */
export function dropPages(path: string): void {
  execFileSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none']);
}

/**
 * Drops the file's pages until none is in memory (fincore): on a busy machine a page another CPU
 * has just put in its batch for the LRU lists survives one drop (the advice drains only its own CPU's).
 */
export async function dropAllPages(path: string): Promise<void> {
  await waitFor(() => {
    dropPages(path);
    return residentBytes(path) === 0;
  }, { what: `every page of ${path} dropped`, timeoutMs: 10_000, pollMs: 20 });
}

/** Writes `bytes` to `path` and syncs it (clean pages: advice drops only those); a descriptor open for reading. */
export function writeSynced(path: string, bytes: Uint8Array): number {
  writeFileSync(path, bytes);
  const fd = openSync(path, 'r');
  fsyncSync(fd);
  return fd;
}

/**
 * Why no read can be made cold here, or '' when one can: pages of a file under the temp dirs,
 * dropped, must be found missing by a read that does not wait (tmpfs keeps them) in one of a few
 * tries (such a read starts the kernel's readahead, which may be done before it looks again).
 */
export function pagesKept(): string {
  const path = join(tempDir(), 'drop-probe');
  const fd = writeSynced(path, Buffer.alloc(64 * 1024, 1));
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      dropPages(path);
      if (native().preadNoWait(fd, Buffer.alloc(4096), 4096, 4096) === -11 /* EAGAIN */) return '';
    }
    return 'the temp dirs\' file system keeps pages it is asked to drop (tmpfs), or reads them in at once';
  } finally {
    closeSync(fd);
    rmSync(path);
  }
}

/**
 * Evidence of dropped pages that a watch of /proc/vmstat cannot miss: it sees the net change of
 * nr_file_pages between two looks, and on a busy machine other writers add more than one record's
 * pages in that time. A 16 MiB ballast file is read in, then dropped, `pauseMs` apart (more than
 * two looks, so that the two do not cancel within one), until `seen` holds.
 */
export async function dropBallastUntil(seen: () => boolean, pauseMs: number, timeoutMs: number): Promise<void> {
  const path = join(tempDir(), 'ballast');
  closeSync(writeSynced(path, Buffer.alloc(16 * 1024 * 1024, 7)));
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, pauseMs));
  try {
    await waitFor(async () => {
      if (seen()) return true;
      await pause();
      dropPages(path);
      await pause();
      if (seen()) return true;
      await fsp.readFile(path);
      return false;
    }, { what: 'a look at the page counters that sees the ballast dropped', timeoutMs, pollMs: 0 });
  } finally {
    rmSync(path, { force: true });
  }
}
