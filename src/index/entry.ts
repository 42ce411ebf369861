/**
 * Index record of one blob (value under its 16-byte id in the `blobs` database), little endian:
 *
 *   0 u8 location (1 segment, 2 own file)   1 u8 policy   2 u16 labelsLength   4 u32 segment
 *   8 u64 record offset in the segment      16 u64 size   24 u64 createdAtNs    32 32 checksum
 *  64 labels (UTF-8 JSON)             then, for a segment record of data-dir version 2 or later:
 *  64 + labelsLength  u32 CRC-32C of the blob's bytes (dataCrc: what a read from disk checks;
 *     an entry without it, shorter by these 4 bytes, is checked with BLAKE3 against the checksum)
 *
 * Erasure-coded blobs will add shard records in a database of their own (`shards`).
 */
import { writeU32, writeU64, writeU64Big } from '../util/u64.js';

export const Location = { SEGMENT: 1, FILE: 2 } as const;
export type LocationValue = (typeof Location)[keyof typeof Location];

const FIXED_BYTES = 64;

export interface IndexEntry {
  location: LocationValue;
  policy: number;
  segment: number;
  offset: number;
  size: number;
  createdAtNs: bigint;
  checksum: Buffer;
  labels: Buffer;
  /** CRC-32C of the bytes of a segment record (src/hash/crc32c.ts); undefined when the entry has none. */
  dataCrc?: number | undefined;
}

/**
 * A copy a reader may keep: the overlay's entries of small stores are their pooled log records
 * (engine/small-record.ts), reused once committed, and a reader may hold an entry across an await.
 * The labels are shared (nobody writes into a labels buffer).
 */
export function copyEntry(e: IndexEntry): IndexEntry {
  return {
    location: e.location, policy: e.policy, segment: e.segment, offset: e.offset, size: e.size, createdAtNs: e.createdAtNs,
    checksum: Buffer.from(e.checksum), labels: e.labels, dataCrc: e.dataCrc,
  };
}

export function encodeEntry(e: IndexEntry): Buffer {
  const buf = Buffer.allocUnsafe(entryBytes(e));
  encodeEntryInto(buf, 0, e);
  return buf;
}

/** The encoded length of `e`. */
export const entryBytes = (e: IndexEntry): number => FIXED_BYTES + e.labels.length + (e.dataCrc === undefined ? 0 : 4);

/** The dataCrc of an encoded entry, or -1 when it has none (no decoding: the GET path reads it in place). */
export function entryDataCrc(raw: Buffer): number {
  const at = FIXED_BYTES + raw.readUInt16LE(2);
  return raw.length >= at + 4 ? raw.readUInt32LE(at) : -1;
}

/** Encodes `e` at `at` of `buf` (entryBytes(e) bytes). */
export function encodeEntryInto(buf: Buffer, at: number, e: IndexEntry): void {
  buf[at] = e.location;
  buf[at + 1] = e.policy;
  buf.writeUInt16LE(e.labels.length, at + 2);
  buf.writeUInt32LE(e.segment, at + 4);
  writeU64(buf, e.offset, at + 8);
  writeU64(buf, e.size, at + 16);
  writeU64Big(buf, e.createdAtNs, at + 24);
  e.checksum.copy(buf, at + 32, 0, 32);
  if (e.labels.length > 0) e.labels.copy(buf, at + FIXED_BYTES);
  if (e.dataCrc !== undefined) writeU32(buf, e.dataCrc, at + FIXED_BYTES + e.labels.length);
}

/** Decodes into fresh objects: the source may be a buffer lmdb-js reuses for the next read. */
export function decodeEntry(buf: Uint8Array): IndexEntry {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const labelsLength = b.readUInt16LE(2);
  return {
    location: b[0] as LocationValue,
    policy: b[1]!,
    segment: b.readUInt32LE(4),
    offset: Number(b.readBigUInt64LE(8)),
    size: Number(b.readBigUInt64LE(16)),
    createdAtNs: b.readBigUInt64LE(24),
    checksum: Buffer.from(b.subarray(32, 64)),
    labels: Buffer.from(b.subarray(FIXED_BYTES, FIXED_BYTES + labelsLength)),
    dataCrc: b.length >= FIXED_BYTES + labelsLength + 4 ? b.readUInt32LE(FIXED_BYTES + labelsLength) : undefined,
  };
}
