/**
 * A batch of small replicas as one request body on the data plane (POST /internal/v1/replicas,
 * docs/adr/0021-one-peer-transport.md): per blob a fixed head, its labels, then its bytes. The
 * sender writes the heads and the blobs' own buffers in one writev, nothing encoded or copied per
 * blob; the receiver reads the body into one buffer and hands each blob on as a view of it. As a
 * gRPC ReplicateBatch, protobuf encoding and HTTP/2 framing cost the sending node ~16 us and
 * each receiver ~9 us per 4 KiB blob (docs/adr/0023-replica-batches-on-the-data-plane.md).
 *
 *   head (65 bytes): id 16 · checksum 32 · created_at ns u64 BE · policy u8 · labels length u32 BE · size u32 BE
 *   then:            labels (the engine's encoding, UTF-8 JSON or empty) · the blob's bytes
 *
 * What the receiver relies on (the checksum names the id, the labels are within its limits, the
 * bytes hash to the checksum) it checks as for any replica (transfer.ts).
 */
import { invalidArgument } from '../errors/errors.js';
import type { BlobMetaMessage } from '../proto/messages.js';
import { batchLabelsOf, type WireMeta } from './wire-meta.js';

export const REPLICA_HEAD_BYTES = 65;

/** A blob of a batch: its id and metadata, and its bytes (written as they are, not copied). */
export interface BatchReplica {
  readonly meta: WireMeta & { readonly id: Buffer };
  readonly data: Buffer;
}

/** The body of a batch as the buffers to write in order, and its length. */
export interface ReplicaBatchBody {
  readonly parts: readonly Buffer[];
  readonly bytes: number;
}

export function replicaBatchBody(blobs: readonly BatchReplica[]): ReplicaBatchBody {
  const parts: Buffer[] = new Array(2 * blobs.length);
  let headBytes = 0;
  for (const { meta } of blobs) headBytes += REPLICA_HEAD_BYTES + meta.labels.length;
  // Every head in one buffer, each written as a view of it: one allocation per batch.
  const heads = Buffer.allocUnsafe(headBytes);
  let bytes = headBytes;
  let at = 0;
  for (let i = 0; i < blobs.length; i++) {
    const { meta, data } = blobs[i]!;
    const head = heads.subarray(at, (at += REPLICA_HEAD_BYTES + meta.labels.length));
    meta.id.copy(head, 0);
    meta.checksum.copy(head, 16);
    head.writeBigUInt64BE(meta.createdAtNs, 48);
    head.writeUInt8(meta.policy, 56);
    head.writeUInt32BE(meta.labels.length, 57);
    head.writeUInt32BE(data.length, 61);
    meta.labels.copy(head, REPLICA_HEAD_BYTES);
    parts[2 * i] = head;
    parts[2 * i + 1] = data;
    bytes += data.length;
  }
  return { parts, bytes };
}

/** A blob of a received batch: its id, its metadata as the gRPC message would carry it, its bytes (a view of the body). */
export interface ReceivedReplica {
  readonly id: Buffer;
  readonly meta: Partial<BlobMetaMessage>;
  readonly data: Buffer;
}

/** Reads a batch's body; a body that ends inside a blob, or says a length it does not hold, is refused whole. */
export function readReplicaBatch(body: Buffer): ReceivedReplica[] {
  const out: ReceivedReplica[] = [];
  for (let at = 0; at < body.length;) {
    if (body.length - at < REPLICA_HEAD_BYTES) throw invalidArgument(`replica batch: ${body.length - at} bytes left, a blob's head is ${REPLICA_HEAD_BYTES}`);
    const labelsBytes = body.readUInt32BE(at + 57);
    const size = body.readUInt32BE(at + 61);
    const end = at + REPLICA_HEAD_BYTES + labelsBytes + size;
    if (end > body.length) throw invalidArgument(`replica batch: a blob of ${size} bytes runs past the body's end`);
    const labels = body.subarray(at + REPLICA_HEAD_BYTES, at + REPLICA_HEAD_BYTES + labelsBytes);
    out.push({
      id: body.subarray(at, at + 16),
      meta: {
        size, checksum: body.subarray(at + 16, at + 48), created_at: body.readBigUInt64BE(at + 48).toString(),
        policy: body.readUInt8(at + 56), labels: batchLabelsOf(labels, 'replica batch'),
      },
      data: body.subarray(end - size, end),
    });
    at = end;
  }
  return out;
}
