/**
 * A blob's metadata as it travels between nodes, both ways, in one place: the gRPC BlobMeta
 * message (StatBlob's answer, a replica's or a shard column header's meta) and the headers of the
 * /internal/v1 PUTs (a replica, http-replica.ts; a column, http-column.ts).
 *
 *   message: size · created_at (decimal ns) · checksum (32 bytes) · policy · labels (object)
 *   headers: X-Blobstore-Size · -Created-At (ns) · -Checksum (hex) · -Policy ·
 *            -Labels-Encoded (base64 of the engine's encoded labels: no JSON inside a header)
 *
 * Read here into the engine's terms and nothing more; what a receiver relies on (the checksum
 * names the id, the size is sane) it checks itself (transfer.ts incomingMeta).
 */
import type { BlobMeta } from '../blob/meta.js';
import type { ShardHeaderInfo } from '../blob/shard.js';
import { decodeLabels, encodeLabels, type LabelLimits } from '../blob/labels.js';
import { parsePolicy, type Policy } from '../blob/policy.js';
import type { BlobMetaMessage } from '../proto/messages.js';
import { Location } from '../index/entry.js';
import { invalidArgument } from '../errors/errors.js';

/** A shard column's header as it travels (a column's gRPC messages, a batch POST's heads: shard-batch.ts). */
export interface ShardHeaderMessage {
  id: { id: Buffer };
  index: number;
  shard_size: number;
  meta: BlobMetaMessage;
  column_size: number;
  /** Empty: the columns are placed by the id. */
  placement?: Buffer;
}

/** A whole column in one message: a StoreShardBatch's, or one of a batch POST's. */
export interface StoreColumnMessage {
  header?: Partial<ShardHeaderMessage>;
  data?: Buffer;
  column_checksum?: Buffer;
  column_checksums?: Buffer;
}

/** A batch body's labels (the engine's encoding) as a message carries them; `batch` names the batch in the error. */
export function batchLabelsOf(bytes: Buffer, batch: string): Record<string, string> {
  try {
    return decodeLabels(bytes);
  } catch {
    throw invalidArgument(`${batch}: labels that are not JSON`);
  }
}

/** The metadata that travels with a blob's bytes (its id travels apart). */
export interface WireMeta {
  size: number;
  /** BLAKE3-256 of the content. */
  checksum: Buffer;
  createdAtNs: bigint;
  policy: number;
  /** The engine's encoding (UTF-8 JSON, empty for none). */
  labels: Buffer;
}

/** A peer's BlobMeta message in the engine's terms; labels checked against `limits`. */
export function metaOfMessage(m: Partial<BlobMetaMessage>, limits: LabelLimits): WireMeta & { policy: Policy } {
  const created = String(m.created_at ?? '0');
  return {
    size: Number(m.size ?? 0),
    // A copy: a decoded message's bytes may be a view of the whole message, kept alive by a cache.
    checksum: Buffer.from(m.checksum ?? Buffer.alloc(32)),
    createdAtNs: /^\d+$/.test(created) ? BigInt(created) : 0n,
    policy: parsePolicy(m.policy ?? 0),
    labels: encodeLabels(m.labels ?? {}, limits),
  };
}

/** The message a peer reads with metaOfMessage (`modified_at` is `created_at`: blobs never change). */
export function messageOfMeta(m: WireMeta): BlobMetaMessage {
  const created = m.createdAtNs.toString();
  return { size: m.size, created_at: created, modified_at: created, checksum: m.checksum, labels: decodeLabels(m.labels), policy: m.policy };
}

/** The metadata of the blob a shard column belongs to, as its header names it. */
export function columnBlobMeta(h: ShardHeaderInfo): WireMeta {
  return { size: h.blobBytes, checksum: h.blobChecksum, createdAtNs: h.createdAtNs, policy: h.policy, labels: h.blobLabels };
}

/**
 * A blob a peer holds, as its StatBlob answer describes it (no local location). Its labels were
 * accepted where it was stored, so this node's own count limit does not refuse reading it.
 */
export function peerBlobMeta(id: Buffer, m: Partial<BlobMetaMessage>, limits: LabelLimits): BlobMeta {
  return { id, location: Location.SEGMENT, segment: 0, offset: 0, ...metaOfMessage(m, { ...limits, maxLabels: Number.MAX_SAFE_INTEGER }) };
}

/** The metadata as the header lines of an /internal/v1 PUT, each ending in CRLF. */
export function metaHeaderLines(m: WireMeta): string {
  return `X-Blobstore-Size: ${m.size}\r\nX-Blobstore-Checksum: ${m.checksum.toString('hex')}\r\nX-Blobstore-Created-At: ${m.createdAtNs}\r\n`
    + `X-Blobstore-Policy: ${m.policy}\r\nX-Blobstore-Labels-Encoded: ${m.labels.toString('base64')}\r\n`;
}

/**
 * Those headers as the message they stand for, for metaOfMessage or a receiver's checks:
 * `header` answers a request's header by its lower-case name ('' when absent).
 */
export function messageOfHeaders(header: (name: string) => string): Partial<BlobMetaMessage> {
  return {
    size: Number(header('x-blobstore-size')), created_at: header('x-blobstore-created-at'),
    checksum: Buffer.from(header('x-blobstore-checksum'), 'hex'), policy: Number(header('x-blobstore-policy')),
    labels: decodeLabels(Buffer.from(header('x-blobstore-labels-encoded'), 'base64')),
  };
}

