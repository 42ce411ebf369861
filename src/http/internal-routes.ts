/**
 * The node-to-node data path on the API listener, for the bytes of large blobs: uWS sends a chunk
 * with one write from the pooled buffer and takes a body into pooled chunks, while a grpc-js
 * stream copies and allocates each 1 MiB message on both ends (about 1.9 ms of CPU per MiB here
 * against ~0.4 ms for this path; see docs/cluster.md). The gRPC calls stay as the fallback.
 *
 *   GET /internal/v1/blobs/{id}     InternalService.FetchBlob's bytes (src/cluster/http-fetcher.ts)
 *   GET /internal/v1/stat/{id}      InternalService.StatBlob's answer, as JSON (src/cluster/wire-meta.ts statJson)
 *   PUT /internal/v1/replicas/{id}  InternalService.ReplicateStream's (src/cluster/replica-stream.ts)
 *   POST /internal/v1/replicas      InternalService.ReplicateBatch's (src/cluster/replica-batch.ts)
 *   POST /internal/v1/shards        InternalService.StoreShardBatch's (src/cluster/shard-batch.ts)
 *
 * A replica's metadata comes in headers (X-Blobstore-Size, -Checksum hex, -Created-At ns, -Policy,
 * -Labels-Encoded base64 of the engine's encoded labels, -Repair), its bytes as a chunked body
 * (this uWS refuses a Content-Length of ten digits); it is received as a client's raw store is (BlobWriter: pooled chunks, hashed as
 * they arrive, the sender paused while the disk is behind), checked against the checksum, and
 * answered {"created": bool} once durable.
 *
 * Local copies only (a peer never asks on our behalf), verified chunk by chunk as every read; one
 * `Range: bytes=a-b` (206). A column read with `X-Blobstore-Chunk-Values: 1` (an EC read that
 * checks the bytes itself: src/cluster/column-check.ts) gets the range's chunks' chaining values
 * first, and its chunks unchecked here. A chunk that fails its checksum after the first byte cuts the
 * connection, so the peer sees a short body, never wrong bytes. Access as InternalService's: the
 * peer's `X-Blobstore-Cluster-Secret` must match the cluster secret; no user token opens it (a node
 * runs without a secret only on loopback without tokens: src/auth/cluster-secret.ts).
 * Not counted as client reads in the metrics (the peer's read is).
 */
import type { Cluster } from '../cluster/cluster.js';
import { SECRET_METADATA } from '../cluster/transport/peer-link.js';
import { parseBlobId } from '../blob/id.js';
import { BlobstoreError, invalidArgument, payloadTooLarge } from '../errors/errors.js';
import { readReplicaBatch } from '../cluster/replica-batch.js';
import { readShardBatch } from '../cluster/shard-batch.js';
import type { Logger } from '../log/logger.js';
import { incomingMeta } from '../cluster/transfer.js';
import { messageOfHeaders, statJson } from '../cluster/wire-meta.js';
import type { BlobWriter } from '../service/blob-writer.js';
import type { ByteRange } from '../service/local-store.js';
import { sendBody } from './download.js';
import { ColumnBody } from './column-body.js';
import { checksumCountOf, columnHeaderOf, sealedHeader, sealMaxBytes, streamedColumnHeader } from '../cluster/shard-transfer.js';
import { COLUMN_CHECKSUMS_HEADER } from '../cluster/transport/http-column.js';
import { CHUNK_VALUES_HEADER, readerChecks, valuesPrefix, valuesPrefixBytes } from '../cluster/column-check.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { ColumnHeader } from '../cluster/column-writer.js';
import type { BlobMeta } from '../blob/meta.js';
import { type Intake, isChunked } from './intake.js';
import { parseRange } from './range.js';
import { type Exchange, flowOf, newExchange, sendError, sendJson } from './reply.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import type { Wire } from './wire.js';
import { ticks } from '../metrics/clock.js';

export const INTERNAL_BLOB_PATH = '/internal/v1/blobs/';
export const INTERNAL_REPLICA_PATH = '/internal/v1/replicas/';
export const INTERNAL_STAT_PATH = '/internal/v1/stat/';

