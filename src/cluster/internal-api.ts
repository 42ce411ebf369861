/**
 * What peers ask of this node and hand to it, once for both transports: InternalService's gRPC
 * handlers (src/grpc/internal-handlers.ts) and the /internal/v1 routes of the API listener
 * (src/http/internal-routes.ts) decode a request, call one method here and encode the answer;
 * neither reaches the local store. The checks every transport must make are made here: a repair
 * of a blob a user deleted here is declined, a copy or column read from here is verified, and a
 * column found corrupt on the way is dropped and rebuilt.
 */
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, notFound } from '../errors/errors.js';
import type { BlobMeta } from '../blob/meta.js';
import type { ShardMeta } from '../blob/shard.js';
import { BlobWriter, type FlowControl } from '../service/blob-writer.js';
import { ecBlobMeta, manifestMeta } from '../service/ec-meta.js';
import type { ByteRange, ChunkSink, ChunkValues, LocalStore } from '../service/local-store.js';
import type { Located } from '../service/placement.js';
import type { AntiEntropy } from './anti-entropy.js';
import { type ColumnHeader, ColumnWriter } from './column-writer.js';
import { incomingManifest, type StoreManifestMessage } from './ec-manifest.js';
import { deleteHolds } from './deleted-here.js';
import { ShardReceiver, storeColumn } from './shard-transfer.js';
import type { ColumnOutcome } from './transport/peer-transport.js';
import type { StoreColumnMessage } from './wire-meta.js';
import { type IncomingMeta, ReplicaReceiver, replicaCommitter, storeReplica } from './transfer.js';

/** What this node holds of a blob, as StatBlob answers it. */
export type HeldHere =
  | { readonly kind: 'blob'; readonly meta: BlobMeta }
  | { readonly kind: 'columns'; readonly meta: Located; readonly indices: number[]; readonly shardBytes: number; readonly placement?: Buffer; readonly columnChecksums?: Buffer }
  | { readonly kind: 'manifest'; readonly meta: Located; readonly shardBytes: number; readonly placement: Buffer };

export class ClusterInternalApi {
  /** Columns a repair writes here now, by `${id hex}:${index}` (claimRepair). */
  private readonly repairing = new Set<string>();

  constructor(
    private readonly store: LocalStore,
    readonly config: NodeConfig,
    private readonly antiEntropy: AntiEntropy,
    /** A column held here failed its check: it goes and is rebuilt (Cluster.corruptColumn). */
    private readonly corruptColumn: (meta: ShardMeta) => void,
  ) {}

  /** The pooled 1 MiB chunks bodies are received into. */
  get pool(): LocalStore['pool'] {
    return this.store.pool;
  }

  /** A whole copy held here (404 otherwise). */
  blob(id: Buffer): BlobMeta {
    const meta = this.store.stat(id);
    if (!meta) throw notFound(`blob ${id.toString('hex')} not on this node`);
    return meta;
  }

  /** Column `index` of a blob, held here (404 otherwise). */
  column(id: Buffer, index: number): ShardMeta {
    const meta = this.store.shardsOf(id).find((c) => c.shard.index === index);
    if (!meta) throw notFound(`column ${index} of ${id.toString('hex')} not on this node`);
    return meta;
  }

  /**
   * Streams (a range of) a copy or column held here, each chunk verified before it goes (with
   * `values`, by the reader: ChunkValues); a column found corrupt is dropped and rebuilt (the
   * caller's reader reconstructs around it).
   */
  async read(meta: BlobMeta, sink: ChunkSink, range?: ByteRange, values?: ChunkValues): Promise<void> {
    try {
      await this.store.read(meta, sink, range, values);
    } catch (err) {
      if ('shard' in meta && err instanceof BlobstoreError && err.kind === 'corruption') this.corruptColumn(meta as ShardMeta);
      throw err;
    }
  }

  /** What this node holds of the blob: a whole copy, columns of it, or its manifest (StatBlob). */
  held(id: Buffer): HeldHere | undefined {
    const meta = this.store.stat(id);
    if (meta) return { kind: 'blob', meta };
    const columns = this.store.shardsOf(id);
    if (columns.length > 0) {
      const first = columns[0]!;
      const columnChecksums = columns.find((c) => c.shard.columnChecksums)?.shard.columnChecksums;
      return { kind: 'columns', meta: ecBlobMeta(first), indices: columns.map((c) => c.shard.index), shardBytes: first.shard.shardBytes, placement: first.shard.placement, columnChecksums };
    }
    const manifest = this.store.ecManifests.get(id);
    return manifest && { kind: 'manifest', meta: manifestMeta(id, manifest), shardBytes: manifest.shardBytes, placement: manifest.placement };
  }

