/**
 * The worker side of the process's Piscina pool (pool.ts), one file for every kind of task:
 * `digest`, BLAKE3 of a 1 MiB chunk read in place from shared memory (the chunk buffers are
 * SharedArrayBuffer views, so nothing is copied), and `ec`, a Reed-Solomon task (src/ec/worker.ts).
 */
import { blake3 } from '@napi-rs/blake-hash';

export { default as ec } from '../ec/worker.js';

export interface DigestTask {
  buffer: SharedArrayBuffer;
  offset: number;
  length: number;
}

export function digest(task: DigestTask): Uint8Array {
  return blake3(Buffer.from(task.buffer, task.offset, task.length));
}
