import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, unlinkSync, fchmodSync } from 'node:fs';
import { writeAllSync } from '../util/write-all.js';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';

/**
 * Crash-safe small-file updates for the CLI's config and state files: write a temp file in the
 * same directory, fsync it, rename it over the target, fsync the directory. A reader sees the old
 * or the new file, never a torn one. `withFileLock` serialises read-modify-write cycles of
 * concurrent CLI runs so that no update is lost.
 */

export function writeFileAtomic(link: string, text: string, mode = 0o600): void {
  // A symlinked file (a dotfiles repository) is updated where it lives, the link kept.
  const path = linkTarget(link);
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temp, 'wx', mode);
  try {
    fchmodSync(fd, mode); // the umask may have narrowed it; never widened
    writeAllSync(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/** The file a path names, through symlinks (a dangling one: where it points); the path itself when it is none. */
function linkTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    try {
      return resolve(dirname(path), readlinkSync(path));
    } catch {
      return path;
    }
  }
}

/** Reads a file, or undefined when it does not exist. */
export function readFileIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

const LOCK_WAIT_MS_MAX = 10_000;
const LOCK_STALE_MS = 30_000;

/** Runs `fn` holding `<path>.lock` (O_EXCL); a lock whose owner died or that is very old is broken. */
export async function withFileLock<T>(path: string, fn: () => T | Promise<T>): Promise<T> {
  const lock = `${path}.lock`;
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + LOCK_WAIT_MS_MAX;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx', 0o600);
      writeAllSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (lockIsStale(lock)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`could not lock ${path} (held by another blobstore command; remove ${lock} if none is running)`);
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 20));
    }
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(lock);
    } catch {
      // Already broken as stale by another process: nothing to release.
    }
  }
}

function lockIsStale(lock: string): boolean {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) return true;
    return Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS;
  } catch {
    return false;
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
