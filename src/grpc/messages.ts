/**
 * TypeScript shapes of the blob.proto messages as the loader options in proto.ts decode and
 * encode them: snake_case, bytes as Buffer, enums as numbers, absent fields undefined. Outgoing
 * int64 fields take a number (sizes) or a decimal string (nanosecond times exceed 2^53).
 */

export interface BlobIdMessage {
  id?: Buffer;
}

export interface BlobMetaMessage {
  size: number;
  created_at: string;
  modified_at: string;
  checksum: Buffer;
  labels: Record<string, string>;
  policy: number;
}

export interface PutRequest {
  data?: Buffer;
  policy?: number;
  labels?: Record<string, string>;
}

export interface PutResponse {
  id: BlobIdMessage;
  size: number;
}

/** GetRequest, StatRequest, DeleteRequest and GetStreamRequest: one BlobID. */
export interface IdRequest {
  id?: BlobIdMessage;
}

export interface GetResponse {
  data: Buffer;
  meta: BlobMetaMessage;
}

export interface StatResponse {
  exists: boolean;
  meta?: BlobMetaMessage;
}

export interface DeleteResponse {
  deleted: boolean;
}

export interface ListRequest {
  cursor?: Buffer;
  limit?: number;
  prefix?: string;
}

export interface ListResponse {
  ids: BlobIdMessage[];
  next_cursor?: Buffer;
  has_more: boolean;
}

export interface PutChunk {
  id?: BlobIdMessage;
  data?: Buffer;
  final?: boolean;
  policy?: number;
  labels?: Record<string, string>;
}

/**
 * GetChunk {bytes data = 1; bool final = 2}, encoded by hand: the chunk buffer is reused once the
 * reader moves on, so it is copied here, once, into the message grpc-js frames.
 */
export function encodeGetChunk(data: Buffer, final: boolean): Buffer {
  const length = data.length;
  let lengthBytes = 1;
  for (let v = length; v >= 0x80; v = Math.floor(v / 128)) lengthBytes++;
  const out = Buffer.allocUnsafe(1 + lengthBytes + length + (final ? 2 : 0));
  let at = 0;
  out[at++] = 0x0a; // field 1, wire type 2
  let v = length;
  while (v >= 0x80) {
    out[at++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  out[at++] = v;
  data.copy(out, at);
  at += length;
  if (final) {
    out[at++] = 0x10; // field 2, wire type 0
    out[at++] = 1;
  }
  return out;
}
