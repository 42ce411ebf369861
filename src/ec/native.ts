/**
 * The one module that loads the EC addon (native/build/Release/blobstore_ec.node, built by
 * `make -C native`). It resolves the addon from the repository root, so the same code works from
 * src/ (vitest) and dist/src/ (runtime), in the main thread and in Piscina workers.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ADDON_RELATIVE_PATH } from '../util/addon.js';
import { repoRoot } from '../util/repo-root.js';

import { EcError, EcErrorCode, checkStatus } from './errors.js';

/** A shard: a typed array (Buffer and Uint8Array included) or an ArrayBuffer. */
export type NativeShard = NodeJS.TypedArray | ArrayBuffer;

export interface PathInfo {
  readonly name: string;
  /** The build includes the path (see EC_DISABLE in native/Makefile). */
  readonly compiled: boolean;
  /** Compiled, and this CPU and OS can run it. */
  readonly supported: boolean;
}

export interface CacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly entries: number;
  readonly capacity: number;
}

/** The addon's functions (native/src/binding.c); every number returned is a status. */
export interface EcAddon {
  encode(k: number, m: number, data: readonly NativeShard[], parity: readonly NativeShard[]): number;
  /** parity[j] ^= C[j][index] x data, in place (rs_encode_update). */
  encodeUpdate(k: number, m: number, index: number, data: NativeShard, parity: readonly NativeShard[]): number;
  reconstruct(k: number, m: number, shards: readonly NativeShard[], present: readonly boolean[], dataOnly?: boolean): number;
  encodingMatrix(k: number, m: number, out: Uint8Array): number;
  kernelPath(): string;
  setKernelPath(name: string): number;
  paths(): PathInfo[];
  cacheStats(): CacheStats;
  limits(): { formatVersion: number; kMax: number; mMax: number };
  /** fallocate(2) on libuv's thread pool (native/src/binding_fs.c): resolves 0 or an errno. */
  fallocate(fd: number, mode: number, offset: number, length: number): Promise<number>;
  fallocateModes(): { KEEP_SIZE: number; PUNCH_HOLE: number };
  /** preadv2(RWF_NOWAIT): bytes read from the page cache, or -errno (-EAGAIN: not in memory). */
  preadNoWait(fd: number, buffer: Uint8Array, length: number, position: number): number;
  /** Maps [0, length) of the file read-only (native/src/binding_map.c): a handle, or -errno. */
  mapOpen(fd: number, length: number): number;
  /**
   * Bytes of the mapped file into `buffer`: copied from the mapping when its pages are known to be
   * in memory, else read with preadv2(RWF_NOWAIT), which marks them known when it reads them all.
   * Bytes read, or -errno (-EAGAIN: not in memory; -EIO: a page of the mapping could not be had).
   */
  mapRead(handle: number, fd: number, buffer: Uint8Array, length: number, position: number): number;
  /** Unmaps; no read of the handle may be running. */
  mapClose(handle: number): number;
  /**
   * Drops the marks of pages the page cache no longer holds (mincore, in the thread pool) in every
   * mapping a read has marked a page of: resolves with the marked pages still held, or -1 when
   * every mark was dropped at once (mappings in use spanning more than 8 GiB). `pauseMs`: each
   * mapping is held that long (tests of a close during a recheck).
   */
  mapRecheck(pauseMs?: number): Promise<number>;
  /** Files mapped now, and held by a recheck; reads answered from mappings and reads that probed the page cache since the addon was loaded. */
  mapStats(): { mapped: number; pinned: number; fromMap: number; probed: number };
  /**
   * One pwrite(2) per part from `position`, in one thread-pool job (native/src/binding_fs.c):
   * resolves 0 or an errno. With `directFd` (the file opened O_DIRECT), parts at 4 KiB-aligned
   * offsets and lengths go through it.
   */
  pwriteEach(fd: number, parts: Uint8Array[], position: number, directFd?: number): Promise<number>;
  /** A sink for log batches (native/src/binding_batch.c): `done(token, errno)` once per batch written, `done(-1, 0)` for a turn (batchTurn). */
  batchSink(done: (token: number, errno: number) => void): object;
  /**
   * A log batch in one thread-pool job: the first `count` triples of `parts` ([buffer, offset, length]...) as one stream from
   * `position` (through `directFd` when it is whole 4 KiB blocks), then fdatasync(fd), then the read-back
   * range (if `readBackLength` > 0) read back into the page cache; the sink's callback answers.
   * Returns 0, or an errno when nothing was queued (bad arguments).
   */
  writeBatchTo(
    sink: object, token: number, fd: number, parts: (Uint8Array | number)[], count: number, position: number, directFd: number,
    readBackFd: number, readBackPosition: number, readBackLength: number,
  ): number;
  /** [position, position + length) of `fd` read back into the page cache (posix_fadvise WILLNEED) in one thread-pool job; nobody is answered. 0, or an errno when nothing was queued. */
  readBackTo(sink: object, fd: number, position: number, length: number): number;
  /** The sink's `done(-1, 0)` runs once in this loop turn's check phase (where setImmediate's callbacks run), however often this is called meanwhile. */
  batchTurn(sink: object): number;
  /** Bytes pwriteEach and writeBatchTo wrote through an O_DIRECT fd since the addon was loaded. */
  directWriteBytes(): number;
}


let addon: EcAddon | undefined;

function load(): EcAddon {
  const file = join(repoRoot(), ADDON_RELATIVE_PATH);
  let loaded: EcAddon;
  try {
    loaded = createRequire(import.meta.url)(file) as EcAddon;
  } catch (err) {
    throw new EcError(EcErrorCode.ADDON_MISSING, `cannot load the EC addon ${file}: run \`make -C native\``, undefined, err);
  }
  // BLOBSTORE_EC_PATH pins a kernel path; a name the addon rejects is an error, not a fallback.
  const forced = process.env.BLOBSTORE_EC_PATH;
  if (forced !== undefined && forced !== '') {
    const { kMax, mMax } = loaded.limits();
    checkStatus(loaded.setKernelPath(forced), { op: 'BLOBSTORE_EC_PATH', kMax, mMax, pathName: forced });
  }
  return loaded;
}

/** The addon, loaded on first use. */
export function native(): EcAddon {
  addon ??= load();
  return addon;
}
