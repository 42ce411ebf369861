/**
 * File-system calls of the engine: directory fsync, and space allocated for real (fallocate)
 * before the bytes that need it are acknowledged anywhere, so a full disk shows up as a refused
 * allocation, never as a hole in a record. Writes go through util/write-all.ts (short writes).
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { dirname } from 'node:path';
import { native } from '../ec/native.js';
import { errnoError, writeAll } from '../util/write-all.js';

export { errnoError, writeAll, writevFullySync } from '../util/write-all.js';

/**
 * mkdir -p whose new directories are durable: each directory it creates has its entry fsynced in
 * its parent (a blob's prefix directory made for the first blob of that prefix would otherwise
 * be lost to a power failure with the blob in it).
 */
export async function mkdirDurable(dir: string): Promise<void> {
  const first = await fsp.mkdir(dir, { recursive: true });
  if (first === undefined) return;
  for (let d = dir; ; d = dirname(d)) {
    await fsyncDir(dirname(d));
    if (d === first || d === dirname(d)) return;
  }
}

/** Makes a rename or unlink in `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** How errno numbers of the addon map to Node's codes (the few fallocate can return). */
const ERRNO_CODES: Record<number, string> = { 5: 'EIO', 9: 'EBADF', 22: 'EINVAL', 27: 'EFBIG', 28: 'ENOSPC', 95: 'EOPNOTSUPP', 122: 'EDQUOT' };

interface Fallocate {
  call(fd: number, mode: number, offset: number, length: number): Promise<number>;
  keepSize: number;
  punchHole: number;
}

let fallocateFn: Fallocate | null | undefined;

/** The addon's fallocate, or null when the addon is not built (writes of zeros stand in). */
function fallocate(): Fallocate | null {
  if (fallocateFn !== undefined) return fallocateFn;
  try {
    const addon = native();
    const modes = addon.fallocateModes();
    fallocateFn = { call: (fd, mode, offset, length) => addon.fallocate(fd, mode, offset, length), keepSize: modes.KEEP_SIZE, punchHole: modes.PUNCH_HOLE };
  } catch {
    fallocateFn = null;
  }
  return fallocateFn;
}

type PwriteEach = (fd: number, parts: Uint8Array[], position: number, directFd: number) => Promise<number>;

const addonWrites = new Map<'pwriteEach', PwriteEach | null>();

/** The addon's pwriteEach, or null when the addon is not built. */
function addonWrite(name: 'pwriteEach'): PwriteEach | null {
  let fn = addonWrites.get(name);
  if (fn !== undefined) return fn;
  try {
    const addon = native();
    fn = typeof addon[name] === 'function' ? (fd, parts, position, directFd) => addon[name](fd, parts, position, directFd) : null;
  } catch {
    fn = null;
  }
  addonWrites.set(name, fn);
  return fn;
}

/** A write call's errno (0: none) as Node's error, or null. */
export function writeError(errno: number): NodeJS.ErrnoException | null {
  return errno === 0 ? null : errnoError(ERRNO_CODES[errno] ?? `E${errno}`, 'write');
}

/** Writes log batches (BatchWriter.write); each is answered by `done(token, errno)`. */
export interface BatchWriter {
  /**
   * Queues a batch: the first `count` triples of `parts` ([buffer, offset, length]...; the array
   * may be longer, it is reused) written as one stream from `position`
   * (through `directFd`, O_DIRECT, when they make whole 4 KiB blocks; -1: none), then fdatasync.
   * Then [readBackPosition, + readBackLength) of `readBackFd` is read back into the page cache
   * (posix_fadvise WILLNEED; a length of 0: nothing). The parts' bytes must stay untouched until
   * `done(token, ...)`. Returns 0, or an errno when nothing was queued.
   */
  write(
    token: number, fd: number, parts: (Uint8Array | number)[], count: number, position: number, directFd: number,
    readBackFd?: number, readBackPosition?: number, readBackLength?: number,
  ): number;
  /** The read-back alone, in the thread pool (advice: nobody is answered). 0, or an errno when nothing was queued. */
  readBack(fd: number, position: number, length: number): number;
  /** `turn()` runs once in this loop turn's check phase, after its I/O callbacks (setImmediate's place, without its object per call). */
  scheduleTurn(): void;
}

/**
 * The log's group commit in one thread-pool job (native/src/binding_batch.c), answered through
 * `done` with the batch's token and 0 or an errno: no promise or other object per batch; and its
 * turns (scheduleTurn: `turn` runs in the check phase). Null when the addon is not built.
 */
