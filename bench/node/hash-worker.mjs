// Piscina worker of the hashing micro-benchmark: BLAKE3 of one buffer (copied in, or a view
// on a SharedArrayBuffer), returning the 32-byte digest.
import { createRequire } from 'node:module';

const { blake3 } = createRequire(import.meta.url)('@napi-rs/blake-hash');

export default function hash(data) {
  return blake3(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}
