/**
 * Segment record layout (little endian, 8-byte aligned). Records are self-describing, so the log
 * can be replayed without the index.
 *
 *   0  u32 magic "BSR1"          4  u8 type        5  u8 policy     6  u16 labelsLength
 *   8  u32 dataLength            12 u32 relocatedFromSegment (0: not a relocation)
 *  16  u64 relocatedFromOffset   24 u64 size       32 u64 createdAtNs
 *  40  16  id                    56 32  checksum (BLAKE3-256 of the content)
 *  88  u64 lsn (log sequence number: consecutive, so stale bytes past a cut tail never parse)
 *  96  u32 crc32 of bytes 0..96 and the labels      100 u32 flags
 * 104  labels (UTF-8 JSON)  ·  data (inline blobs only)  ·  zero padding to 8 bytes
 *
 * Types: PUT_INLINE carries the bytes; PUT_FILE names a blob stored in its own file
 * (blobs/xx/<id>); DELETE is a tombstone. A relocation (compaction) is a PUT_INLINE (or
 * SHARD_INLINE) that applies only while the index still points at its source.
 *
 * The SHARD_* types do the same for one erasure-coded shard column of a blob (docs/erasure-coding.md):
 * `id` is the blob's id, `size` and `checksum` are the column's own, and the labels area starts
 * with the shard info (shard-info.ts: the column's index, the blob's size and checksum, the shard
 * size) followed by the blob's labels, so the header CRC covers it. Their index records live in a
 * keyspace of their own (id + column index).
 *
 * PAD ends a group-commit batch on a LOG_BLOCK_BYTES boundary, so the log is written in whole
 * blocks (past the page cache, O_DIRECT, log.ts) and no write ever touches a block that holds an
 * earlier batch's acknowledged records. It has its sequence number like any record (the chain
 * stays consecutive), no labels, and zeros for data; scans step over it.
 *
 * Flags (written as 0 before the cluster, so old records read as "no flags"): REPLICATE on a put
 * that this node took from a client in a cluster (its index commit queues the copies for the
 * owners, and replay queues them again); HANDOFF on a delete that drops a copy the owners hold
 * (not a user's delete: repair may bring the blob back here later). The flags sit outside the
 * CRC: a flipped bit costs at most a needless or a missing queue entry, which anti-entropy covers.
 */
import { crc32Range, writeCrc32Ranges } from '../hash/crc32.js';
import { writeU64, writeU64Big } from '../util/u64.js';

export const RECORD_MAGIC = 0x31525342; // "BSR1"
export const HEADER_BYTES = 104;
export const RECORD_ALIGN = 8;

export const RecordType = { PUT_INLINE: 1, PUT_FILE: 2, DELETE: 3, SHARD_INLINE: 4, SHARD_FILE: 5, SHARD_DELETE: 6, PAD: 7 } as const;
export const RecordFlag = { REPLICATE: 1, HANDOFF: 2 } as const;
export type RecordTypeValue = (typeof RecordType)[keyof typeof RecordType];

/** A shard column's record (SHARD_INLINE, SHARD_FILE, SHARD_DELETE). */
export const isShardRecord = (type: number): boolean => type >= RecordType.SHARD_INLINE && type <= RecordType.SHARD_DELETE;
/** The record carries its bytes (PUT_INLINE, SHARD_INLINE). */
export const isInlineRecord = (type: number): boolean => type === RecordType.PUT_INLINE || type === RecordType.SHARD_INLINE;
/** The bytes are in a file of their own (PUT_FILE, SHARD_FILE). */
export const isFileRecord = (type: number): boolean => type === RecordType.PUT_FILE || type === RecordType.SHARD_FILE;
/** A tombstone (DELETE, SHARD_DELETE). */
export const isDeleteRecord = (type: number): boolean => type === RecordType.DELETE || type === RecordType.SHARD_DELETE;

export interface RecordHeader {
  type: RecordTypeValue;
  policy: number;
  labelsLength: number;
  dataLength: number;
  relocatedFromSegment: number;
  relocatedFromOffset: number;
  size: number;
  createdAtNs: bigint;
  id: Buffer;
  checksum: Buffer;
  lsn: number;
  /** RecordFlag bits. */
  flags: number;
}

/** The log's unit of writing: every batch starts and ends on a multiple of it (log.ts). */
export const LOG_BLOCK_BYTES = 4096;
/** The longest PAD record: a gap shorter than a header takes the next block too. */
export const MAX_PAD_BYTES = LOG_BLOCK_BYTES + HEADER_BYTES - RECORD_ALIGN;

