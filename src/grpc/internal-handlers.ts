/**
 * InternalService: what nodes ask of each other. Every call must carry the cluster secret when
 * one is set (refused as UNAUTHENTICATED otherwise; user tokens mean nothing here). Replicas go
 * straight to the local store (a replica is never replicated again); reads stream verified
 * chunks; repair questions are answered from the index.
 */
import * as grpc from '@grpc/grpc-js';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { blobIdFromBytes } from '../blob/id.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { BlobstoreError, invalidArgument, notFound } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { Cluster } from '../cluster/cluster.js';
import { incomingMeta, ReplicaReceiver, storeReplica } from '../cluster/transfer.js';
import { columnHeaderOf, headerMessage, ShardReceiver, storeColumn } from '../cluster/shard-transfer.js';
import { incomingManifest, type StoreManifestMessage } from '../cluster/ec-manifest.js';
import { placementOf } from '../cluster/wire-meta.js';
import { columnWriteOf } from '../blob/shard.js';
import { ecBlobMeta, manifestMeta } from '../service/ec-meta.js';
import { blobMeta } from './blob-handlers.js';
import type { MalformedMessage } from '../proto/loader.js';
import { toStatus, wellFormed } from './status.js';

/** The receiving end of a client stream. */
interface Receiver {
  chunk(msg: never): Promise<void>;
  end(): Promise<void>;
  abort(): Promise<void>;
}

type Unary = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => void;

const replicaReceiver = (c: Cluster, repair: boolean): ReplicaReceiver => new ReplicaReceiver(c.store, c.config, repair);


