/**
 * The worker side of the node's Piscina pool: BLAKE3 digests of 1 MiB chunks, read in place from
 * shared memory (the chunk buffers are SharedArrayBuffer views, so nothing is copied).
 */
import { blake3 } from '@napi-rs/blake-hash';

export interface DigestTask {
  buffer: SharedArrayBuffer;
  offset: number;
  length: number;
}

export default function digest(task: DigestTask): Uint8Array {
  return blake3(Buffer.from(task.buffer, task.offset, task.length));
}
