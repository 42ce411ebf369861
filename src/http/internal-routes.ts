/**
 * /internal/v1/blobs/{id}: the bytes of a blob stored on this node, for a peer that lacks it (the
 * cluster's remote reads, src/cluster/http-fetcher.ts). It is InternalService.FetchBlob's data
 * path on the API listener: uWS sends a chunk with one write from the pooled buffer, while a
 * grpc-js stream copies and allocates each 1 MiB message on both ends (about 1.9 ms of CPU per
 * MiB here against ~0.4 ms for this path; see src/cluster/README.md).
 *
 * Local copies only (a peer never asks on our behalf), verified chunk by chunk as every read; one
 * `Range: bytes=a-b` (206). A chunk that fails its checksum after the first byte cuts the
 * connection, so the peer sees a short body, never wrong bytes. Access as InternalService's: with
 * a cluster secret, the peer's `X-Blobstore-Cluster-Secret` must match; without one, a token with
 * the read scope when tokens are configured (peers have none: they use gRPC then), else open.
 * Not counted as client reads in the metrics (the peer's read is).
 */
import type { Gate } from '../auth/gate.js';
import type { Cluster } from '../cluster/cluster.js';
import { SECRET_METADATA } from '../cluster/peers.js';
import { parseBlobId } from '../engine/blob-id.js';
import { BlobstoreError, notFound } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { ByteRange } from '../service/local-store.js';
import { BodySender } from './download.js';
import type { Intake } from './intake.js';
import { parseRange } from './range.js';
import { type Exchange, newExchange, sendError } from './reply.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import type { Wire } from './wire.js';

export const INTERNAL_BLOB_PATH = '/internal/v1/blobs/';

export class InternalRoutes {
  constructor(
    private readonly cluster: () => Cluster | undefined,
    private readonly gate: Gate,
    private readonly intake: Intake,
    private readonly wire: Wire,
    private readonly log: Logger,
  ) {}

  /** GET /internal/v1/blobs/:id (HEAD answers the same head without the body). */
  readonly get = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    const x = newExchange(res, this.wire, this.log, head);
    let range: ByteRange | undefined;
    let meta;
    try {
      const cluster = this.authorize(req);
      const id = parseBlobId(req.getParameter(0));
      meta = cluster.store.stat(id);
      if (!meta) throw notFound(`blob ${id.toString('hex')} not on this node`);
      const rangeHeader = req.getHeader('range');
      range = rangeHeader === '' ? undefined : parseRange(rangeHeader, '', '', meta.size);
    } catch (err) {
      return sendError(x, err);
    }
    const found = meta;
    this.intake.track(x, this.send(x, found, range, this.cluster()!));
  };

  private authorize(req: HttpRequest): Cluster {
    const cluster = this.cluster();
    if (!cluster) throw new BlobstoreError('unavailable', 'the cluster side of this node is starting', { headers: { 'Retry-After': '1' } });
    if (cluster.config.clusterSecret !== '') {
      if (!cluster.secretMatches(req.getHeader(SECRET_METADATA))) throw new BlobstoreError('unauthenticated', 'node-to-node call without the cluster secret');
    } else if (this.gate.enabled) {
      this.gate.check(req.getHeader('authorization'), 'read');
    }
    return cluster;
  }

  private async send(x: Exchange, meta: NonNullable<ReturnType<Cluster['store']['stat']>>, range: ByteRange | undefined, cluster: Cluster): Promise<void> {
    const total = range ? range.end - range.start : meta.size;
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
    const sender = new BodySender(x, total);
    let sent = false;
    try {
      await cluster.store.read(meta, async (chunk, i) => {
        await sender.send(chunk, i === 0 ? writeHead : undefined);
        sent = true;
      }, range);
    } catch (err) {
      // After the first byte the status is gone: cut the body short rather than send wrong bytes.
      if (sent && !x.aborted && !x.done) {
        x.done = true;
        x.res.close();
        return;
      }
      throw err;
    }
  }
}