/** Bytes of the PAD record that takes a batch ending at `end` (8-aligned) to a block boundary; 0 if it is on one. */
export function padLength(end: number): number {
  const gap = (LOG_BLOCK_BYTES - (end % LOG_BLOCK_BYTES)) % LOG_BLOCK_BYTES;
  return gap === 0 || gap >= HEADER_BYTES ? gap : gap + LOG_BLOCK_BYTES;
}

const ZERO_ID = Buffer.alloc(16);
const ZERO_CHECKSUM = Buffer.alloc(32);
const padHeader: RecordHeader = {
  type: RecordType.PAD, policy: 0, labelsLength: 0, dataLength: 0, relocatedFromSegment: 0, relocatedFromOffset: 0,
  size: 0, createdAtNs: 0n, id: ZERO_ID, checksum: ZERO_CHECKSUM, lsn: 0, flags: 0,
};

/** Writes a PAD record of `length` bytes (padLength) at `at`: its header, then zeros. */
export function writePad(buf: Buffer, at: number, length: number, lsn: number): void {
  padHeader.dataLength = length - HEADER_BYTES;
  padHeader.lsn = lsn;
  sealHeader(buf, at, padHeader);
  buf.fill(0, at + HEADER_BYTES, at + length);
}

export function alignRecord(n: number): number {
  return (n + RECORD_ALIGN - 1) & ~(RECORD_ALIGN - 1);
}

export function recordLength(labelsLength: number, dataLength: number): number {
  return alignRecord(HEADER_BYTES + labelsLength + dataLength);
}

function headerCrc(buf: Buffer, at: number, labelsLength: number): number {
  const head = crc32Range(buf, at, at + 96);
  return labelsLength === 0 ? head : crc32Range(buf, at + HEADER_BYTES, at + HEADER_BYTES + labelsLength, head);
}

/** Writes a header (and copies the labels after it) at `at`; the data must be placed by the caller. */
export function writeHeader(buf: Buffer, at: number, h: RecordHeader, labels: Buffer): void {
  labels.copy(buf, at + HEADER_BYTES);
  sealHeader(buf, at, h);
}

/** Writes a header at `at` whose labels (h.labelsLength bytes) already follow it: the CRC covers them. */
export function sealHeader(buf: Buffer, at: number, h: RecordHeader): void {
  buf.writeUInt32LE(RECORD_MAGIC, at);
  buf[at + 4] = h.type;
  buf[at + 5] = h.policy;
  buf.writeUInt16LE(h.labelsLength, at + 6);
  buf.writeUInt32LE(h.dataLength, at + 8);
  buf.writeUInt32LE(h.relocatedFromSegment, at + 12);
  writeU64(buf, h.relocatedFromOffset, at + 16);
  writeU64(buf, h.size, at + 24);
  writeU64Big(buf, h.createdAtNs, at + 32);
  h.id.copy(buf, at + 40, 0, 16);
  if (isDeleteRecord(h.type)) buf.fill(0, at + 56, at + 88);
  else h.checksum.copy(buf, at + 56, 0, 32);
  writeU64(buf, h.lsn, at + 88);
  writeCrc32Ranges(buf, at, at + 96, at + HEADER_BYTES, at + HEADER_BYTES + h.labelsLength, buf, at + 96);
  buf.writeUInt32LE(h.flags, at + 100);
}

/** Parses and checks a header at `at`; undefined when the bytes are not a whole, valid header. */
export function readHeader(buf: Buffer, at: number, available: number): RecordHeader | undefined {
  if (available < HEADER_BYTES || buf.readUInt32LE(at) !== RECORD_MAGIC) return undefined;
  const type = buf[at + 4] as RecordTypeValue;
  if (!(type >= RecordType.PUT_INLINE && type <= RecordType.PAD)) return undefined;
  const labelsLength = buf.readUInt16LE(at + 6);
  const dataLength = buf.readUInt32LE(at + 8);
  if (available < HEADER_BYTES + labelsLength) return undefined;
  if (buf.readUInt32LE(at + 96) !== headerCrc(buf, at, labelsLength)) return undefined;
  return {
    type,
    policy: buf[at + 5]!,
    labelsLength,
    dataLength,
    relocatedFromSegment: buf.readUInt32LE(at + 12),
    relocatedFromOffset: Number(buf.readBigUInt64LE(at + 16)),
    size: Number(buf.readBigUInt64LE(at + 24)),
    createdAtNs: buf.readBigUInt64LE(at + 32),
    id: Buffer.from(buf.subarray(at + 40, at + 56)),
    checksum: Buffer.from(buf.subarray(at + 56, at + 88)),
    lsn: Number(buf.readBigUInt64LE(at + 88)),
    flags: buf.readUInt32LE(at + 100),
  };
}