/**
 * metaHeaderLines' text read back as the message it stands for (a streamed column's seal, which
 * travels in the body): every line `Name: value` and CRLF-ended, each name once.
 */
export function messageOfHeaderLines(text: string): Partial<BlobMetaMessage> {
  if (!text.endsWith('\r\n')) throw invalidArgument('metadata lines: the last line is not ended');
  const fields = new Map<string, string>();
  for (const line of text.slice(0, -2).split('\r\n')) {
    const match = /^([A-Za-z0-9-]+): ?(.*)$/.exec(line);
    const name = match?.[1]!.toLowerCase();
    if (!match || fields.has(name!)) throw invalidArgument('metadata lines: a line is not `Name: value`, or names a field twice');
    fields.set(name!, match[2]!);
  }
  return messageOfHeaders((name) => fields.get(name) ?? '');
}

/** A placement key as it arrived: 16 bytes, or none (placed by the id). */
export function placementOf(bytes: Buffer | undefined): Buffer | undefined {
  if (bytes === undefined || bytes.length === 0) return undefined;
  if (bytes.length !== 16) throw invalidArgument(`placement key of ${bytes.length} bytes (16 expected)`);
  return Buffer.from(bytes);
}

/** StatBlob's answer as it arrives (InternalService). */
export interface StatBlobAnswer {
  exists?: boolean;
  meta?: Partial<BlobMetaMessage>;
  shard_indices?: number[];
  shard_size?: number;
  placement?: Buffer;
  manifest?: boolean;
  column_checksums?: Buffer;
}

/**
 * What a peer's StatBlob answer says, read once for every asker: the blob's metadata if it holds
 * the blob, a column of it or its manifest; `ec` for an EC blob (its shard size, placement key and
 * the column checksums its columns keep); the columns it holds.
 */
export function statOfAnswer(id: Buffer, res: StatBlobAnswer, limits: LabelLimits): { meta?: BlobMeta; ec?: { shardBytes: number; placement?: Buffer; columnChecksums?: Buffer }; indices: number[] } {
  const indices = res.shard_indices ?? [];
  if (res.exists === false || !res.meta) return { indices };
  const meta = peerBlobMeta(id, res.meta, limits);
  if (indices.length === 0 && res.manifest !== true) return { meta, indices };
  const placement = placementOf(res.placement);
  const shardBytes = Number(res.shard_size ?? 0);
  const checksums = res.column_checksums;
  const columnChecksums = checksums && checksums.length > 0 && checksums.length % 32 === 0 ? { columnChecksums: Buffer.from(checksums) } : {};
  return { meta, ec: { shardBytes, ...(placement ? { placement } : {}), ...columnChecksums }, indices };
}

/** What a node holds of a blob, as GET /internal/v1/stat/{id} answers it (internal-api.ts held()). */
export interface HeldMeta {
  readonly kind: 'blob' | 'columns' | 'manifest';
  readonly meta: WireMeta;
  readonly indices?: readonly number[];
  readonly shardBytes?: number;
  readonly placement?: Buffer;
  readonly columnChecksums?: Buffer;
}

/**
 * StatBlob's answer as the data plane's JSON: the metadata as the /internal/v1 headers carry it
 * (checksum in hex, the engine's encoded labels in base64), the columns held, the shard size and
 * the placement key in hex; `{"kind":"none"}` for nothing held.
 */
export function statJson(held: HeldMeta | undefined): string {
  if (!held) return '{"kind":"none"}';
  const m = held.meta;
  return JSON.stringify({
    kind: held.kind, size: m.size, checksum: m.checksum.toString('hex'), created_at: m.createdAtNs.toString(), policy: m.policy,
    labels: m.labels.toString('base64'), indices: held.indices ?? [], shard_size: held.shardBytes ?? 0, placement: held.placement?.toString('hex') ?? '',
    column_checksums: held.columnChecksums?.toString('hex') ?? '',
  });
}

/** That JSON read back as the StatBlob answer it stands for (statOfAnswer reads either). */
export function statAnswerOfJson(text: string): StatBlobAnswer {
  const j = JSON.parse(text) as { kind?: string; size?: number; checksum?: string; created_at?: string; policy?: number; labels?: string; indices?: number[]; shard_size?: number; placement?: string; column_checksums?: string };
  if (j.kind !== 'blob' && j.kind !== 'columns' && j.kind !== 'manifest') return { exists: false };
  const created = String(j.created_at ?? '0');
  return {
    exists: true,
    meta: {
      size: Number(j.size ?? 0), created_at: created, modified_at: created, checksum: Buffer.from(String(j.checksum ?? ''), 'hex'),
      policy: Number(j.policy ?? 0), labels: decodeLabels(Buffer.from(String(j.labels ?? ''), 'base64')),
    },
    shard_indices: Array.isArray(j.indices) ? j.indices.map(Number) : [],
    shard_size: Number(j.shard_size ?? 0),
    placement: j.placement ? Buffer.from(j.placement, 'hex') : undefined,
    manifest: j.kind === 'manifest',
    column_checksums: j.column_checksums ? Buffer.from(j.column_checksums, 'hex') : undefined,
  };
}
