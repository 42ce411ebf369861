/**
 * Copies of whole blobs between nodes, the receiving end (blob-sender.ts is the sending end): the
 * receiver checks every byte against the checksum the sender's metadata names, and stores the
 * copy with the sender's metadata and no replication of its own, the way a client's store goes
 * (small ones through the small store's path, hashed together with the node's own).
 *
 *   sender:   local store ──verified chunks──▶ a batch (replica-batch.ts) [≤ batchBytes] / PUT /internal/v1/replicas/{id} [1 MiB…]
 *   receiver: bytes ──BLAKE3──▶ same checksum? ──▶ local store (origin: not replicated, original time)
 */
import { deleteHolds } from './deleted-here.js';
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import { blobIdFromBytes, idOfDigest } from '../blob/id.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { PutResult, StoreOrigin } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import { blake3 } from '../hash/blake3.js';
import type { BlobMetaMessage } from '../proto/messages.js';
import type { FileSink, LocalStore, SmallStoreDone } from '../service/local-store.js';
import type { metaMessage } from '../service/meta.js';
import type { Committer } from '../service/blob-writer.js';
import { metaOfMessage, type WireMeta } from './wire-meta.js';

export { BlobSender, type SenderOptions } from './blob-sender.js';

/** A blob as the wire carries it to a replica. */
export interface ReplicaMessage {
  id: { id: Buffer };
  data: Buffer;
  meta: ReturnType<typeof metaMessage> | BlobMetaMessage;
}

/** The metadata of a replica as it arrived: checked, in the engine's terms. */
export interface IncomingMeta extends WireMeta {
  id: Buffer;
  policy: Policy;
}

export function incomingMeta(idMessage: { id?: Buffer } | undefined, meta: Partial<BlobMetaMessage> | undefined, config: NodeConfig): IncomingMeta {
  const id = blobIdFromBytes(idMessage?.id);
  if (!meta) throw invalidArgument('replica without metadata');
  const checksum = meta.checksum;
  if (!checksum || checksum.length !== 32 || !idOfDigest(checksum).equals(id)) throw invalidArgument('replica: checksum does not match the id');
  const size = Number(meta.size ?? 0);
  if (!Number.isSafeInteger(size) || size < 0) throw invalidArgument('replica: invalid size');
  return { id, ...metaOfMessage(meta, config) };
}

const originOf = (m: IncomingMeta): StoreOrigin => ({ replicate: false, createdAtNs: m.createdAtNs });

/**
 * A small replica through the small store's path (Engine.putSmall): the replicas of a batch are
 * hashed together and share the log's turn with this node's own stores. The hash finds the id:
 * it must be the one the sender named.
 */
function putSmallReplica(store: LocalStore, m: IncomingMeta, data: Buffer): Promise<PutResult> {
  return new Promise((resolve, reject) => {
    const done: SmallStoreDone = {
      stored(err, id, existed) {
        if (err) return reject(err);
        // `id` is valid during this call only (the record goes back to its pool after).
        if (!id.equals(m.id)) return reject(new BlobstoreError('invalid_argument', `replica of ${m.id.toString('hex')}: bytes do not match the id`));
        resolve({ id: m.id, size: data.length, created: !existed });
      },
    };
    store.putSmall(data, m.policy, m.labels, done, false, m.createdAtNs);
  });
}

/** Stores a whole replica held in memory; created false when the bytes were here already. */
export async function storeReplica(store: LocalStore, config: NodeConfig, m: IncomingMeta, data: Buffer): Promise<PutResult> {
  if (data.length !== m.size) throw invalidArgument(`replica of ${m.id.toString('hex')}: ${data.length} bytes, metadata says ${m.size}`);
  if (data.length <= config.smallBlobMaxBytes) return putSmallReplica(store, m, data);
  if (!blake3(data).equals(m.checksum)) throw invalidArgument(`replica of ${m.id.toString('hex')}: bytes do not match the checksum`);
  const writer = await store.beginFile();
  try {
    for (let at = 0; at < data.length; at += CHUNK_BYTES) await writer.write(data.subarray(at, at + CHUNK_BYTES));
    await writer.finish();
    return await store.commitFile(writer, m.checksum, m.policy, m.labels, originOf(m));
  } catch (err) {
    await writer.abort();
    throw err;
  }
}

/**
 * The commit point of a replica that arrived as a request body (PUT /internal/v1/replicas/{id},
 * src/http/internal-routes.ts, through the same BlobWriter as a client's raw store): the bytes
 * must be the ones the sender's metadata names, and the copy keeps that metadata.
 */
export function replicaCommitter(store: LocalStore, config: NodeConfig, m: IncomingMeta): Committer {
  return async (content) => {
    if ('data' in content) return storeReplica(store, config, m, content.data);
    const file = content.file;
    if (file.size !== m.size) throw invalidArgument(`replica of ${m.id.toString('hex')}: ${file.size} bytes, metadata says ${m.size}`);
    if (!content.checksum.equals(m.checksum)) throw invalidArgument(`replica of ${m.id.toString('hex')}: bytes do not match the checksum`);
    return store.commitFile(file, m.checksum, m.policy, m.labels, originOf(m));
  };
}

