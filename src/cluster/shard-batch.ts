/**
 * A batch of small whole columns as one request body on the data plane (POST /internal/v1/shards,
 * docs/adr/0031-small-columns-on-the-data-plane.md): per column a fixed head, its blob's labels,
 * its placement key, the blob's column checksums, then the column's bytes. The sender writes the
 * heads and the columns' own buffers in one writev, nothing encoded or copied per column; the
 * receiver reads the body into one buffer and hands each column on as the StoreShardBatch message
 * it stands for, its bytes a view of the body.
 *
 *   head (112 bytes): id 16 · index u8 · shard size u32 BE · column size u32 BE · blob size u64 BE ·
 *                     blob checksum 32 · created_at ns u64 BE · policy u8 · labels length u32 BE ·
 *                     placement length u8 (0 or 16) · column checksum 32 · column checksums u8
 *                     (0 or the blob's k + m)
 *   then:             labels (the engine's encoding, UTF-8 JSON or empty) · placement · the column
 *                     checksums, 32 bytes each · the column's bytes
 *
 * What the receiver relies on (the header fits the blob's layout, the checksum names the id, the
 * bytes hash to the column's checksum, which is its entry of the blob's) it checks as for any
 * column (shard-transfer.ts storeColumn).
 */
import { invalidArgument } from '../errors/errors.js';
import type { ColumnHeader } from './column-writer.js';
import { batchLabelsOf, type ShardHeaderMessage, type StoreColumnMessage } from './wire-meta.js';

export const SHARD_HEAD_BYTES = 112;
const CHECKSUM_BYTES = 32;
const PLACEMENT_BYTES = 16;

/** A column of a batch: where it belongs, its bytes and checksums (written as they are, not copied). */
export interface BatchColumn {
  readonly header: ColumnHeader;
  readonly data: Buffer;
  readonly columnChecksum: Buffer;
  /** Every column's checksum of the blob (k + m of them), which the column keeps. */
  readonly columnChecksums?: Buffer;
}

/** The body of a batch as the buffers to write in order, and its length. */
export interface ShardBatchBody {
  readonly parts: readonly Buffer[];
  readonly bytes: number;
}

function tailBytes(c: BatchColumn): number {
  return c.header.blobLabels.length + (c.header.placement ? PLACEMENT_BYTES : 0) + (c.columnChecksums?.length ?? 0);
}

export function shardBatchBody(columns: readonly BatchColumn[]): ShardBatchBody {
  let headBytes = 0;
  for (const c of columns) headBytes += SHARD_HEAD_BYTES + tailBytes(c);
  // Every head in one buffer, each written as a view of it: one allocation per batch.
  const heads = Buffer.allocUnsafe(headBytes);
  const parts: Buffer[] = new Array(2 * columns.length);
  let bytes = headBytes;
  let at = 0;
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const h = c.header;
    const head = heads.subarray(at, (at += SHARD_HEAD_BYTES + tailBytes(c)));
    h.id.copy(head, 0, 0, 16);
    head.writeUInt8(h.index, 16);
    head.writeUInt32BE(h.shardBytes, 17);
    head.writeUInt32BE(c.data.length, 21);
    head.writeBigUInt64BE(BigInt(h.blobBytes), 25);
    h.blobChecksum.copy(head, 33, 0, CHECKSUM_BYTES);
    head.writeBigUInt64BE(h.createdAtNs, 65);
    head.writeUInt8(h.policy, 73);
    head.writeUInt32BE(h.blobLabels.length, 74);
    head.writeUInt8(h.placement ? PLACEMENT_BYTES : 0, 78);
    c.columnChecksum.copy(head, 79, 0, CHECKSUM_BYTES);
    head.writeUInt8((c.columnChecksums?.length ?? 0) / CHECKSUM_BYTES, 111);
    let tail = SHARD_HEAD_BYTES;
    tail += h.blobLabels.copy(head, tail);
    if (h.placement) tail += h.placement.copy(head, tail, 0, PLACEMENT_BYTES);
    c.columnChecksums?.copy(head, tail);
    parts[2 * i] = head;
    parts[2 * i + 1] = c.data;
    bytes += c.data.length;
  }
  return { parts, bytes };
}

/** Reads a batch's body; a body that ends inside a column, or says a length it does not hold, is refused whole. */
export function readShardBatch(body: Buffer): StoreColumnMessage[] {
  const out: StoreColumnMessage[] = [];
  for (let at = 0; at < body.length;) {
    if (body.length - at < SHARD_HEAD_BYTES) throw invalidArgument(`column batch: ${body.length - at} bytes left, a column's head is ${SHARD_HEAD_BYTES}`);
    const labelsBytes = body.readUInt32BE(at + 74);
    const placementBytes = body.readUInt8(at + 78);
    if (placementBytes !== 0 && placementBytes !== PLACEMENT_BYTES) throw invalidArgument(`column batch: a placement key of ${placementBytes} bytes`);
    const checksumsBytes = body.readUInt8(at + 111) * CHECKSUM_BYTES;
    const size = body.readUInt32BE(at + 21);
    const dataAt = at + SHARD_HEAD_BYTES + labelsBytes + placementBytes + checksumsBytes;
    const end = dataAt + size;
    if (end > body.length) throw invalidArgument(`column batch: a column of ${size} bytes runs past the body's end`);
    const blobBytes = body.readBigUInt64BE(at + 25);
    if (blobBytes > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidArgument('column batch: a blob size out of range');
    let tail = at + SHARD_HEAD_BYTES;
    const labels = body.subarray(tail, (tail += labelsBytes));
    const placement = body.subarray(tail, (tail += placementBytes));
    const header: ShardHeaderMessage = {
      id: { id: body.subarray(at, at + 16) },
      index: body.readUInt8(at + 16),
      shard_size: body.readUInt32BE(at + 17),
      column_size: size,
      meta: {
        size: Number(blobBytes), checksum: body.subarray(at + 33, at + 65), created_at: body.readBigUInt64BE(at + 65).toString(),
        modified_at: '', policy: body.readUInt8(at + 73), labels: batchLabelsOf(labels, 'column batch'),
      },
      ...(placementBytes > 0 ? { placement } : {}),
    };
    out.push({
      header,
      column_checksum: body.subarray(at + 79, at + 111),
      ...(checksumsBytes > 0 ? { column_checksums: body.subarray(tail, tail + checksumsBytes) } : {}),
      data: body.subarray(dataAt, end),
    });
    at = end;
  }
  return out;
}
