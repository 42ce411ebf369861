/**
 * Blob routes of both variants: decode the request, call the BlobService, encode the answer with
 * the node's Wire. No storage rule lives here. Every route asks the auth gate first.
 */
import { scopeOf } from '../auth/access.js';
import type { Scope, Gate } from '../auth/gate.js';
import type { NodeConfig } from '../config/settings.js';
import { isLowerHexId, parseIdPrefix } from '../blob/id.js';
import { BlobstoreError, invalidArgument, notFound, payloadTooLarge } from '../errors/errors.js';
import type { BlobMeta, PutResult } from '../blob/meta.js';
import { parseLabelsHeader } from '../blob/labels.js';
import { parsePolicy, type Policy } from '../blob/policy.js';
import { traceparentOf } from '../log/access-log.js';
import type { Logger } from '../log/logger.js';
import type { BlobService } from '../service/blob-service.js';
import { type BlobWriter } from '../service/blob-writer.js';
import type { Located } from '../service/blob-service.js';
import { answerHeadOf } from './blob-head.js';
import { AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, IF_NONE_MATCH, RANGE, TRACEPARENT, X_BLOBSTORE_LABELS, X_BLOBSTORE_POLICY, X_BLOBSTORE_SIZE } from './header-names.js';
import { sendBody } from './download.js';
import { type Intake, isChunked } from './intake.js';
import { parseStoreJson } from './json-body.js';
import { type ByteRange, parseRange } from './range.js';
import { type Exchange, flowOf, newExchange, sendError, sendJson, writeError } from './reply.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import type { Wire } from './wire.js';
import { SmallStores } from './small-store.js';
import { type Ticks, ticks } from '../metrics/clock.js';

// The scopes of these routes (src/auth/access.ts).
const STORE = scopeOf('POST /v1/blobs');
const READ_BLOB = scopeOf('GET /v1/blobs/:id');
const HEAD_BLOB = scopeOf('HEAD /v1/blobs/:id');
const STAT = scopeOf('GET /v1/blobs/:id/stat');
const DELETE = scopeOf('DELETE /v1/blobs/:id');
const LIST = scopeOf('GET /v1/blobs');

/** A JSON store carries its labels in the body. */
const NO_LABELS = Buffer.alloc(0);

type BodyKind = 'raw' | 'json';

function bodyKind(contentType: string): BodyKind {
  // The common case without splitting the header (a split is an array and strings per store).
  if (contentType === 'application/octet-stream') return 'raw';
  const media = contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (media === '' || media === 'application/octet-stream') return 'raw';
  if (media === 'application/json') return 'json';
  throw new BlobstoreError(
    'unsupported_media_type',
    `unsupported Content-Type ${JSON.stringify(media)}: send application/octet-stream (raw bytes) or application/json`,
  );
}

/** Content-Length's value: 1-16 decimal digits (a loop: a RegExp test allocated per store). */
export function contentLengthOf(header: string): number | undefined {
  if (header === '') return undefined;
  if (header.length > 16) throw invalidArgument('invalid Content-Length');
  let n = 0;
  for (let i = 0; i < header.length; i++) {
    const d = header.charCodeAt(i) - 48;
    if (d < 0 || d > 9) throw invalidArgument('invalid Content-Length');
    n = n * 10 + d;
  }
  return n;
}

/** X-Blobstore-Size of a chunked store: the body's length in decimal, or absent. */
function declaredSizeOf(header: string): number | undefined {
  if (header === '') return undefined;
  if (!/^\d{1,16}$/.test(header)) throw invalidArgument('invalid X-Blobstore-Size: the body\'s length in bytes, in decimal');
  return Number(header);
}

/** Variant A's blob answer is `{"data":"<base64>","meta":<BlobMeta>}`. */
const JSON_BLOB_OPEN = '{"data":"';
const JSON_BLOB_META = '","meta":';

/** The strong validator of a blob: its content checksum in hex. */
const etagOf = (meta: BlobMeta): string => `"${meta.checksum.toString('hex')}"`;

