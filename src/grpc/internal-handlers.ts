/**
 * InternalService: what nodes ask of each other. Every call must carry the cluster secret when
 * one is set (refused as UNAUTHENTICATED otherwise; user tokens mean nothing here). Replicas go
 * straight to the local store (a replica is never replicated again); reads stream verified
 * chunks; repair questions are answered from the index.
 */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { blobIdFromBytes } from '../blob/id.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { BlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { Cluster } from '../cluster/cluster.js';
import { incomingMeta, type ReplicaReceiver } from '../cluster/transfer.js';
import { headerMessage, type storeColumn } from '../cluster/shard-transfer.js';
import type { StoreManifestMessage } from '../cluster/ec-manifest.js';
import { columnWriteOf } from '../blob/shard.js';
import { blobMeta } from './blob-handlers.js';
import { InternalCalls } from './internal-calls.js';

const replicaReceiver = (c: Cluster): ReplicaReceiver => c.internal.replicaReceiver();

export function internalServiceHandlers(getCluster: () => Cluster | undefined, log: Logger): UntypedServiceImplementation {
  /** The cluster, once it runs (a call in the moment between listening and its start waits a retry). */
  const running = (): Cluster => {
    const c = getCluster();
    if (!c) throw new BlobstoreError('unavailable', 'the cluster side of this node is starting', { headers: { 'Retry-After': '1' } });
    return c;
  };
  const calls = new InternalCalls(running, log);
  const unary = calls.unary.bind(calls);

  type ReplicaRequest = { id?: { id?: Buffer }; data?: Buffer; meta?: Parameters<typeof incomingMeta>[1] };
  const replicate = (r: ReplicaRequest): Promise<boolean> => {
    const { internal } = running();
    return internal.storeReplica(incomingMeta(r.id, r.meta, internal.config), r.data ?? Buffer.alloc(0));
  };

  const fetchBlob = calls.serverStream('FetchBlob', async (req: { id?: { id?: Buffer }; offset?: string | number; length?: string | number }, write, gone) => {
    const { internal } = running();
    const meta = internal.blob(blobIdFromBytes(req.id?.id));
    const start = Math.min(Number(req.offset ?? 0), meta.size);
    const length = Number(req.length ?? 0);
    const end = length > 0 ? Math.min(meta.size, start + length) : meta.size;
    let first = true;
    await internal.read(meta, async (chunk: Buffer) => {
      if (gone()) throw new BlobstoreError('unavailable', 'fetch cancelled by the caller');
      for (let at = 0; at < Math.max(1, chunk.length); at += CHUNK_BYTES) {
        await write(first ? { meta: blobMeta(meta), data: chunk.subarray(at, at + CHUNK_BYTES) } : { data: chunk.subarray(at, at + CHUNK_BYTES) });
        first = false;
      }
    }, { start, end });
    if (first) await write({ meta: blobMeta(meta), data: Buffer.alloc(0) });
    await write({ final: true });
  });

  /**
   * FetchShard: a range of a column held here, verified chunk by chunk, the header first. Each
   * chunk is copied (~0.1 ms a MiB) so that several are in flight: waiting for grpc-js to encode
   * each one before reading the next held a reader to one chunk per round trip.
   */
  const fetchShard = calls.serverStream('FetchShard', async (req: { id?: { id?: Buffer }; index?: number; offset?: string | number; length?: string | number }, _write, gone, send) => {
    const { internal } = running();
    const meta = internal.column(blobIdFromBytes(req.id?.id), req.index ?? 0);
    const start = Math.min(Number(req.offset ?? 0), meta.size);
    const length = Number(req.length ?? 0);
    const end = length > 0 ? Math.min(meta.size, start + length) : meta.size;
    const header = headerMessage(columnWriteOf(meta));
    let first = true;
    // A corrupt column is never sent: the caller reconstructs, and this node rebuilds its copy.
    await internal.read(meta, async (view: Buffer) => {
      if (gone()) throw new BlobstoreError('unavailable', 'fetch cancelled by the caller');
      const chunk = Buffer.from(view);
      await send(first ? { header, data: chunk } : { data: chunk });
      first = false;
    }, { start, end });
    if (first) await send({ header, data: Buffer.alloc(0) });
    await send({ final: true });
  });

  return {
    Replicate: unary('Replicate', async (r: ReplicaRequest) => ({ created: await replicate(r) })),
    // All blobs of a batch at once: they share one group commit (one after another, each would
    // wait for its own fsync and index flush: ~300 blobs/s instead of thousands).
    ReplicateBatch: unary('ReplicateBatch', async (r: { blobs?: ReplicaRequest[]; repair?: boolean }) => ({
      created: await Promise.all((r.blobs ?? []).map((blob) => replicate(blob))),
    })),
    ReplicateStream: calls.receive('ReplicateStream', replicaReceiver, (r) => ({ created: r.created })),
    Migrate: calls.receive('Migrate', replicaReceiver, (r) => ({ blobs_received: r.blobs, bytes_received: r.bytes })),
    DeleteInternal: unary('DeleteInternal', async (r: { id?: { id?: Buffer } }) => ({ deleted: await running().internal.dropCopy(blobIdFromBytes(r.id?.id)) })),
    FetchBlob: fetchBlob,
    StatBlob: unary('StatBlob', (r: { id?: { id?: Buffer } }) => {
      const id = blobIdFromBytes(r.id?.id);
      const held = running().internal.held(id);
      if (!held) return { exists: false };
      if (held.kind === 'blob') return { exists: true, meta: blobMeta(held.meta) };
      // Columns of an EC blob (which are here), or its manifest: the blob's metadata and where its columns are.
      const placement = held.placement ? { placement: held.placement } : {};
      return held.kind === 'columns'
        ? { exists: true, meta: blobMeta(held.meta), shard_indices: held.indices, shard_size: held.shardBytes, ...placement, ...(held.columnChecksums ? { column_checksums: held.columnChecksums } : {}) }
        : { exists: true, meta: blobMeta(held.meta), shard_size: held.shardBytes, ...placement, manifest: true };
    }),
    HaveBlobs: unary('HaveBlobs', (r: { ids?: Buffer[] }) => ({ have: running().internal.have(r.ids ?? []) })),
    RangeDigest: unary('RangeDigest', (r: { peer?: string; ring_version?: string | number; top?: number[] }) =>
      running().internal.digests(r.peer ?? '', r.top ?? [])),
    ListLeaf: unary('ListLeaf', (r: { peer?: string; leaf?: number }) => ({ ids: running().internal.leafIds(r.peer ?? '', r.leaf ?? 0) })),
    FetchShard: fetchShard,
    StoreShard: calls.receive('StoreShard', (c) => c.internal.shardReceiver(), (r) => ({ created: r.created, declined: r.declined })),
    // All columns of a batch at once: they share one group commit, like ReplicateBatch.
    StoreShardBatch: unary('StoreShardBatch', async (r: { shards?: Parameters<typeof storeColumn>[2][]; repair?: boolean }) => ({
      results: await running().internal.storeColumns(r.shards ?? []),
    })),
    StoreManifest: unary('StoreManifest', async (r: StoreManifestMessage) => ({ created: await running().internal.storeManifest(r) })),
    DeleteShard: unary('DeleteShard', async (r: { id?: { id?: Buffer }; index?: number; all?: boolean; unless_checksum?: Buffer }) => ({
      deleted: await running().internal.dropColumns(blobIdFromBytes(r.id?.id), r.all === true ? undefined : (r.index ?? 0), r.unless_checksum?.length ? r.unless_checksum : undefined),
    })),
  } as UntypedServiceImplementation;
}
