/**
 * Writes that finish: POSIX lets write(2) return fewer bytes than asked without an error (a
 * filling disk does this, tmpfs among others), so these loop until every byte is written or a
 * call fails. A call that writes nothing and reports nothing fails with EIO instead of looping.
 */
import type { promises as fsp } from 'node:fs';
import { writeSync } from 'node:fs';

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
  let rest = parts;
  while (rest.length > 0) {
    const { bytesWritten } = await handle.writev(rest, position);
    if (bytesWritten === 0) throw noProgress();
    position += bytesWritten;
    // Drop what was written: whole parts, then the front of a part written in part.
    let skip = bytesWritten;
    let i = 0;
    while (i < rest.length && skip >= rest[i]!.length) skip -= rest[i++]!.length;
    rest = i < rest.length && skip > 0 ? [rest[i]!.subarray(skip), ...rest.slice(i + 1)] : rest.slice(i);
  }
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

