/**
 * `POST /v1/blobs/batch`: many blobs in one request (the format: src/blob/batch.ts). The body is
 * read whole (at most maxBatchBytes, Content-Length required) and split before anything is
 * stored: a malformed batch stores nothing. Then every blob goes the way a single store of its
 * size and policy goes (the small store's group commit, or the service's commit point with its
 * copies and columns), and the answer, 200 with every id in body order, is written once each of
 * them is durable. A blob that fails fails the request with its error; the others may be stored
 * by then (each is whole and durable: a retried batch stores each blob once).
 */
import { scopeOf } from '../auth/access.js';
import type { Gate } from '../auth/gate.js';
import { BATCH_CONTENT_TYPE, splitBatch } from '../blob/batch.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { parseLabelsHeader } from '../blob/labels.js';
import type { PutResult } from '../blob/meta.js';
import { parsePolicy, type Policy } from '../blob/policy.js';
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, invalidArgument, payloadTooLarge } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { type Ticks, ticks } from '../metrics/clock.js';
import { copyBytes } from '../util/copy-bytes.js';
import type { BlobService } from '../service/blob-service.js';
import type { BufferPool } from '../pool/buffer-pool.js';
import { AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, X_BLOBSTORE_LABELS, X_BLOBSTORE_POLICY } from './header-names.js';
import { contentLengthOf } from './blob-routes.js';
import type { BodySink, Intake } from './intake.js';
import { type Exchange, newExchange, sendError, sendJson } from './reply.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import type { Wire } from './wire.js';

const STORE_BATCH = scopeOf('POST /v1/blobs/batch');

export class BatchStores {
  constructor(
    private readonly service: BlobService,
    private readonly config: NodeConfig,
    private readonly gate: Gate,
    private readonly intake: Intake,
    private readonly wire: Wire,
    private readonly log: Logger,
    /** The largest blob the small store's path takes (SmallStores.maxBytes). */
    private readonly smallMaxBytes: number,
  ) {}

  readonly store = (res: HttpResponse, req: HttpRequest): void => {
    const start = ticks();
    let x: Exchange | undefined;
    let release = (): void => undefined;
    try {
      if (this.gate.enabled) this.gate.check(req.getHeader(AUTHORIZATION), STORE_BATCH);
      const type = req.getHeader(CONTENT_TYPE).split(';')[0]!.trim().toLowerCase();
      if (type !== BATCH_CONTENT_TYPE) throw new BlobstoreError('unsupported_media_type', `a batch is sent as ${BATCH_CONTENT_TYPE}, not ${JSON.stringify(type)}`);
      const policy = parsePolicy(req.getHeader(X_BLOBSTORE_POLICY));
      const labels = parseLabelsHeader(req.getHeader(X_BLOBSTORE_LABELS), this.config);
      this.service.checkPolicy(policy);
      const length = contentLengthOf(req.getHeader(CONTENT_LENGTH));
      if (length === undefined) throw new BlobstoreError('length_required', 'a batch needs its Content-Length');
      if (length > this.config.maxBatchBytes) throw payloadTooLarge(`batch of ${length} bytes exceeds the limit of ${this.config.maxBatchBytes} bytes`);
      x = newExchange(res, this.wire, this.log);
      release = this.intake.admit();
      const body = new BatchBody(this.service.store.pool, length);
      const exchange = x;
      this.intake.receive(x, body, release, start, false, () => this.complete(exchange, body, policy, labels, start));
    } catch (err) {
      release();
      x ??= newExchange(res, this.wire, this.log);
      this.service.recordFailure('put', err);
      this.intake.drop(x);
      sendError(x, err, 'drain');
    }
  };

  private async complete(x: Exchange, body: BatchBody, policy: Policy, labels: Buffer, start: Ticks): Promise<void> {
    let results: PutResult[];
    try {
      const blobs = splitBatch(body.bytes(), this.config.maxBatchBlobs);
      if (typeof blobs === 'string') throw invalidArgument(`not a batch: ${blobs}`);
      const small = this.service.takesSmallStore(policy);
      // The small store copies its bytes before putSmall returns, the long way gets a copy: the
      // body's buffer goes back to the pool before anything is awaited.
      const stores = blobs.map((data) => (small && data.length <= this.smallMaxBytes ? this.putSmall(data, policy, labels, start) : this.service.put(Buffer.from(data), { policy, labels })));
      void body.discard();
      const settled = await Promise.allSettled(stores);
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      results = settled.map((s) => (s as PromiseFulfilledResult<PutResult>).value);
    } catch (err) {
      void body.discard();
      this.service.recordFailure('put', err);
      return sendError(x, err);
    }
    let answer = '{"blobs":[';
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!;
      answer += `${i ? ',' : ''}{"id":${this.wire.id(r.id)},"size":${this.wire.int64(r.size)},"created":${r.created}}`;
    }
    sendJson(x, 200, answer + ']}');
  }

  /** One blob through the small store's group commit (the engine copies `data` before this returns). */
  private putSmall(data: Uint8Array, policy: Policy, labels: Buffer, start: Ticks): Promise<PutResult> {
    const replicate = this.service.replicates(policy);
    // In a cluster the replicator sends these bytes to the owners rather than reading them back.
    const copy = replicate ? this.service.freshCopy(data) : undefined;
    const stored = new Promise<PutResult>((resolve, reject) => {
      const done = {
        stored: (err: Error | undefined, id: Buffer, existed: boolean): void => {
          if (err) return reject(err);
          // The engine's id buffer belongs to its pooled record: copied.
          const result = { id: Buffer.from(id), size: data.length, created: !existed };
          if (copy === undefined) this.service.recorder.done('put', start, data.length);
          resolve(result);
        },
      };
      try {
        this.service.putSmall(data, policy, labels, done, replicate);
      } catch (err) {
        reject(err);
      }
    });
    // In a cluster the answer waits for the copies too, as a single store's does.
    if (copy === undefined) return stored;
    return stored.then(async (result) => {
      await this.service.copiesOf(result.id, copy);
      this.service.recorder.done('put', start, data.length);
      return result;
    });
  }
}

/**
 * A batch's body, gathered whole: in a pooled 1 MiB chunk when it fits (a fresh buffer per batch
 * is memory V8 counts against its heap: a stream of batches then paid for major collections),
 * else in a buffer of its Content-Length. uWS holds the body to its Content-Length.
 */
class BatchBody implements BodySink {
  lastActivityMs = Date.now();
  private buffer: Buffer | undefined;
  private pooled = false;
  private received = 0;

  constructor(
    private readonly pool: BufferPool,
    private readonly length: number,
  ) {
    if (length <= CHUNK_BYTES) {
      this.buffer = pool.tryAcquire();
      this.pooled = this.buffer !== undefined;
    }
    this.buffer ??= Buffer.allocUnsafe(length);
  }

  write(bytes: Uint8Array): void {
    if (this.received + bytes.length > this.length) throw invalidArgument(`body longer than its Content-Length of ${this.length} bytes`);
    // Native memcpy: set() into a pool buffer (shared memory) is V8's slow relaxed copy.
    copyBytes(bytes, this.buffer!, this.received);
    this.received += bytes.length;
    this.lastActivityMs = Date.now();
  }

  /** The body (valid until discard()). */
  bytes(): Buffer {
    if (this.received !== this.length) throw invalidArgument(`body of ${this.received} bytes does not match its Content-Length of ${this.length}`);
    return this.buffer!.subarray(0, this.received);
  }

  discard(): Promise<void> {
    const b = this.buffer;
    this.buffer = undefined;
    if (b && this.pooled) this.pool.release(b);
    return Promise.resolve();
  }
}
