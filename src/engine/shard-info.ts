/**
 * A shard column's record carries what any node needs to serve the blob and to check the column
 * alone: the shard info, written at the start of the record's labels area (inside the header CRC),
 * followed by the blob's labels (little endian):
 *
 *   0 u8 version (1)   1 u8 column index   2 u16 reserved   4 u32 shardBytes
 *   8 u64 blob size    16 32 blob checksum (BLAKE3-256 of the whole blob; the id is its first 16 bytes)
 *  48 blob labels (UTF-8 JSON)
 *
 * Version 2, a column of a blob stored as it streamed in (placed by a key chosen before its id was
 * known, docs/erasure-coding.md): the same 48 bytes, then the 16-byte placement key, then the labels.
 * A version 1 column is placed by its id.
 *
 * Version 3 keeps every column's checksum as the store computed it (ShardInfo.columnChecksums):
 * byte 2 holds flags (1: a placement key follows the 48 bytes, 2: the checksums follow it), byte 3
 * the number of checksums; then the key, then the checksums (32 bytes each), then the labels.
 *
 * The record's own size and checksum are the column's. Index records of columns are keyed by the
 * blob id followed by the column index (17 bytes), in a keyspace apart from whole blobs.
 */
import { join } from 'node:path';
import type { ShardInfo } from '../blob/shard.js';
import { invalidArgument } from '../errors/errors.js';

export const SHARD_INFO_BYTES = 48;
export const SHARD_KEY_BYTES = 17;
const VERSION = 1;
const VERSION_PLACED = 2;
const VERSION_FLAGS = 3;
const FLAG_PLACED = 1;
const FLAG_CHECKSUMS = 2;
const PLACEMENT_BYTES = 16;
const CHECKSUM_BYTES = 32;

/** The labels area of a column's record: shard info, then the blob's labels. */
export function encodeShardLabels(info: ShardInfo, blobLabels: Buffer): Buffer {
  const placed = info.placement !== undefined;
  const checksums = info.columnChecksums;
  const head = SHARD_INFO_BYTES + (placed ? PLACEMENT_BYTES : 0) + (checksums?.length ?? 0);
  const out = Buffer.alloc(head + blobLabels.length);
  if (checksums !== undefined) {
    if (checksums.length === 0 || checksums.length % CHECKSUM_BYTES !== 0 || checksums.length / CHECKSUM_BYTES > 255) throw invalidArgument('malformed column checksums');
    out[0] = VERSION_FLAGS;
    out[2] = (placed ? FLAG_PLACED : 0) | FLAG_CHECKSUMS;
    out[3] = checksums.length / CHECKSUM_BYTES;
  } else {
    out[0] = placed ? VERSION_PLACED : VERSION;
  }
  out[1] = info.index;
  out.writeUInt32LE(info.shardBytes, 4);
  out.writeBigUInt64LE(BigInt(info.blobBytes), 8);
  info.blobChecksum.copy(out, 16, 0, 32);
  if (placed) info.placement!.copy(out, SHARD_INFO_BYTES, 0, PLACEMENT_BYTES);
  checksums?.copy(out, SHARD_INFO_BYTES + (placed ? PLACEMENT_BYTES : 0));
  blobLabels.copy(out, head);
  return out;
}

/** The lengths of the parts after the fixed 48 bytes (the placement key, the checksums); undefined for an unknown version. */
function partsOf(b: Uint8Array): { placement: number; checksums: number } | undefined {
  switch (b[0]) {
    case VERSION: return { placement: 0, checksums: 0 };
    case VERSION_PLACED: return { placement: PLACEMENT_BYTES, checksums: 0 };
    case VERSION_FLAGS: {
      const flags = b[2]!;
      if ((flags & ~(FLAG_PLACED | FLAG_CHECKSUMS)) !== 0) return undefined;
      return { placement: flags & FLAG_PLACED ? PLACEMENT_BYTES : 0, checksums: flags & FLAG_CHECKSUMS ? b[3]! * CHECKSUM_BYTES : 0 };
    }
    default: return undefined;
  }
}

/** The shard info of a column record's labels area (throws on a malformed one). */
export function decodeShardInfo(labels: Uint8Array): ShardInfo {
  const b = Buffer.from(labels.buffer, labels.byteOffset, labels.byteLength);
  const parts = b.length >= SHARD_INFO_BYTES ? partsOf(b) : undefined;
  if (!parts || b.length < SHARD_INFO_BYTES + parts.placement + parts.checksums) throw invalidArgument('malformed shard record');
  const info = { index: b[1]!, shardBytes: b.readUInt32LE(4), blobBytes: Number(b.readBigUInt64LE(8)), blobChecksum: Buffer.from(b.subarray(16, 48)) };
  const at = SHARD_INFO_BYTES + parts.placement;
  return {
    ...info,
    ...(parts.placement > 0 ? { placement: Buffer.from(b.subarray(SHARD_INFO_BYTES, at)) } : {}),
    ...(parts.checksums > 0 ? { columnChecksums: Buffer.from(b.subarray(at, at + parts.checksums)) } : {}),
  };
}

/** The blob's own labels after the shard info (a view). */
export function blobLabelsOf(labels: Buffer): Buffer {
  const parts = partsOf(labels) ?? { placement: 0, checksums: 0 };
  return labels.subarray(SHARD_INFO_BYTES + parts.placement + parts.checksums);
}

/** The column index written in a labels area, without decoding the rest (apply's hot path). */
export function shardIndexOf(labels: Uint8Array): number {
  return labels[1]!;
}

/** Index key of a column: the blob id, then the column index. */
export function shardKey(id: Uint8Array, index: number): Buffer {
  const key = Buffer.allocUnsafe(SHARD_KEY_BYTES);
  key.set(id.subarray(0, 16), 0);
  key[16] = index;
  return key;
}

/** A column in a file of its own: shards/xx/<id>.<index> (never the path of a whole blob). */
export function shardFilePath(dataDir: string, idHex: string, index: number): string {
  return join(dataDir, 'shards', idHex.slice(0, 2), `${idHex}.${index}`);
}