export function batchWriter(done: (token: number, errno: number) => void, turn: () => void = () => undefined): BatchWriter | null {
  let addon: ReturnType<typeof native>;
  try {
    addon = native();
  } catch {
    return null;
  }
  if (typeof addon.batchSink !== 'function') return null;
  const sink = addon.batchSink((token: number, errno: number) => (token < 0 ? turn() : done(token, errno)));
  return {
    write: (token, fd, parts, count, position, directFd, readBackFd = 0, readBackPosition = 0, readBackLength = 0) =>
      addon.writeBatchTo(sink, token, fd, parts, count, position, directFd, readBackFd, readBackPosition, readBackLength),
    readBack: (fd, position, length) => addon.readBackTo(sink, fd, position, length),
    scheduleTurn: () => void addon.batchTurn(sink),
  };
}

/**
 * Writes `parts` one after another from `position`, each with a write of its own (to its end,
 * across short writes), in one thread-pool job when the addon is built (else one write per
 * part). Not one pwritev: the kernel sizes page-cache folios by a write's length (blob-file.ts).
 * With `direct` (the same file opened O_DIRECT), the addon writes the parts at 4 KiB-aligned
 * offsets and lengths through it (blob-file.ts); without the addon it is not used.
 * The parts must stay untouched until it resolves.
 */
export async function writeEach(handle: fsp.FileHandle, parts: Uint8Array[], position: number, direct?: fsp.FileHandle): Promise<void> {
  const f = addonWrite('pwriteEach');
  if (!f) {
    for (const part of parts) {
      await writeAll(handle, part, position);
      position += part.length;
    }
    return;
  }
  // A closed FileHandle's fd is -1: EBADF, as Node's own write on it.
  if (handle.fd < 0) throw errnoError('EBADF', 'write', 'EBADF: the file is closed');
  const err = writeError(await f(handle.fd, parts, position, direct !== undefined && direct.fd >= 0 ? direct.fd : -1));
  if (err) throw err;
}

/** Bytes written through an O_DIRECT fd (writeEach's `direct`) by this process; 0 without the addon. */
export function directWriteBytes(): number {
  try {
    return native().directWriteBytes();
  } catch {
    return 0;
  }
}

const ZEROS = Buffer.alloc(1024 * 1024);

/** Writes zeros over [offset, offset + length), through `direct` (O_DIRECT) where writeEach can. */
async function writeZeros(handle: fsp.FileHandle, offset: number, length: number, direct?: fsp.FileHandle): Promise<void> {
  const parts: Buffer[] = [];
  for (let at = offset; at < offset + length; at += ZEROS.length) parts.push(ZEROS.subarray(0, Math.min(ZEROS.length, offset + length - at)));
  await writeEach(handle, parts, offset, direct);
}

/**
 * Gives [offset, offset + length) of the file real blocks, so later writes there cannot fail for
 * space. Throws ENOSPC (or EDQUOT) when the disk cannot hold it. Where fallocate is not supported,
 * zeros are written instead: the same guarantee at the cost of writing the bytes.
 * With `direct` (the file opened O_DIRECT) the allocated blocks are also written with zeros
 * through it: an allocated block is "unwritten" until then, and the first write into it changes
 * the file's extent tree, which the next fdatasync must write and wait for (docs/adr/0012-hot-path.md).
 */
export async function allocate(handle: fsp.FileHandle, offset: number, length: number, direct?: fsp.FileHandle): Promise<void> {
  const f = fallocate();
  const errno = f ? await f.call(handle.fd, 0, offset, length) : 95;
  const code = errno === 0 ? undefined : (ERRNO_CODES[errno] ?? `E${errno}`);
  if (code !== undefined && code !== 'EOPNOTSUPP') throw errnoError(code, 'fallocate');
  if (code !== undefined || direct !== undefined) await writeZeros(handle, offset, length, direct);
}

/**
 * Gives the blocks of [offset, offset + length) back (reads there return zeros). Needs no space,
 * so it works on a full disk; false where the file system cannot punch holes.
 */
export async function punchHole(handle: fsp.FileHandle, offset: number, length: number): Promise<boolean> {
  const f = fallocate();
  if (!f || length <= 0) return false;
  const errno = await f.call(handle.fd, f.punchHole | f.keepSize, offset, length);
  if (errno === 0) return true;
  const code = ERRNO_CODES[errno] ?? `E${errno}`;
  if (code === 'EOPNOTSUPP') return false;
  throw errnoError(code, 'fallocate');
}