export class InternalRoutes {
  constructor(
    private readonly cluster: () => Cluster | undefined,
    private readonly intake: Intake,
    private readonly wire: Wire,
    private readonly log: Logger,
  ) {}

  /** GET /internal/v1/blobs/:id (HEAD answers the same head without the body). */
  readonly get = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    this.getOne(res, req, head, (cluster, id) => cluster.internal.blob(id));
  };

  /**
   * GET /internal/v1/stat/:id: what this node holds of a blob (a copy, columns, the manifest), as
   * StatBlob answers it: what an EC read's survey and a remote read's lookup ask every candidate.
   */
  readonly stat = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    const x = newExchange(res, this.wire, this.log, head);
    try {
      const cluster = this.authorize(req);
      sendJson(x, 200, statJson(cluster.internal.held(parseBlobId(req.getParameter(0)))));
    } catch (err) {
      sendError(x, err);
    }
  };

  /**
   * GET /internal/v1/shards/:id/:index: (a range of) a shard column held here; with
   * X-Blobstore-Chunk-Values: 1, the range's chunks' chaining values first, for a reader that
   * checks the bytes itself (src/cluster/column-check.ts).
   */
  readonly getShard = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    this.getOne(res, req, head, (cluster, id) => cluster.internal.column(id, Number(req.getParameter(1))), req.getHeader(CHUNK_VALUES_HEADER));
  };

  private getOne(res: HttpResponse, req: HttpRequest, head: boolean, lookup: (cluster: Cluster, id: Buffer) => BlobMeta, values = ''): void {
    const x = newExchange(res, this.wire, this.log, head);
    let range: ByteRange | undefined;
    let meta;
    const withValues = values === '1';
    try {
      const cluster = this.authorize(req);
      if (values !== '' && !withValues) throw invalidArgument(`${CHUNK_VALUES_HEADER} must be 1`);
      const id = parseBlobId(req.getParameter(0));
      meta = lookup(cluster, id);
      const rangeHeader = req.getHeader('range');
      range = rangeHeader === '' ? undefined : parseRange(rangeHeader, '', '', meta.size);
      if (withValues && !readerChecks(range ?? { start: 0, end: meta.size }, meta.size)) {
        throw invalidArgument(`a read with ${CHUNK_VALUES_HEADER} starts on a ${CHUNK_BYTES}-byte chunk and ends on one or at the end`);
      }
    } catch (err) {
      return sendError(x, err);
    }
    const found = meta;
    this.intake.track(x, this.send(x, found, range, this.cluster()!, withValues));
  }

  /** PUT /internal/v1/shards/:id/:index: a shard column's bytes then its checksum (and a streamed column's seal), stored once durable (http-column.ts). */
  readonly putShard = (res: HttpResponse, req: HttpRequest): void => {
    const start = ticks();
    const x = newExchange(res, this.wire, this.log);
    let release = (): void => undefined;
    let body: ColumnBody;
    /** A streamed column: its header once the seal at its body's end names the blob. */
    let sealed: ((seal: string) => ColumnHeader) | undefined;
    try {
      const cluster = this.authorize(req);
      const { internal } = cluster;
      if (req.getHeader('x-blobstore-seal') === 'in-body') {
        // A column of a store that streams before its blob's id is known: the path names the
        // placement key; the body's last bytes are the seal that names the blob (http-column.ts).
        const placement = parseBlobId(req.getParameter(0));
        const index = Number(req.getParameter(1));
        const { header, columnBytes } = streamedColumnHeader(placement, index, Number(req.getHeader('x-blobstore-policy')), Number(req.getHeader('x-blobstore-shard-size')),
          Number(req.getHeader('x-blobstore-size')), Number(req.getHeader('x-blobstore-column-size')));
        release = this.intake.admit();
        const idleMs = Math.max(internal.config.bodyIdleTimeoutMs, internal.config.ecColumnIdleTimeoutMs);
        const checksums = checksumCountOf(req.getHeader(COLUMN_CHECKSUMS_HEADER), header);
        body = new ColumnBody(internal.columnWriter(header, columnBytes), columnBytes, internal.pool, flowOf(x), idleMs, sealMaxBytes(internal.config), checksums);
        sealed = (seal) => sealedHeader(header, seal, internal.config);
      } else {
        const { header, columnBytes } = columnHeaderOf({
          id: { id: parseBlobId(req.getParameter(0)) }, index: Number(req.getParameter(1)), shard_size: Number(req.getHeader('x-blobstore-shard-size')),
          column_size: Number(req.getHeader('x-blobstore-column-size')),
          meta: messageOfHeaders((name) => req.getHeader(name)),
        }, internal.config);
        const checksums = checksumCountOf(req.getHeader(COLUMN_CHECKSUMS_HEADER), header);
        const repair = req.getHeader('x-blobstore-repair') === '1';
        if (internal.declines(header.id, header.createdAtNs)) {
          // A user deleted the blob here: repair does not bring a column of it back.
          this.intake.drop(x);
          return sendJson(x, 200, '{"created":false,"declined":true}', undefined, 'drain');
        }
        const admitted = this.intake.admit();
        const claim = repair ? internal.claimRepair(header.id, header.index) : undefined;
        if (typeof claim === 'string') {
          admitted();
          throw new BlobstoreError('already_exists', claim);
        }
        release = claim === undefined ? admitted : () => (claim(), admitted());
        body = new ColumnBody(internal.columnWriter(header, columnBytes), columnBytes, internal.pool, flowOf(x), undefined, 0, checksums);
      }
    } catch (err) {
      release();
      this.intake.drop(x);
      return sendError(x, err, 'drain');
    }
    this.intake.receive(x, body, release, start, isChunked(req), async () => {
      try {
        const result = sealed ? await body.seal(sealed) : await body.finish();
        sendJson(x, 200, result.created ? '{"created":true,"declined":false}' : '{"created":false,"declined":false}');
      } catch (err) {
        await body.discard();
        sendError(x, err);
      }
    }, false);
  };

  /**
   * POST /internal/v1/replicas: a batch of small replicas (src/cluster/replica-batch.ts); every
   * blob checked and stored, all in the same group commits, then {"stored": n}. A blob that fails
   * its checks fails the batch (the sender retries its blobs; those stored hold).
   */
  readonly postReplicas = (res: HttpResponse, req: HttpRequest): void => {
    this.batchBody(res, req, 'a batch of replicas', async (x, cluster, body) => {
      const { internal } = cluster;
      const blobs = readReplicaBatch(body).map((b) => ({ meta: incomingMeta({ id: b.id }, b.meta, internal.config), data: b.data }));
      await Promise.all(blobs.map((b) => internal.storeReplica(b.meta, b.data)));
      sendJson(x, 200, `{"stored":${blobs.length}}`);
    });
  };

  /**
   * POST /internal/v1/shards: a batch of small whole columns (src/cluster/shard-batch.ts); each
   * checked and stored on its own, then {"results": [...]}, each column's {"stored", "created",
   * "error"} in the batch's order. A body that does not parse is refused whole.
   */
  readonly postShards = (res: HttpResponse, req: HttpRequest): void => {
    this.batchBody(res, req, 'a batch of columns', async (x, cluster, body) => {
      const results = await cluster.internal.storeColumns(readShardBatch(body));
      sendJson(x, 200, JSON.stringify({ results }));
    });
  };

  /**
   * A batch's body, its Content-Length at most --grpc-max-message-bytes (the bound of the gRPC
   * call it stands for), read into one buffer and handed to `store`, whose failure is the answer.
   */
  private batchBody(res: HttpResponse, req: HttpRequest, what: string, store: (x: Exchange, cluster: Cluster, body: Buffer) => Promise<void>): void {
    const x = newExchange(res, this.wire, this.log);
    let cluster: Cluster;
    let body: Buffer;
    try {
      cluster = this.authorize(req);
      const length = req.getHeader('content-length');
      const limit = cluster.internal.config.grpcMaxMessageBytes;
      if (!/^\d{1,15}$/.test(length)) throw new BlobstoreError('length_required', `${what} needs its Content-Length`);
      if (Number(length) > limit) throw payloadTooLarge(`${what} over ${limit} bytes (--grpc-max-message-bytes)`);
      body = Buffer.allocUnsafe(Number(length));
    } catch (err) {
      res.onData(() => undefined);
      return sendError(x, err, 'drain');
    }
    let at = 0;
    res.onData((chunk, isLast) => {
      if (x.done || x.aborted) return;
      if (at + chunk.byteLength > body.length) return sendError(x, invalidArgument(`${what} longer than its Content-Length`), 'drain');
      body.set(new Uint8Array(chunk), at);
      at += chunk.byteLength;
      if (!isLast) return;
      store(x, cluster, body.subarray(0, at)).catch((err: unknown) => sendError(x, err));
    });
  }

  /** PUT /internal/v1/replicas/:id: a replica's bytes as the body, stored once durable. */
  readonly putReplica = (res: HttpResponse, req: HttpRequest): void => {
    const start = ticks();
    const x = newExchange(res, this.wire, this.log);
    let release = (): void => undefined;
    let writer: BlobWriter;
    let meta: ReturnType<typeof incomingMeta>;
    try {
      const cluster = this.authorize(req);
      // The size comes apart from the body: a chunked body (this uWS refuses Content-Lengths of ten digits).
      const size = req.getHeader('x-blobstore-size');
      if (!/^\d{1,15}$/.test(size)) throw invalidArgument('a replica needs its X-Blobstore-Size');
      const { internal } = cluster;
      meta = incomingMeta({ id: parseBlobId(req.getParameter(0)) }, messageOfHeaders((name) => req.getHeader(name)), internal.config);
      if (internal.declines(meta.id, meta.createdAtNs)) {
        // A user deleted it here: repair does not bring it back.
        this.intake.drop(x);
        return sendJson(x, 200, '{"created":false}', undefined, 'drain');
      }
      release = this.intake.admit();
      writer = internal.replicaWriter(flowOf(x), meta);
    } catch (err) {
      release();
      this.intake.drop(x);
      return sendError(x, err, 'drain');
    }
    const target = { policy: meta.policy, labels: meta.labels };
    this.intake.receive(x, writer, release, start, isChunked(req), async () => {
      try {
        const result = await writer.finish(target);
        sendJson(x, 200, result.created ? '{"created":true}' : '{"created":false}');
      } catch (err) {
        await writer.discard();
        sendError(x, err);
      }
    }, false);
  };

  private authorize(req: HttpRequest): Cluster {
    const cluster = this.cluster();
    if (!cluster) throw new BlobstoreError('unavailable', 'the cluster side of this node is starting', { headers: { 'Retry-After': '1' } });
    // User tokens never open these routes (src/auth/cluster-secret.ts).
    if (!cluster.secretMatches(req.getHeader(SECRET_METADATA))) throw new BlobstoreError('unauthenticated', 'node-to-node call without the cluster secret');
    return cluster;
  }

  private async send(x: Exchange, meta: BlobMeta, range: ByteRange | undefined, cluster: Cluster, withValues: boolean): Promise<void> {
    const whole = range ?? { start: 0, end: meta.size };
    const prefix = withValues ? valuesPrefixBytes(whole) : 0;
    const total = prefix + whole.end - whole.start;
    const writeHead = (ex: Exchange): void => {
      ex.res.writeStatus(range ? '206 Partial Content' : '200 OK').writeHeader('Content-Type', 'application/octet-stream');
      if (range) ex.res.writeHeader('Content-Range', `bytes ${range.start}-${range.end - 1}/${meta.size}`);
    };
    if (x.head) {
      x.done = true;
      x.res.cork(() => {
        writeHead(x);
        x.res.writeHeader('Content-Length', String(total)).endWithoutBody();
      });
      return;
    }
    // A corrupt column is dropped and rebuilt here (the reader reconstructs around it).
    if (!withValues) return sendBody(x, total, writeHead, (sink) => cluster.internal.read(meta, sink, range));
    // The values go as the body's first bytes, the range's chunks after them.
    await sendBody(x, total, writeHead, (sink) => cluster.internal.read(meta, (chunk, i) => sink(chunk, i + 1), range, (cvs) => sink(valuesPrefix(cvs, whole, meta.checksum), 0)));
  }
}
