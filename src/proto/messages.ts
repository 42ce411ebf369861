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
 * A response message that encodes itself when grpc-js frames it (proto.ts's serializer calls
 * encode()). grpc-js copies the encoded bytes into its frame at once, so encode() may return a
 * view of a scratch buffer that the next encode() overwrites.
 */
export abstract class DeferredMessage {
  abstract encode(): Buffer;
  /** The encoded size, without encoding (the access log's bytes, src/grpc/access.ts). */
  abstract get byteLength(): number;
}

let scratch = Buffer.allocUnsafeSlow(0);

/**
 * GetChunk {bytes data = 1; bool final = 2}, encoded by hand when grpc-js takes it: the chunk is a
 * view of the reader's buffer, valid until `taken` runs, so it is copied once, into the scratch
 * buffer, and grpc-js's frame copy is the only allocation per chunk.
 */
export class OutgoingChunk extends DeferredMessage {
  constructor(
    private readonly data: Buffer,
    private readonly final: boolean,
    private readonly taken: () => void,
  ) {
    super();
  }

  get byteLength(): number {
    return 1 + varintBytes(this.data.length) + this.data.length + (this.final ? 2 : 0);
  }

  encode(): Buffer {
    const length = this.data.length;
    const size = this.byteLength;
    if (scratch.length < size) scratch = Buffer.allocUnsafeSlow(Math.max(size, 1024 * 1024 + 64));
    let at = 0;
    scratch[at++] = 0x0a; // field 1 (data), wire type 2
    at = writeVarint(scratch, at, length);
    // fill() copies with one native memcpy; copy()/set() from a SharedArrayBuffer (the reader's
    // pooled chunks) run ~14x slower in V8 (275 vs 19 us per MiB on Node 20 here).
    if (length > 0) scratch.fill(this.data, at, at + length);
    at += length;
    if (this.final) {
      scratch[at++] = 0x10; // field 2 (final), wire type 0
      scratch[at++] = 1;
    }
    this.taken();
    return scratch.subarray(0, at);
  }
}

function varintBytes(value: number): number {
  let bytes = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 128)) bytes++;
  return bytes;
}

/** Writes `value` as a protobuf varint at `at`; returns the offset after it. */
export function writeVarint(buf: Buffer, at: number, value: number): number {
  for (let v = value; ; v = Math.floor(v / 128)) {
    if (v < 0x80) {
      buf[at++] = v;
      return at;
    }
    buf[at++] = (v & 0x7f) | 0x80;
  }
}
