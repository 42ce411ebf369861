/**
 * Writes that finish: POSIX lets write(2) return fewer bytes than asked without an error (a
 * filling disk does this, tmpfs among others), so these loop until every byte is written or a
 * call fails. A call that writes nothing and reports nothing fails with EIO instead of looping.
 */
import type { promises as fsp } from 'node:fs';
import { writeSync, writevSync } from 'node:fs';

/** An errno failure in Node's own shape (`code`, `errno`, `syscall`), for toBlobstoreError. */
export function errnoError(code: string, syscall: string, message = `${code}: ${syscall} failed`): NodeJS.ErrnoException {
  const err = new Error(message) as NodeJS.ErrnoException;
  err.code = code;
  err.syscall = syscall;
  return err;
}

/** A write that made no progress and reported no error: treated as an I/O error, never retried forever. */
const noProgress = (): NodeJS.ErrnoException => errnoError('EIO', 'write', 'EIO: write made no progress');

/** Writes all of `data` at `position`, however many calls it takes. */
export async function writeAll(handle: fsp.FileHandle, data: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
    if (bytesWritten === 0) throw noProgress();
    done += bytesWritten;
  }
}

/** Writes all of `parts`, one after another, from `position` (pwritev), however many calls it takes. */
export async function writevAll(handle: fsp.FileHandle, parts: Uint8Array[], position: number): Promise<void> {
  for (let rest = parts; ;) {
    const { bytesWritten } = await handle.writev(rest, position);
    rest = unwritten(rest, bytesWritten);
    if (rest.length === 0) return;
    if (bytesWritten === 0) throw noProgress();
    position += bytesWritten;
  }
}

/**
 * writevAll on the calling thread. The log's batches take this path: a few hundred KiB into the
 * page cache cost less than a thread-pool hop.
 */
export function writevFullySync(fd: number, parts: Buffer[], position: number): void {
  for (let rest = parts; ;) {
    const written = writevSync(fd, rest, position);
    rest = unwritten(rest, written);
    if (rest.length === 0) return;
    if (written === 0) throw errnoError('EIO', 'writev', 'EIO: write made no progress');
    position += written;
  }
}

/** What is left of `parts` once `written` bytes of them went out (empty parts count as written). */
function unwritten<T extends Uint8Array>(parts: T[], written: number): T[] {
  let i = 0;
  while (i < parts.length && written >= parts[i]!.length) written -= parts[i++]!.length;
  if (i === parts.length) return [];
  return written === 0 ? parts.slice(i) : [parts[i]!.subarray(written) as T, ...parts.slice(i + 1)];
}

/** writeAll for the synchronous paths (small files written at start or by the CLI). */
export function writeAllSync(fd: number, data: Uint8Array | string, position: number | null = null): void {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  let done = 0;
  while (done < bytes.length) {
    const n = writeSync(fd, bytes, done, bytes.length - done, position === null ? null : position + done);
    if (n === 0) throw noProgress();
    done += n;
  }
}