/** A streamed replica being received. */
interface Incoming {
  meta: IncomingMeta;
  writer?: FileSink;
  /** Bytes not yet handed to the writer (or, for a small blob, all of them). */
  parts: Buffer[];
  received: number;
  /** Chunk writes under way (the writer takes them in order; the disk works on several). */
  writes: Promise<void>[];
}

/**
 * Receives streamed replicas (ReplicateStream: one blob; Migrate: several in a row): meta on the
 * first chunk of each blob, `final` on its last. Bytes go to a file as they come (a small blob
 * gathers in memory); the digest is checked before the copy is committed.
 */
export class ReplicaReceiver {
  private current: Incoming | undefined;
  blobs = 0;
  bytes = 0;
  created = false;

  constructor(
    private readonly store: LocalStore,
    private readonly config: NodeConfig,
  ) {}

  async chunk(msg: { id?: { id?: Buffer }; meta?: Partial<BlobMetaMessage>; data?: Buffer; final?: boolean }): Promise<void> {
    if (!this.current) {
      const meta = incomingMeta(msg.id, msg.meta, this.config);
      this.current = { meta, parts: [], received: 0, writes: [] };
      if (meta.size > this.config.smallBlobMaxBytes) this.current.writer = await this.store.beginFile();
    }
    const cur = this.current;
    // A view of the received message: grpc-js does not reuse it, so it is kept without a copy.
    const data = msg.data ?? Buffer.alloc(0);
    if (cur.received + data.length > cur.meta.size) throw invalidArgument(`replica of ${cur.meta.id.toString('hex')}: more bytes than its size`);
    if (data.length > 0) {
      cur.received += data.length;
      cur.parts.push(data);
      if (cur.writer) await this.writeWhole(cur, false);
    }
    if (msg.final) {
      this.current = undefined;
      await this.finishBlob(cur);
    }
  }

  /** Hands the writer whole 1 MiB chunks (its digests are per 1 MiB), and the rest at the end. */
  private async writeWhole(cur: Incoming, last: boolean): Promise<void> {
    let pending = 0;
    for (const p of cur.parts) pending += p.length;
    while (pending >= CHUNK_BYTES || (last && pending > 0)) {
      let chunk = cur.parts[0]!;
      if (chunk.length === CHUNK_BYTES) {
        // The sender's chunks are whole 1 MiB: handed on without a copy.
        cur.parts.shift();
      } else {
        const all = Buffer.concat(cur.parts);
        chunk = all.subarray(0, Math.min(CHUNK_BYTES, all.length));
        cur.parts = chunk.length < all.length ? [all.subarray(chunk.length)] : [];
      }
      // write() takes the chunk's place and hash at once, in call order; the disk write runs on.
      const write = cur.writer!.write(chunk);
      write.catch(() => undefined); // awaited below or in finishBlob
      cur.writes.push(write);
      if (cur.writes.length >= this.config.chunkWritesInFlight) await cur.writes.shift();
      pending -= chunk.length;
    }
  }

  private async finishBlob(cur: Incoming): Promise<void> {
    if (cur.received !== cur.meta.size) {
      await cur.writer?.abort();
      throw invalidArgument(`replica of ${cur.meta.id.toString('hex')}: ${cur.received} bytes, metadata says ${cur.meta.size}`);
    }
    this.blobs++;
    this.bytes += cur.received;
    if (deleteHolds(this.store, cur.meta.id, cur.meta)) {
      await cur.writer?.abort();
      return;
    }
    if (!cur.writer) {
      this.created = (await storeReplica(this.store, this.config, cur.meta, Buffer.concat(cur.parts))).created;
      return;
    }
    try {
      await this.writeWhole(cur, true);
      await Promise.all(cur.writes.splice(0));
      const digest = await cur.writer.finish();
      if (!digest.equals(cur.meta.checksum)) throw invalidArgument(`replica of ${cur.meta.id.toString('hex')}: bytes do not match the checksum`);
      this.created = (await this.store.commitFile(cur.writer, cur.meta.checksum, cur.meta.policy, cur.meta.labels, originOf(cur.meta))).created;
    } catch (err) {
      await Promise.allSettled(cur.writes);
      await cur.writer.abort();
      throw err;
    }
  }

  /** The stream ended: a blob left unfinished is dropped. */
  async end(): Promise<void> {
    if (!this.current) return;
    const cur = this.current;
    this.current = undefined;
    await Promise.allSettled(cur.writes);
    await cur.writer?.abort();
    throw invalidArgument(`replica stream ended before the final chunk of ${cur.meta.id.toString('hex')}`);
  }

  async abort(): Promise<void> {
    const cur = this.current;
    this.current = undefined;
    await Promise.allSettled(cur?.writes ?? []);
    await cur?.writer?.abort();
  }
}
