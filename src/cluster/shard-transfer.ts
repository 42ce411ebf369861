/**
 * Shard columns between nodes, both ends (docs/erasure-coding.md):
 *
 *   sender:   small whole columns ──▶ ShardBatcher ──▶ POST /internal/v1/shards (every column for
 *                                     a peer from one event-loop turn in one request: shard-batch.ts);
 *                                     larger ones stream to the peer's API listener (transport/http-column.ts)
 *   receiver: header checked against the layout ──▶ ColumnWriter ──▶ checksum (and the blob's
 *             column checksums, which the column keeps) ──▶ committed (durable)
 *             (a batch POST or a StoreShardBatch, a StoreShard stream, or the API listener's PUT)
 *
 * The header carries the whole blob's metadata; the receiver checks that the column's size fits
 * the blob's layout and that the bytes match the column's checksum before it commits.
 */
import { deleteHolds } from './deleted-here.js';
import type { NodeConfig } from '../config/settings.js';
import { invalidArgument } from '../errors/errors.js';
import { ecScheme, StripeLayout } from '../ec/layout.js';
import type { BlobMetaMessage } from '../proto/messages.js';
import type { LocalStore } from '../service/local-store.js';
import { type ColumnHeader, ColumnWriter } from './column-writer.js';
import type { PeerRef, PeerTransport } from './transport/peer-transport.js';
import { PeerPutError } from './transport/http-put.js';
import { type BatchColumn, shardBatchBody } from './shard-batch.js';
import { incomingMeta } from './transfer.js';
import { columnBlobMeta, messageOfHeaderLines, messageOfMeta, placementOf, type ShardHeaderMessage, type StoreColumnMessage } from './wire-meta.js';

/** The layout of the blob a column header describes. */
export function layoutOf(h: Pick<ColumnHeader, 'policy' | 'shardBytes' | 'blobBytes'>): StripeLayout {
  const scheme = ecScheme(h.policy);
  if (!scheme) throw invalidArgument(`policy ${h.policy} is not erasure coded`);
  return new StripeLayout(scheme.k, scheme.m, h.shardBytes, h.blobBytes);
}

export function headerMessage(h: ColumnHeader): ShardHeaderMessage {
  return {
    id: { id: h.id },
    index: h.index,
    shard_size: h.shardBytes,
    meta: messageOfMeta(columnBlobMeta(h)),
    column_size: layoutOf(h).columnBytes,
    ...(h.placement ? { placement: h.placement } : {}),
  };
}

/** A header as it arrived: checked against the blob's layout. */
export function columnHeaderOf(msg: (Partial<Omit<ShardHeaderMessage, 'meta'>> & { meta?: Partial<BlobMetaMessage> }) | undefined, config: NodeConfig): { header: ColumnHeader; columnBytes: number } {
  if (!msg) throw invalidArgument('shard column without a header');
  const m = incomingMeta(msg.id, msg.meta, config);
  const shardBytes = Number(msg.shard_size ?? 0);
  if (!Number.isSafeInteger(shardBytes) || shardBytes < 1) throw invalidArgument('shard column: invalid shard size');
  const placement = placementOf(msg.placement);
  const header: ColumnHeader = {
    id: m.id, index: Number(msg.index ?? 0), policy: m.policy, shardBytes, blobBytes: m.size, blobChecksum: m.checksum, blobLabels: m.labels, createdAtNs: m.createdAtNs,
    ...(placement ? { placement } : {}),
  };
  return checkedColumn(header, msg.column_size);
}

/** The header fits its blob's layout: the index is one of its columns, the column's size the layout's. */
function checkedColumn(header: ColumnHeader, columnSize: number | undefined): { header: ColumnHeader; columnBytes: number } {
  const layout = layoutOf(header);
  if (!(header.index >= 0 && header.index < layout.shards)) throw invalidArgument(`shard column: index ${header.index} out of 0..${layout.shards - 1}`);
  if (Number(columnSize ?? -1) !== layout.columnBytes) throw invalidArgument(`shard column: ${columnSize} bytes, the layout says ${layout.columnBytes}`);
  return { header, columnBytes: layout.columnBytes };
}

/**
 * The header of a column that streams in before its blob's id is known: placed by `placement`,
 * which stands in for the id until the seal at the end of its body names the blob (sealedHeader).
 */
export function streamedColumnHeader(placement: Buffer, index: number, policy: number, shardBytes: number, blobBytes: number, columnSize: number): { header: ColumnHeader; columnBytes: number } {
  if (!Number.isSafeInteger(shardBytes) || shardBytes < 1) throw invalidArgument('shard column: invalid shard size');
  if (!Number.isSafeInteger(blobBytes) || blobBytes < 0) throw invalidArgument('shard column: invalid blob size');
  return checkedColumn({
    id: placement, index, policy, shardBytes, blobBytes, blobChecksum: Buffer.alloc(32), blobLabels: Buffer.alloc(0), createdAtNs: 0n, placement,
  }, columnSize);
}

/**
 * The most bytes a seal can take: its fixed fields, and the labels the node accepts as JSON (a
 * value's byte may take 6 as an escape) in base64.
 */
export function sealMaxBytes(config: Pick<NodeConfig, 'maxLabels' | 'labelKeyMaxBytes' | 'labelValueMaxBytes'>): number {
  const labels = 2 + config.maxLabels * (config.labelKeyMaxBytes + 6 * config.labelValueMaxBytes + 6);
  return 512 + Math.ceil(labels / 3) * 4;
}

/**
 * A streamed column's header once its seal (the blob's metadata, as wire-meta.ts header lines)
 * names the blob: the id the checksum gives, the metadata checked as a replica's is; the size and
 * policy must be those the column streamed in with.
 */
