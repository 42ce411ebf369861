/**
 * The codec's async form: the same encode/reconstruct, run in a Piscina worker.
 *
 * Zero copy needs shared memory: a shard that is a view of a SharedArrayBuffer is handed to the
 * worker as is and written there in place. Any other shard is copied into a fresh
 * SharedArrayBuffer (inputs before the task, outputs back after it), which costs a copy of each
 * such shard; allocate stripes with `allocSharedStripe` to avoid it.
 *
 * A task's round trip costs ~70 us here, more than encoding a 4+2 stripe of 64 KiB shards
 * (~3 us): bench/ec/node.bench.ts measured 4+2 encode at 64 KiB shards at ~3 GB/s async against
 * ~68 GB/s in line. Use the async form for stripes of 1 MiB shards and up, where the round trip
 * is small beside the copy and disk work around it; call encode/reconstruct directly below.
 */
import { Piscina } from 'piscina';
import { checkStatus, type StatusContext } from './errors.js';
import type { ReconstructOptions, Shard } from './codec.js';
import { native } from './native.js';
import { compiledPath } from '../util/repo-root.js';
import type { EcTask } from './worker.js';

export interface EcAsyncOptions extends ReconstructOptions {
  /**
   * Run on this pool (a shared one, say); tasks name ecWorkerFilename() themselves, so the pool's
   * own default worker file does not matter. Default: a pool of our own.
   */
  readonly pool?: Piscina;
}

/** The worker entry as compiled JavaScript: dist/src/ec/worker.js even when running from src/. */
export function ecWorkerFilename(): string {
  return compiledPath('ec', 'worker.js');
}

/**
 * A pool of the codec's own, made at the first task unless one is injected (a node injects
 * nothing: it encodes in line; src/pool's WorkerPool runs this worker's tasks too).
 */
let ownPool: Piscina | undefined;

/** Stops the pool the codec created for itself (not an injected one). */
export async function closeEcPool(): Promise<void> {
  const pool = ownPool;
  ownPool = undefined;
  await pool?.destroy();
}

/**
 * One buffer of (k + m) * shardBytes shared bytes, returned as k + m consecutive shards: the
 * layout the async form passes without copying.
 */
export function allocSharedStripe(k: number, m: number, shardBytes: number): Buffer[] {
  const sab = new SharedArrayBuffer((k + m) * shardBytes);
  return Array.from({ length: k + m }, (_, i) => Buffer.from(sab, i * shardBytes, shardBytes));
}

/** Outputs computed in shared copies, to write back into the caller's shards. */
type CopyBack = [shared: Uint8Array, target: Uint8Array][];

function bytesOf(x: unknown): Uint8Array | null {
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x) && !(x instanceof DataView)) {
    return x instanceof Uint8Array ? x : new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  }
  return null; // not bytes: the native side reports EC_SHARD_TYPE with this index
}

/** A view the worker can read and write: the shard itself when shared, else a shared copy. */
export function share(x: unknown, isOutput: boolean, copyBack: CopyBack): Uint8Array | null {
  const view = bytesOf(x);
  if (view === null || view.buffer instanceof SharedArrayBuffer) return view;
  const copy = new Uint8Array(new SharedArrayBuffer(view.byteLength));
  if (isOutput) copyBack.push([copy, view]);
  else copy.set(view);
  return copy;
}

function shareAll(xs: unknown, isOutput: (i: number) => boolean, copyBack: CopyBack): (Uint8Array | null)[] | null {
  if (!Array.isArray(xs)) return null;
  return xs.map((x, i) => share(x, isOutput(i), copyBack));
}

async function runTask(task: EcTask, copyBack: CopyBack, context: Omit<StatusContext, 'kMax' | 'mMax'>, options?: EcAsyncOptions): Promise<void> {
  const pool = options?.pool ?? (ownPool ??= new Piscina({ filename: ecWorkerFilename() }));
  const status = (await pool.run(task, { filename: ecWorkerFilename() })) as number;
  if (status !== 0) {
    const { kMax, mMax } = native().limits();
    checkStatus(status, { ...context, kMax, mMax });
  }
  for (const [shared, target] of copyBack) target.set(shared);
}

const numberOrNaN = (x: unknown): number => (typeof x === 'number' ? x : Number.NaN);

/** encode() in a worker; see the module comment for when shards are copied. */
export async function encodeAsync(k: number, m: number, data: readonly Shard[], parity: readonly Shard[], options?: EcAsyncOptions): Promise<void> {
  const copyBack: CopyBack = [];
  const task: EcTask = {
    op: 'encode',
    k: numberOrNaN(k),
    m: numberOrNaN(m),
    shards: shareAll(data, () => false, copyBack),
    extra: shareAll(parity, () => true, copyBack),
  };
  await runTask(task, copyBack, { op: 'encode', k, m }, options);
}

/** reconstruct() in a worker (options.dataOnly as there); see the module comment for copies. */
export async function reconstructAsync(k: number, m: number, shards: readonly Shard[], present: readonly boolean[], options?: EcAsyncOptions): Promise<void> {
  const copyBack: CopyBack = [];
  const flags = Array.isArray(present) ? present.map((p) => (typeof p === 'boolean' ? p : null)) : null;
  const dataOnly = options?.dataOnly === true;
  const isOutput = (i: number): boolean => flags?.[i] === false && (!dataOnly || i < k);
  const task: EcTask = {
    op: 'reconstruct',
    k: numberOrNaN(k),
    m: numberOrNaN(m),
    shards: shareAll(shards, isOutput, copyBack),
    extra: flags,
    dataOnly,
  };
  await runTask(task, copyBack, { op: 'reconstruct', k, m }, options);
}