export function internalServiceHandlers(getCluster: () => Cluster | undefined, log: Logger): UntypedServiceImplementation {
  /** The cluster, once it runs (a call in the moment between listening and its start waits a retry). */
  const running = (): Cluster => {
    const c = getCluster();
    if (!c) throw new BlobstoreError('unavailable', 'the cluster side of this node is starting', { headers: { 'Retry-After': '1' } });
    return c;
  };
  const unary = <Req>(method: string, fn: (request: Req, metadata: grpc.Metadata) => unknown): Unary => (call, callback) => {
    let result: unknown;
    try {
      running().checkPeer(call);
      result = fn(wellFormed(call.request as Req | MalformedMessage), call.metadata);
    } catch (err) {
      callback(toStatus(err, `InternalService.${method}`, log, call.metadata));
      return;
    }
    Promise.resolve(result).then((res) => callback(null, res), (err: unknown) => callback(toStatus(err, `InternalService.${method}`, log, call.metadata)));
  };

  type ReplicaRequest = { id?: { id?: Buffer }; data?: Buffer; meta?: Parameters<typeof incomingMeta>[1] };
  const replicate = async (r: ReplicaRequest, repair: boolean): Promise<boolean> => {
    const { store, config } = running();
    const m = incomingMeta(r.id, r.meta, config);
    if (repair && store.deletedAt(m.id) !== undefined) return false;
    return (await storeReplica(store, config, m, r.data ?? Buffer.alloc(0))).created;
  };

  /** A client stream of chunks (a replica, several for Migrate, or an EC column). */
  const receive = <R extends Receiver>(method: string, make: (cluster: Cluster, repair: boolean) => R, respond: (r: R) => unknown) =>
    (call: grpc.ServerReadableStream<unknown, unknown>, callback: grpc.sendUnaryData<unknown>): void => {
      let receiver: R;
      try {
        const cluster = running();
        cluster.checkPeer(call);
        receiver = make(cluster, method === 'Migrate' || call.metadata.get('x-blobstore-repair')[0] === '1');
      } catch (err) {
        callback(toStatus(err, `InternalService.${method}`, log, call.metadata));
        return;
      }
      let failed = false;
      let chain = Promise.resolve();
      const fail = (err: unknown): void => {
        if (failed) return;
        failed = true;
        void receiver.abort();
        callback(toStatus(err, `InternalService.${method}`, log, call.metadata));
      };
      call.on('data', (msg: unknown) => {
        // One chunk at a time, in order; the stream pauses while the disk is behind.
        call.pause();
        chain = chain.then(async () => {
          if (failed) return;
          await receiver.chunk(wellFormed(msg as Parameters<R['chunk']>[0] | MalformedMessage));
          call.resume();
        }).catch(fail);
      });
      call.on('end', () => {
        chain = chain.then(async () => {
          if (failed) return;
          await receiver.end();
          callback(null, respond(receiver));
        }).catch(fail);
      });
      call.on('error', () => void receiver.abort());
      call.on('cancelled', () => {
        failed = true;
        void receiver.abort();
      });
    };

  /**
   * A server stream: `produce` writes messages with `write`, which resolves once grpc-js has
   * encoded the message (the sender reuses chunk buffers: a queued write is encoded later), which
   * is also the backpressure. Errors end the call with their status.
   */
  const serverStream = <Req>(method: string, produce: (req: Req, write: (msg: unknown) => Promise<void>, gone: () => boolean, send: (msg: unknown) => Promise<void>) => Promise<void>) =>
    (call: grpc.ServerWritableStream<unknown, unknown>): void => {
      void (async () => {
        let cancelled = false;
        call.once('cancelled', () => (cancelled = true));
        try {
          running().checkPeer(call);
          const req = wellFormed(call.request as Req | MalformedMessage);
          // send(): for messages whose buffers are never reused; waits only while the stream is full.
          const send = (msg: unknown): Promise<void> => (call.write(msg) ? Promise.resolve() : new Promise((resolve) => call.once('drain', () => resolve())));
          await produce(req, (msg) => new Promise((resolve) => call.write(msg, () => resolve())), () => cancelled, send);
          // A server stream's end() takes trailing metadata, not a last message.
          call.end();
        } catch (err) {
          if (!cancelled) call.emit('error', toStatus(err, `InternalService.${method}`, log, call.metadata));
        }
      })();
    };

  const fetchBlob = serverStream('FetchBlob', async (req: { id?: { id?: Buffer }; offset?: string | number; length?: string | number }, write, gone) => {
    const { store } = running();
    const meta = store.stat(blobIdFromBytes(req.id?.id));
    if (!meta) throw notFound(`blob ${blobIdFromBytes(req.id?.id).toString('hex')} not on this node`);
    const start = Math.min(Number(req.offset ?? 0), meta.size);
    const length = Number(req.length ?? 0);
    const end = length > 0 ? Math.min(meta.size, start + length) : meta.size;
    let first = true;
    await store.read(meta, async (chunk: Buffer) => {
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
  const fetchShard = serverStream('FetchShard', async (req: { id?: { id?: Buffer }; index?: number; offset?: string | number; length?: string | number }, _write, gone, send) => {
    const { store } = running();
    const id = blobIdFromBytes(req.id?.id);
    const meta = store.shardsOf(id).find((c) => c.shard.index === (req.index ?? 0));
    if (!meta) throw notFound(`column ${req.index ?? 0} of ${id.toString('hex')} not on this node`);
    const start = Math.min(Number(req.offset ?? 0), meta.size);
    const length = Number(req.length ?? 0);
    const end = length > 0 ? Math.min(meta.size, start + length) : meta.size;
    const header = headerMessage(columnWriteOf(meta));
    let first = true;
    try {
      await store.read(meta, async (view: Buffer) => {
        if (gone()) throw new BlobstoreError('unavailable', 'fetch cancelled by the caller');
        const chunk = Buffer.from(view);
        await send(first ? { header, data: chunk } : { data: chunk });
        first = false;
      }, { start, end });
    } catch (err) {
      // A corrupt column is never sent: the caller reconstructs, and this node rebuilds its copy.
      if (err instanceof BlobstoreError && err.kind === 'corruption') running().corruptColumn(meta);
      throw err;
    }
    if (first) await send({ header, data: Buffer.alloc(0) });
    await send({ final: true });
  });

  return {
    Replicate: unary('Replicate', async (r: ReplicaRequest) => ({ created: await replicate(r, false) })),
    // All blobs of a batch at once: they share one group commit (one after another, each would
    // wait for its own fsync and index flush: ~300 blobs/s instead of thousands).
    ReplicateBatch: unary('ReplicateBatch', async (r: { blobs?: ReplicaRequest[]; repair?: boolean }) => ({
      created: await Promise.all((r.blobs ?? []).map((blob) => replicate(blob, r.repair === true))),
    })),
    ReplicateStream: receive('ReplicateStream', replicaReceiver, (r) => ({ created: r.created })),
    Migrate: receive('Migrate', replicaReceiver, (r) => ({ blobs_received: r.blobs, bytes_received: r.bytes })),
    DeleteInternal: unary('DeleteInternal', async (r: { id?: { id?: Buffer } }) => {
      const { store } = running();
      const id = blobIdFromBytes(r.id?.id);
      const had = store.stat(id) !== undefined;
      await store.delete(id, true);
      return { deleted: had };
    }),
    FetchBlob: fetchBlob,
    StatBlob: unary('StatBlob', (r: { id?: { id?: Buffer } }) => {
      const { store } = running();
      const id = blobIdFromBytes(r.id?.id);
      const meta = store.stat(id);
      if (meta) return { exists: true, meta: blobMeta(meta) };
      // Columns of an EC blob: the blob's metadata, and which columns are here.
      const columns = store.shardsOf(id);
      if (columns.length > 0) {
        const first = columns[0]!;
        return {
          exists: true, meta: blobMeta(ecBlobMeta(first)), shard_indices: columns.map((c) => c.shard.index), shard_size: first.shard.shardBytes,
          ...(first.shard.placement ? { placement: first.shard.placement } : {}),
        };
      }
      // The manifest of an EC blob stored as it streamed in: where its columns are.
      const manifest = store.ecManifests.get(id);
      if (!manifest) return { exists: false };
      return { exists: true, meta: blobMeta(manifestMeta(id, manifest)), shard_size: manifest.shardBytes, placement: manifest.placement, manifest: true };
    }),
    HaveBlobs: unary('HaveBlobs', (r: { ids?: Buffer[] }) => {
      const { store } = running();
      const ids = r.ids ?? [];
      const have = Buffer.alloc(Math.ceil(ids.length / 8));
      ids.forEach((id, i) => {
        if (id.length === 16 && (store.stat(id) !== undefined || store.deletedAt(id) !== undefined)) have[i >> 3]! |= 1 << (i & 7);
      });
      return { have };
    }),
    RangeDigest: unary('RangeDigest', (r: { peer?: string; ring_version?: string | number; top?: number[] }) =>
      running().antiEntropy.digests(r.peer ?? '', r.top ?? [])),
    ListLeaf: unary('ListLeaf', (r: { peer?: string; leaf?: number }) => ({ ids: running().antiEntropy.leafIds(r.peer ?? '', r.leaf ?? 0) })),
    FetchShard: fetchShard,
    StoreShard: receive('StoreShard', (c, repair) => new ShardReceiver(c.store, c.config, repair), (r) => ({ created: r.created, declined: r.declined })),
    // All columns of a batch at once: they share one group commit, like ReplicateBatch.
    StoreShardBatch: unary('StoreShardBatch', async (r: { shards?: Parameters<typeof storeColumn>[2][]; repair?: boolean }) => {
      const { store, config } = running();
      const results = await Promise.all((r.shards ?? []).map((msg) => storeColumn(store, config, msg, r.repair === true).then(
        (done) => ({ stored: done.stored, created: done.created, error: '' }),
        (err: Error) => ({ stored: false, created: false, error: err.message }),
      )));
      return { results };
    }),
    SealShard: unary('SealShard', async (r: { placement?: Buffer; index?: number; header?: Parameters<typeof columnHeaderOf>[0]; discard?: boolean }) => {
      const { config, waiting } = running();
      const placement = placementOf(r.placement);
      if (!placement) throw invalidArgument('a seal without its placement key');
      if (r.discard === true) {
        waiting.discard(placement, r.index ?? 0);
        return { created: false };
      }
      return waiting.seal(placement, r.index ?? 0, columnHeaderOf(r.header, config).header);
    }),
    StoreManifest: unary('StoreManifest', async (r: StoreManifestMessage) => {
      const { store, config } = running();
      const { id, manifest } = incomingManifest(r, config);
      return { created: await store.ecManifests.put(id, manifest) };
    }),
    DeleteShard: unary('DeleteShard', async (r: { id?: { id?: Buffer }; index?: number; all?: boolean }) => {
      const { store } = running();
      const id = blobIdFromBytes(r.id?.id);
      const held = store.shardsOf(id).filter((c) => r.all === true || c.shard.index === (r.index ?? 0)).length;
      await store.deleteShards(id, r.all === true ? undefined : (r.index ?? 0), true);
      return { deleted: held };
    }),
  } as UntypedServiceImplementation;
}
