/**
 * A small tmpfs of its own for a test (root only): a full disk within seconds, without touching
 * the machine's real file systems. `mountTmpfs` answers why not when it cannot mount one, so the
 * test can skip with that message.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Tmpfs {
  readonly path: string;
  freeBytes(): number;
  /** Fills the file system with a file of its own until `leaveBytes` are free. */
  fill(leaveBytes: number): void;
  unmount(): void;
}

export function mountTmpfs(sizeBytes: number): Tmpfs | string {
  if (process.getuid?.() !== 0) return 'needs root to mount a tmpfs';
  const path = mkdtempSync(join(tmpdir(), 'blobstore-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0755`, 'tmpfs', path], { stdio: 'pipe' });
  } catch (err) {
    rmSync(path, { recursive: true, force: true });
    return `cannot mount a tmpfs here: ${(err as Error).message.split('\n')[0]}`;
  }
  const freeBytes = (): number => {
    const fs = statfsSync(path);
    return fs.bavail * fs.bsize;
  };
  let fillers = 0;
  return {
    path,
    freeBytes,
    fill: (leaveBytes) => {
      const bytes = freeBytes() - leaveBytes;
      if (bytes > 0) writeFileSync(join(path, `filler-${fillers++}`), Buffer.alloc(bytes));
    },
    unmount: () => {
      execFileSync('umount', ['-l', path], { stdio: 'pipe' });
      rmSync(path, { recursive: true, force: true });
    },
  };
}
