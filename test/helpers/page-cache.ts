/** What the page cache holds of a file, seen from outside the process (util-linux's fincore). */
import { execFileSync } from 'node:child_process';
import { constants as fsc, promises as fsp } from 'node:fs';
import { join } from 'node:path';
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
