/**
 * Piscina worker entry for the async codec (src/ec/async.ts). Shards arrive as Uint8Arrays over
 * SharedArrayBuffers, so the worker writes the caller's memory directly; it returns the native
 * status and the main thread turns it into an EcError.
 */
import { native } from './native.js';

export interface EcTask {
  readonly op: 'encode' | 'reconstruct';
  readonly k: number;
  readonly m: number;
  /** encode: the data shards; reconstruct: all k + m shards. null (not an array) fails natively. */
  readonly shards: readonly (Uint8Array | null)[] | null;
  /** encode: the parity shards; reconstruct: the present flags. */
  readonly extra: readonly (Uint8Array | null)[] | readonly (boolean | null)[] | null;
  /** reconstruct: compute only the missing data shards. */
  readonly dataOnly?: boolean;
}

export default function run(task: EcTask): number {
  const addon = native();
  // The casts hand possibly-malformed arguments to the addon, which validates every one.
  if (task.op === 'encode') {
    return addon.encode(task.k, task.m, task.shards as Uint8Array[], task.extra as Uint8Array[]);
  }
  return addon.reconstruct(task.k, task.m, task.shards as Uint8Array[], task.extra as boolean[], task.dataOnly);
}
