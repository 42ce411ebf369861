/**
 * CRC-32C of a small blob's bytes: the check its index entry carries for reads from disk
 * (docs/adr/0012-hot-path.md). The addon computes it (native/src/crc32c.c: SSE4.2, or slicing-by-8
 * C; ~0.2 us for 4 KiB against ~1.8 us for BLAKE3 through @napi-rs/blake-hash); without the addon
 * (not built) a table in JavaScript stands in, as path 'js'. BLOBSTORE_CRC32C_PATH pins the
 * addon's path (portable|sse42|auto), for tests and benches.
 */
import { optionalAddon } from '../util/addon.js';
import { reflectedTable } from './crc32.js';
import { bytesOf } from '../util/copy-bytes.js';

/** The addon's CRC-32C functions (native/src/binding_crc32c.c). */
interface Crc32cAddon {
  /** The CRC (0..2^32-1), or -1 for arguments it cannot take. */
  crc32c(src: Uint8Array | ArrayBuffer, offset?: number, length?: number): number;
  crc32cPath(): string;
}

let addon: Crc32cAddon | null | undefined;

function load(): Crc32cAddon | null {
  addon = optionalAddon<Crc32cAddon>('crc32c');
  return addon;
}

/** The CRC-32C of `data` (bytes, or an ArrayBuffer as uWS hands a body over: no view made). */
export function crc32c(data: Uint8Array | ArrayBuffer): number {
  const native = addon === undefined ? load() : addon;
  if (native === null) return crc32cJs(bytesOf(data));
  const crc = native.crc32c(data);
  if (crc < 0) throw new TypeError('crc32c: expected a typed array');
  return crc;
}

/** The path that computes it: the addon's (portable or sse42), or 'js'. */
export function crc32cPath(): string {
  const native = addon === undefined ? load() : addon;
  return native === null ? 'js' : native.crc32cPath();
}

let table: Uint32Array | undefined;

/** The JavaScript stand-in: a byte at a time through one table (reflected polynomial 0x82F63B78). */
export function crc32cJs(data: Uint8Array): number {
  table ??= reflectedTable(0x82f63b78);
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = (c >>> 8) ^ table[(c ^ data[i]!) & 0xff]!;
  return (c ^ 0xffffffff) >>> 0;
}
