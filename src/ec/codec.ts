/**
 * The Reed-Solomon codec, synchronous form: thin typed wrappers over the addon, which reads and
 * writes the shards in place (no copies). See native/src/rs.h for the format.
 *
 *   stripe = [ data 0 .. data k-1 | parity 0 .. parity m-1 ]      all shards the same length
 *   parity i = XOR over j of C[i][j] * data j,   C[i][j] = 1 / ((k + i) XOR j)  in GF(2^8)/0x11d
 */
import { checkStatus, type StatusContext } from './errors.js';
import { native, type CacheStats, type NativeShard, type PathInfo } from './native.js';

/** Bump with RS_FORMAT_VERSION (native/src/rs.h) when the encoding changes: a test pins both. */
export const EC_FORMAT_VERSION = 1;

/**
 * A shard: a Buffer, Uint8Array (or another typed array) or ArrayBuffer. Views may be slices of
 * one larger buffer at any offset. A SharedArrayBuffer must be wrapped in a Uint8Array.
 */
export type Shard = NativeShard;

/** Kernel paths, from slowest to widest; `auto` picks the widest the CPU supports. */
export type EcKernelPathName = 'portable' | 'ssse3' | 'avx2' | 'gfni256' | 'gfni512';

export type { CacheStats, PathInfo };

function fail(status: number, context: Omit<StatusContext, 'kMax' | 'mMax'>): never {
  const { kMax, mMax } = native().limits();
  checkStatus(status, { ...context, kMax, mMax });
  throw new Error(`unreachable: status ${status} passed the check`);
}

/**
 * Computes the m parity shards of k data shards, in place. Throws EcError on bad input
 * (k or m out of range, wrong shard counts or types, unequal lengths, overlapping outputs).
 */
export function encode(k: number, m: number, data: readonly Shard[], parity: readonly Shard[]): void {
  const status = native().encode(k, m, data, parity);
  if (status !== 0) fail(status, { op: 'encode', k, m });
}

/**
 * Adds data shard `index`'s share to the m parity shards, in place:
 *
 *   parity[j] ^= C[j][index] x data          (byte by byte, in GF(2^8))
 *
 * Encoding is linear, so from zeroed parity one call per data shard, in any order, gives what
 * `encode` computes: a stripe's parity can be built as its data shards arrive, holding only the
 * parity (docs/erasure-coding.md, streaming store). A second call with the same data takes it
 * out again. `data` and the parity shards must be the same length and the parity must not
 * overlap the data or each other. Throws EcError as encode does, and EC_INDEX_RANGE for an index
 * outside 0..k-1.
 */
export function encodeUpdate(k: number, m: number, index: number, data: Shard, parity: readonly Shard[]): void {
  const status = native().encodeUpdate(k, m, index, data, parity);
  if (status !== 0) fail(status, { op: 'encodeUpdate', k, m, index });
}

export interface ReconstructOptions {
  /** Compute only the missing data shards (a degraded read needs no parity); default false. */
  readonly dataOnly?: boolean;
}

/**
 * Fills every shard i with present[i] === false (data and parity, or data only with
 * `dataOnly`) from the present ones. shards holds all k + m shards; the missing ones are output
 * buffers of the same length. Throws EcError with code EC_TOO_MANY_MISSING when fewer than k
 * shards are present.
 */
export function reconstruct(k: number, m: number, shards: readonly Shard[], present: readonly boolean[], options?: ReconstructOptions): void {
  const status = native().reconstruct(k, m, shards, present, options?.dataOnly);
  if (status !== 0) fail(status, { op: 'reconstruct', k, m });
}

/** The (k + m) x k encoding matrix, row-major: identity rows, then the Cauchy rows. */
export function ecEncodingMatrix(k: number, m: number): Uint8Array {
  const size = Number.isInteger(k) && Number.isInteger(m) && k > 0 && m > 0 ? (k + m) * k : 0;
  const out = new Uint8Array(size);
  const status = native().encodingMatrix(k, m, out);
  if (status !== 0) fail(status, { op: 'encodingMatrix', k, m });
  return out;
}

/** The kernel path in use, for example "gfni512" (printed by `blobstore` at start). */
export function ecKernelPath(): string {
  return native().kernelPath();
}

/** Every path with whether it is compiled in and supported here. */
export function ecKernelPaths(): PathInfo[] {
  return native().paths();
}

/**
 * Pins a kernel path for the whole process (worker threads included), as BLOBSTORE_EC_PATH does;
 * "auto" returns to the widest supported. Throws EcError when the path is unknown or unavailable.
 */
export function setEcKernelPath(name: EcKernelPathName | 'auto'): void {
  const status = native().setKernelPath(name);
  if (status !== 0) fail(status, { op: 'setEcKernelPath', pathName: name });
}

/** Decode-matrix cache statistics of the calling thread (each worker has its own cache). */
export function ecCacheStats(): CacheStats {
  return native().cacheStats();
}

/** Largest k and m the codec accepts. */
export function ecLimits(): { readonly kMax: number; readonly mMax: number; readonly formatVersion: number } {
  return native().limits();
}
