/** What the page cache holds of a file, seen from outside the process (util-linux's fincore). */
import { execFileSync } from 'node:child_process';

/** Bytes of `path` the page cache holds, or undefined without fincore (Debian's util-linux-extra). */
export function residentBytes(path: string): number | undefined {
  try {
    return Number(execFileSync('fincore', ['--bytes', '--raw', '--noheadings', '--output', 'RES', path], { encoding: 'utf8' }).trim());
  } catch {
    return undefined;
  }
}

/** residentBytes(), once it reaches `want` (a read-back's device read completes after the call that asks for it): up to 5 s. */
export async function residentSoon(path: string, want: number): Promise<number | undefined> {
  let got = residentBytes(path);
  for (let i = 0; i < 500 && got !== want; i++) {
    await new Promise((r) => setTimeout(r, 10));
    got = residentBytes(path);
  }
  return got;
}