/** If-None-Match: `*` or a list of (possibly weak) entity tags. */
function matchesEtag(header: string, etag: string): boolean {
  if (header === '') return false;
  for (const part of header.split(',')) {
    const tag = part.trim().replace(/^W\//, '');
    if (tag === '*' || tag === etag) return true;
  }
  return false;
}

/** Content-Type's value followed by the blob's other headers (see BlobRoutes.writeBlobHead). */
function blobHeaders(etag: string, size: number, createdAtNs: bigint, policy: number): string {
  return (
    `application/octet-stream\r\nAccept-Ranges: bytes\r\nETag: ${etag}\r\nX-Blobstore-Blob-Size: ${size}` +
    `\r\nX-Blobstore-Created-At: ${createdAtNs}\r\nX-Blobstore-Policy: ${policy}`
  );
}

export class BlobRoutes {
  readonly wire: Wire;
  /** The small store's fast path (small-store.ts). */
  private readonly smallStores: SmallStores;
  /** The id of the GET being answered from the read cache (answerCached): parsed in place. */
  private readonly idScratch = Buffer.alloc(16);

  constructor(
    private readonly service: BlobService,
    private readonly config: NodeConfig,
    private readonly gate: Gate,
    private readonly intake: Intake,
    wire: Wire,
    readonly log: Logger,
  ) {
    this.wire = wire;
    this.smallStores = new SmallStores(service, config, intake, wire, log);
  }

  /** The largest blob the small store's fast path takes. */
  get smallMaxBytes(): number {
    return this.smallStores.maxBytes;
  }

  /** The gate, in every route before anything else. */
  authorize(req: HttpRequest, scope: Scope): void {
    if (this.gate.enabled) this.gate.check(req.getHeader(AUTHORIZATION), scope);
  }

  readonly store = (res: HttpResponse, req: HttpRequest): void => {
    const start = ticks();
    // No closure here: variables a closure captures live in a context object allocated on every
    // call, and the small store's path is allocation-free up to its log record (storeLong has them).
    let kind: BodyKind;
    let policyHeader: string;
    let policy: Policy;
    let labels: Buffer;
    let length: number | undefined;
    let chunked: boolean;
    try {
      this.authorize(req, STORE);
      kind = bodyKind(req.getHeader(CONTENT_TYPE));
      policyHeader = req.getHeader(X_BLOBSTORE_POLICY);
      policy = parsePolicy(policyHeader);
      labels = kind === 'raw' ? parseLabelsHeader(req.getHeader(X_BLOBSTORE_LABELS), this.config) : NO_LABELS;
      if (kind === 'raw') this.service.checkPolicy(policy);
      length = contentLengthOf(req.getHeader(CONTENT_LENGTH));
      const limit = kind === 'raw' ? this.config.maxBlobBytes : this.config.maxJsonBodyBytes;
      chunked = isChunked(req);
      // A chunked raw body may declare its length (a Content-Length of ten digits is refused by
      // the HTTP layer): a large EC store then sends its columns as the body arrives.
      if (kind === 'raw' && chunked && length === undefined) length = declaredSizeOf(req.getHeader(X_BLOBSTORE_SIZE));
      if (length !== undefined && length > limit) throw payloadTooLarge(`body of ${length} bytes exceeds the limit of ${limit} bytes`);
      if (kind === 'raw' && length !== undefined && !chunked && length <= this.smallStores.maxBytes && this.service.takesSmallStore(policy)) {
        return this.smallStores.begin(res, policy, labels, length, start);
      }
    } catch (err) {
      return this.refuseStore(res, err);
    }
    this.storeLong(res, kind, policyHeader, policy, labels, length, chunked, start);
  };

  /** A store through BlobWriter (intake.ts): chunked, large, JSON, or of a policy that replicates. */
  private storeLong(
    res: HttpResponse, kind: BodyKind, policyHeader: string, policy: Policy, labels: Buffer, length: number | undefined, chunked: boolean, start: Ticks,
  ): void {
    const limit = kind === 'raw' ? this.config.maxBlobBytes : this.config.maxJsonBodyBytes;
    let x: Exchange | undefined;
    let release = (): void => undefined;
    try {
      x = newExchange(res, this.wire, this.log);
      release = this.intake.admit();
      const writer = kind === 'raw' ? this.service.openWriter(flowOf(x), limit, length, policy) : this.service.openBodyReader(flowOf(x), limit, length);
      const exchange = x;
      this.intake.receive(x, writer, release, start, chunked, () => this.complete(exchange, writer, kind, policyHeader, labels));
    } catch (err) {
      release();
      this.refuseStore(res, err, x);
    }
  }

  /** A store refused before its body is read: answered, the body still read and dropped so the client gets to read the answer. */
  private refuseStore(res: HttpResponse, err: unknown, x: Exchange = newExchange(res, this.wire, this.log)): void {
    this.service.recordFailure('put', err);
    this.intake.drop(x);
    sendError(x, err, 'drain');
  }

  private async complete(x: Exchange, writer: BlobWriter, kind: BodyKind, policyHeader: string, labels: Buffer): Promise<void> {
    try {
      let result: PutResult;
      if (kind === 'raw') {
        result = await writer.finish({ policy: parsePolicy(policyHeader), labels });
      } else {
        const request = parseStoreJson(writer.inMemory()!, policyHeader, this.config);
        result = await this.service.put(request.data, request);
      }
      const start = ticks();
      sendJson(x, this.wire.putStatus(result), this.wire.putBody(result));
      this.service.recorder.stage('respond', start);
    } catch (err) {
      await writer.discard();
      if (kind === 'json') this.service.recordFailure('put', err);
      sendError(x, err);
    }
  }

  /** GET of a blob; HEAD too in variant A (variant B's HEAD is the metadata answer, `head`). */
  readonly get = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    const start = ticks();
    let found: Located | Promise<Located>;
    try {
      this.authorize(req, READ_BLOB);
      if (!head && this.answerCached(res, req, start)) return;
      found = this.service.locate(this.wire.parseId(req.getParameter(0)));
      // A small blob stored here is read, verified and answered right here: no await, no abort handler.
      if (!head && !(found instanceof Promise) && this.answerAtOnce(res, req, found, start)) return;
    } catch (err) {
      this.service.recordFailure('get', err);
      return sendError(newExchange(res, this.wire, this.log, head), err);
    }
    this.getLong(res, req, head, found);
  };

  /**
   * The rest of a GET: a condition, a range, a large or remote blob. Its own method: the closures
   * here would make every GET allocate their context, the ones answered above too.
   */
  private getLong(res: HttpResponse, req: HttpRequest, head: boolean, found: Located | Promise<Located>): void {
    // Headers are read now: the request object is gone once this handler returns.
    const conditions = {
      ifNoneMatch: req.getHeader('if-none-match'), range: this.wire.variant === 'b' ? req.getHeader('range') : '', ifRange: req.getHeader('if-range'),
      trace: req.getHeader(TRACEPARENT),
    };
    const x = newExchange(res, this.wire, this.log, head);
    this.intake.track(x, (async () => {
      let meta: Located;
      try {
        meta = await found;
      } catch (err) {
        this.service.recordFailure('get', err);
        throw err;
      }
      if (x.aborted) return;
      // A read from the peer that holds the blob carries the client's trace context on.
      if (meta.peer !== undefined && conditions.trace !== '') {
        const traceparent = traceparentOf(conditions.trace);
        if (traceparent !== undefined) meta = { ...meta, traceparent };
      }
      const etag = etagOf(meta);
      if (matchesEtag(conditions.ifNoneMatch, etag)) {
        x.done = true;
        x.res.cork(() => this.notModified(x.res, etag));
        return;
      }
      if (head) return this.jsonBlobHead(x, meta, etag);
      const range = conditions.range === '' ? undefined : parseRange(conditions.range, conditions.ifRange, etag, meta.size);
      await (this.wire.variant === 'b' ? this.sendRaw(x, meta, range) : this.sendJsonBlob(x, meta));
    })());
  }

  /**
   * The GET of a small blob stored here (variant B), through the read cache: one index read in
   * place, two calls into uWS (the status line with every header, made once per cached record,
   * then the body); a hit allocates no object, closure or string of ours (test/get-alloc.test.ts),
   * a miss reads, verifies and caches the record first. A condition, a range, a large or remote
   * blob, a corrupt copy or an id in another spelling goes the long way.
   */
  private answerCached(res: HttpResponse, req: HttpRequest, start: Ticks): boolean {
    if (this.wire.variant !== 'b') return false;
    const text = req.getParameter(0);
    // Any other spelling goes the long way, to its 400 (variant B ids are lower-case hex only).
    if (text === undefined || !isLowerHexId(text)) return false;
    this.idScratch.write(text, 'hex');
    const rec = this.service.cachedLocal(this.idScratch);
    if (rec === undefined || req.getHeader(IF_NONE_MATCH) !== '' || req.getHeader(RANGE) !== '') return false;
    res.writeStatus(rec.answerHead ?? (rec.answerHead = answerHeadOf(rec)));
    res.end(rec.data);
    this.service.recordGet(start, rec.data.length);
    return true;
  }

  /**
   * The fast path of a GET of a blob stored here: 304, or a small blob answered at once. Returns
   * false when the answer must wait (a range or a large blob read from its file, or a corrupt copy
   * a replica stands in for).
   */
  private answerAtOnce(res: HttpResponse, req: HttpRequest, meta: Located, start: Ticks): boolean {
    const etag = etagOf(meta);
    if (matchesEtag(req.getHeader('if-none-match'), etag)) {
      this.notModified(res, etag);
      return true;
    }
    const rangeHeader = this.wire.variant === 'b' ? req.getHeader('range') : '';
    if (rangeHeader !== '' && parseRange(rangeHeader, req.getHeader('if-range'), etag, meta.size) !== undefined) return false;
    const data = this.service.readSmallSync(meta);
    if (!data) return false;
    res.cork(() => {
      if (this.wire.variant === 'b') {
        this.writeBlobHead(res, meta, '200 OK', etag);
        res.end(data);
      } else this.writeJsonBlob(res, meta, data, etag);
    });
    this.service.recordGet(start, meta.size);
    return true;
  }

  private notModified(res: HttpResponse, etag: string): void {
    res.cork(() => res.writeStatus('304 Not Modified').writeHeader('ETag', etag).endWithoutBody());
  }

  /** Variant B: the bytes (or a range of them), chunk by chunk with backpressure. */
  private async sendRaw(x: Exchange, meta: Located, range: ByteRange | undefined): Promise<void> {
    const total = range ? range.end - range.start : meta.size;
    const head = (ex: Exchange): void => {
      this.writeBlobHead(ex.res, meta, range ? '206 Partial Content' : '200 OK');
      if (range) ex.res.writeHeader('Content-Range', `bytes ${range.start}-${range.end - 1}/${meta.size}`);
    };
    await sendBody(x, total, head, (sink) => this.service.stream(meta, sink, range));
  }

  /** Variant A: {data, meta} as JSON; blobs larger than a JSON body go through the stream. */
  private async sendJsonBlob(x: Exchange, meta: Located): Promise<void> {
    const { data } = await this.service.read(meta.id, this.config.maxJsonBodyBytes);
    if (x.aborted) return;
    x.done = true;
    x.res.cork(() => this.writeJsonBlob(x.res, meta, data));
  }

  private writeJsonBlob(res: HttpResponse, meta: BlobMeta, data: Buffer, etag = etagOf(meta)): void {
    const body = `${JSON_BLOB_OPEN}${data.toString('base64')}${JSON_BLOB_META}${this.wire.metaJson(meta)}}`;
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').writeHeader('ETag', etag).end(body);
  }

  /**
   * Variant A's HEAD of a blob: the head of its JSON answer, sized without reading the bytes (the
   * same 413 as GET for a blob too large for one JSON body; its message is BlobService.read's).
   */
  private jsonBlobHead(x: Exchange, meta: Located, etag: string): void {
    const max = this.config.maxJsonBodyBytes;
    if (meta.size > max) throw payloadTooLarge(`blob of ${meta.size} bytes is larger than ${max} bytes for one message: use the stream`);
    const length = JSON_BLOB_OPEN.length + Math.ceil(meta.size / 3) * 4 + JSON_BLOB_META.length + Buffer.byteLength(this.wire.metaJson(meta)) + 1;
    x.done = true;
    x.res.cork(() => {
      x.res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').writeHeader('ETag', etag);
      x.res.writeHeader('Content-Length', String(length)).endWithoutBody();
    });
  }

  /**
   * The status line and the blob's headers. They go out as one writeHeader call: each call
   * crosses into uWS, and six of them cost a 4 KiB GET about 5% of its rate (measured A/B with
   * wrk). Every value is ours (a hex digest, numbers), never the client's, so the CRLFs between
   * the header lines are the only ones in it.
   */
  private writeBlobHead(res: HttpResponse, meta: BlobMeta, status: string, etag = etagOf(meta)): void {
    res.writeStatus(status).writeHeader('Content-Type', blobHeaders(etag, meta.size, meta.createdAtNs, meta.policy));
  }

  /**
   * HEAD answers the GET headers without a body. This uWS build sends a body on HEAD if end() is
   * given one and crashes on endWithoutBody(length), so Content-Length is written by hand.
   */
  readonly head = (res: HttpResponse, req: HttpRequest): void => {
    let id: Buffer;
    let found: Located | Promise<Located | undefined> | undefined;
    try {
      this.authorize(req, HEAD_BLOB);
      id = this.wire.parseId(req.getParameter(0));
      found = this.service.statLocal(id) ?? this.service.stat(id);
    } catch (err) {
      return this.headFailed(res, err);
    }
    if (!(found instanceof Promise)) return this.headAnswer(res, id, found);
    let aborted = false;
    res.onAborted(() => (aborted = true));
    found.then(
      (meta) => !aborted && this.headAnswer(res, id, meta),
      (err: unknown) => !aborted && this.headFailed(res, err),
    );
  };

  /** Variant B's HEAD: the blob's headers, or a 404 (the error answer, without its body). */
  private headAnswer(res: HttpResponse, id: Buffer, meta: Located | undefined): void {
    if (!meta) return writeError(res, notFound(`blob ${id.toString('hex')} not found`), this.wire, this.log, true);
    res.cork(() => {
      this.writeBlobHead(res, meta, '200 OK');
      res.writeHeader('Content-Length', String(meta.size)).endWithoutBody();
    });
  }

  private headFailed(res: HttpResponse, err: unknown): void {
    this.service.recordFailure('stat', err);
    writeError(res, err, this.wire, this.log, true);
  }

  /** GET /v1/blobs/{id}/stat: 200 with exists false for a missing blob. */
  readonly stat = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    const x = newExchange(res, this.wire, this.log, head);
    let id: Buffer;
    try {
      this.authorize(req, STAT);
      id = this.wire.parseId(req.getParameter(0));
    } catch (err) {
      this.service.recordFailure('stat', err);
      return sendError(x, err);
    }
    const answer = (meta: Located | undefined): void => sendJson(x, 200, meta ? `{"exists":true,"meta":${this.wire.metaJson(meta)}}` : '{"exists":false}');
    const here = this.service.statLocal(id);
    if (here) return answer(here);
    this.intake.track(x, this.service.stat(id).then(answer, (err: unknown) => {
      this.service.recordFailure('stat', err);
      throw err;
    }));
  };

  readonly delete = (res: HttpResponse, req: HttpRequest): void => {
    const x = newExchange(res, this.wire, this.log);
    let id: Buffer;
    try {
      this.authorize(req, DELETE);
      id = this.wire.parseId(req.getParameter(0));
    } catch (err) {
      this.service.recordFailure('delete', err);
      return sendError(x, err);
    }
    this.intake.track(x, this.service.delete(id).then(() => sendJson(x, 200, '{"deleted":true}')));
  };

  readonly list = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    const x = newExchange(res, this.wire, this.log, head);
    try {
      this.authorize(req, LIST);
      const limit = this.parseLimit(req.getQuery('limit') ?? '');
      const cursor = req.getQuery('cursor') ?? '';
      // The prefix of the ids' hex form, read as ids are (variant B: lower case only).
      const prefix = parseIdPrefix(req.getQuery('prefix') ?? '', this.wire.variant === 'b');
      const page = this.service.list(prefix, cursor === '' ? undefined : cursor, limit);
      sendJson(x, 200, this.wire.listBody(page));
    } catch (err) {
      this.service.recordFailure('list', err);
      sendError(x, err);
    }
  };

  /** The `limit` query as an int32 (0 when absent); the service turns it into a page size. */
  private parseLimit(text: string): number {
    if (text === '') return 0;
    if (!/^[-+]?\d{1,10}$/.test(text.trim())) throw invalidArgument(`invalid limit ${JSON.stringify(text.slice(0, 40))}: expected an integer`);
    const n = Number(text);
    if (n > 2 ** 31 - 1 || n < -(2 ** 31)) throw invalidArgument('invalid limit: out of int32 range');
    return n;
  }
}