export function sealedHeader(streamed: ColumnHeader, seal: string, config: NodeConfig): ColumnHeader {
  const msg = messageOfHeaderLines(seal);
  const m = incomingMeta({ id: msg.checksum?.subarray(0, 16) }, msg, config);
  if (m.size !== streamed.blobBytes || m.policy !== streamed.policy) {
    throw invalidArgument(`the seal of column ${streamed.index} of placement ${streamed.placement?.toString('hex')} describes another blob`);
  }
  return { ...streamed, id: m.id, blobChecksum: m.checksum, blobLabels: m.labels, createdAtNs: m.createdAtNs };
}

/**
 * How many column checksums a column's PUT says follow its own checksum (its
 * X-Blobstore-Column-Checksums header, transport/http-column.ts): none, or its blob's k + m.
 */
export function checksumCountOf(value: string, header: ColumnHeader): number {
  if (value === '') return 0;
  const shards = layoutOf(header).shards;
  if (value !== String(shards)) throw invalidArgument(`shard column: ${value} column checksums, the blob has ${shards} columns`);
  return shards;
}

/** The column checksums a message brings: none when empty (a sender that keeps none). */
function checksumsOf(bytes: Buffer | undefined): Buffer | undefined {
  return bytes === undefined || bytes.length === 0 ? undefined : Buffer.from(bytes);
}

/** Stores a whole column that arrived in one message. */
export async function storeColumn(store: LocalStore, config: NodeConfig, msg: StoreColumnMessage): Promise<{ stored: boolean; created: boolean }> {
  const { header, columnBytes } = columnHeaderOf(msg.header, config);
  if (deleteHolds(store, header.id, header)) return { stored: false, created: false };
  const writer = new ColumnWriter(store, config, header, columnBytes);
  try {
    await writer.write(msg.data ?? Buffer.alloc(0));
  } catch (err) {
    await writer.abort();
    throw err;
  }
  return { stored: true, ...(await writer.finish(msg.column_checksum ?? Buffer.alloc(0), checksumsOf(msg.column_checksums))) };
}

/** The receiving end of a StoreShard stream. */
export class ShardReceiver {
  private writer: ColumnWriter | undefined;
  private skipped = false;
  created = false;
  /** A copy of a blob a user deleted here after it was made: not taken. */
  declined = false;

  constructor(
    private readonly store: LocalStore,
    private readonly config: NodeConfig,
  ) {}

  async chunk(msg: { header?: Partial<ShardHeaderMessage>; data?: Buffer; final?: boolean; column_checksum?: Buffer; column_checksums?: Buffer }): Promise<void> {
    if (!this.writer && !this.skipped) {
      const { header, columnBytes } = columnHeaderOf(msg.header, this.config);
      if (deleteHolds(this.store, header.id, header)) this.skipped = this.declined = true;
      else this.writer = new ColumnWriter(this.store, this.config, header, columnBytes);
    }
    if (this.skipped) return;
    const data = msg.data;
    if (data && data.length > 0) await this.writer!.write(data);
    if (msg.final) {
      const writer = this.writer!;
      this.writer = undefined;
      this.skipped = true; // nothing more is taken on this stream
      this.created = (await writer.finish(msg.column_checksum ?? Buffer.alloc(0), checksumsOf(msg.column_checksums))).created;
    }
  }

  /** The stream ended: a column without its final message is dropped. */
  async end(): Promise<void> {
    if (!this.writer) return;
    await this.abort();
    throw invalidArgument('shard stream ended before its final message');
  }

  async abort(): Promise<void> {
    const writer = this.writer;
    this.writer = undefined;
    await writer?.abort();
  }
}

interface PendingColumn {
  column: BatchColumn;
  resolve: (r: { created: boolean }) => void;
  reject: (err: Error) => void;
}

/**
 * Small whole columns to peers, batched: every column for a peer that comes during one
 * event-loop turn goes in one POST (up to `batchBytes`), so concurrent EC stores of small blobs
 * share requests the way their local writes share a group commit.
 */
export class ShardBatcher {
  private readonly pending = new Map<string, { peer: PeerRef; columns: PendingColumn[]; bytes: number }>();
  private scheduled = false;

  constructor(
    private readonly transport: PeerTransport,
    private readonly options: { batchBytes: number; timeoutMs: number },
  ) {}

  /** Resolves once the peer holds the column durably (with the blob's column checksums). */
  store(peer: PeerRef, header: ColumnHeader, data: Buffer, columnChecksum: Buffer, columnChecksums: Buffer): Promise<{ created: boolean }> {
    return new Promise((resolve, reject) => {
      let batch = this.pending.get(peer.nodeId);
      if (!batch) {
        batch = { peer, columns: [], bytes: 0 };
        this.pending.set(peer.nodeId, batch);
      }
      batch.columns.push({ column: { header, data, columnChecksum, columnChecksums }, resolve, reject });
      batch.bytes += data.length;
      if (batch.bytes >= this.options.batchBytes) {
        this.pending.delete(peer.nodeId);
        void this.send(batch.peer, batch.columns);
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batches = [...this.pending.values()];
    this.pending.clear();
    for (const b of batches) void this.send(b.peer, b.columns);
  };

  private async send(peer: PeerRef, columns: PendingColumn[]): Promise<void> {
    try {
      const results = await this.transport.shardBatch(peer, shardBatchBody(columns.map((c) => c.column)), columns.length, this.options.timeoutMs);
      columns.forEach((c, i) => {
        const r = results[i]!;
        if (r.stored) c.resolve({ created: r.created });
        else c.reject(new PeerPutError(`${peer.nodeId}: column ${c.column.header.index} not stored: ${r.error}`, false, 400));
      });
    } catch (err) {
      for (const c of columns) c.reject(err as Error);
    }
  }
}