  /** Which of `ids` are held or were deleted by a user here (repair sends neither): bit i of the answer. */
  have(ids: readonly Buffer[]): Buffer {
    const have = Buffer.alloc(Math.ceil(ids.length / 8));
    ids.forEach((id, i) => {
      if (id.length === 16 && (this.store.stat(id) !== undefined || this.store.deletedAt(id) !== undefined)) have[i >> 3]! |= 1 << (i & 7);
    });
    return have;
  }

  /**
   * A copy (a replica or a column: replication, repair or handoff) of a blob a user deleted here
   * is not taken, where it was made before the delete: one on its way while the delete ran, or
   * queued on a node cut off meanwhile, would bring it back. A store of the same bytes after the
   * delete (a later creation time) is taken.
   */
  declines(id: Buffer, createdAtNs: bigint): boolean {
    return deleteHolds(this.store, id, { createdAtNs });
  }

  /**
   * Claims column `index` of `id` for a repair's write here, or says why not: the column is held
   * here, or another repair writes it. Every holder that finds a column missing may rebuild it: the
   * first to write it here goes on, the others are refused at once and stop reading their sources.
   * The returned function gives the claim back (once the write ends, however it ends).
   */
  claimRepair(id: Buffer, index: number): (() => void) | string {
    const column = `column ${index} of ${id.toString('hex')}`;
    if (this.store.shardsOf(id).some((c) => c.shard.index === index)) return `${column} is held here`;
    const key = `${id.toString('hex')}:${index}`;
    if (this.repairing.has(key)) return `${column}: another node's repair of it is writing it here`;
    this.repairing.add(key);
    return () => void this.repairing.delete(key);
  }

  /** Drops a copy held here (not a user's delete); whether one was here. */
  async dropCopy(id: Buffer): Promise<boolean> {
    const had = this.store.stat(id) !== undefined;
    await this.store.delete(id, true);
    return had;
  }

  /**
   * Drops columns held here (`index`, or all of the blob's): a store taken back, a column handed
   * off; with `unlessChecksum`, column `index` only if its checksum is not that one (a column
   * repair found wrong: a held column is not replaced meanwhile, a repair of it is refused).
   */
  async dropColumns(id: Buffer, index: number | undefined, unlessChecksum?: Buffer): Promise<number> {
    const held = this.store.shardsOf(id).filter((c) => index === undefined || c.shard.index === index);
    if (unlessChecksum !== undefined && (index === undefined || held.length === 0 || held[0]!.checksum.equals(unlessChecksum))) return 0;
    await this.store.deleteShards(id, index, true);
    return held.length;
  }

  /** A replica that came whole; false when declined or held already. */
  async storeReplica(m: IncomingMeta, data: Buffer): Promise<boolean> {
    if (this.declines(m.id, m.createdAtNs)) return false;
    return (await storeReplica(this.store, this.config, m, data)).created;
  }

  /** A replica's body as it arrives (pooled chunks, checked against `m` at the end). */
  replicaWriter(flow: FlowControl, m: IncomingMeta): BlobWriter {
    this.store.checkSpace(m.size);
    return new BlobWriter(flow, this.store, replicaCommitter(this.store, this.config, m), this.config, undefined, m.size, true);
  }

  /** The receiving end of a ReplicateStream or Migrate call. */
  replicaReceiver(): ReplicaReceiver {
    return new ReplicaReceiver(this.store, this.config);
  }

  /** The receiving end of a StoreShard call. */
  shardReceiver(): ShardReceiver {
    return new ShardReceiver(this.store, this.config);
  }

  /** Whole small columns (a batch POST, or StoreShardBatch): each stored or refused on its own. */
  storeColumns(columns: readonly StoreColumnMessage[]): Promise<ColumnOutcome[]> {
    return Promise.all(columns.map((msg) => storeColumn(this.store, this.config, msg).then(
      (done) => ({ stored: done.stored, created: done.created, error: '' }),
      (err: Error) => ({ stored: false, created: false, error: err.message }),
    )));
  }

  /** A column's writer into the local store (a streamed body). */
  columnWriter(header: ColumnHeader, columnBytes: number): ColumnWriter {
    return new ColumnWriter(this.store, this.config, header, columnBytes);
  }

  /** StoreManifest: kept durably; true when it was not here. A user's delete here holds against a manifest older than it. */
  storeManifest(msg: StoreManifestMessage): Promise<boolean> {
    const { id, manifest } = incomingManifest(msg, this.config);
    if (deleteHolds(this.store, id, manifest)) return Promise.resolve(false);
    return this.store.ecManifests.put(id, manifest);
  }

  /** RangeDigest: anti-entropy's digests for (this node, `peer`). */
  digests(peer: string, tops: readonly number[]): Promise<{ ring_version: number; digests: string[] }> {
    return this.antiEntropy.digests(peer, tops);
  }

  /** ListLeaf: the ids of a leaf both this node and `peer` own. */
  leafIds(peer: string, leaf: number): Buffer[] {
    return this.antiEntropy.leafIds(peer, leaf);
  }
}
