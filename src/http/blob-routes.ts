/**
 * Variant B blob routes: decode the request, call the engine, encode the answer. No storage rule
 * lives here.
 */
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, notFound, payloadTooLarge, unavailable, invalidArgument } from '../errors/errors.js';
import { formatBlobId, parseBlobId } from '../engine/blob-id.js';
import type { BlobMeta, Engine, PutResult } from '../engine/engine.js';
import { Location } from '../index/entry.js';
import { parseLabelsHeader } from '../engine/labels.js';
import { checkPlacement, parsePolicy } from '../engine/policy.js';
import { sendBlobFile } from './download.js';
import { parseStoreJson } from './json-body.js';
import { type Exchange, flowOf, newExchange, sendError, sendJson } from './reply.js';
import { BlobWriter } from '../service/blob-writer.js';
import type { HttpRequest, HttpResponse } from './uws.js';

type BodyKind = 'raw' | 'json';

function bodyKind(contentType: string): BodyKind {
  const media = contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (media === '' || media === 'application/octet-stream') return 'raw';
  if (media === 'application/json') return 'json';
  throw new BlobstoreError(
    'unsupported_media_type',
    `unsupported Content-Type ${JSON.stringify(media)}: send application/octet-stream (raw bytes) or application/json`,
  );
}

function contentLengthOf(header: string): number | undefined {
  if (header === '') return undefined;
  if (!/^\d{1,16}$/.test(header)) throw invalidArgument('invalid Content-Length');
  return Number(header);
}

interface Receiving {
  upload: BlobWriter;
  x: Exchange;
  finish(): void;
}

export class BlobRoutes {
  readonly uploads = new Set<Receiving>();
  /** Requests being worked on (graceful shutdown waits for them). */
  inflight = 0;
  private storesInFlight = 0;

  constructor(
    private readonly engine: Engine,
    private readonly config: NodeConfig,
  ) {}

  private track(x: Exchange, work: Promise<void>): void {
    this.inflight++;
    work.catch((err: unknown) => sendError(x, err)).finally(() => this.inflight--);
  }

  readonly store = (res: HttpResponse, req: HttpRequest): void => {
    const x = newExchange(res);
    let kind: BodyKind;
    let upload: BlobWriter;
    let policyHeader: string;
    let labels: Buffer;
    try {
      kind = bodyKind(req.getHeader('content-type'));
      policyHeader = req.getHeader('x-blobstore-policy');
      const policy = parsePolicy(policyHeader);
      labels = kind === 'raw' ? parseLabelsHeader(req.getHeader('x-blobstore-labels'), this.config) : Buffer.alloc(0);
      if (kind === 'raw') checkPlacement(policy, 1);
      const length = contentLengthOf(req.getHeader('content-length'));
      const limit = kind === 'raw' ? this.config.maxBlobBytes : this.config.maxJsonBodyBytes;
      if (length !== undefined && length > limit) throw payloadTooLarge(`body of ${length} bytes exceeds the limit of ${limit} bytes`);
      if (this.storesInFlight >= this.config.maxConcurrentUploads) throw unavailable('too many uploads in progress; retry shortly', 1);
      upload = new BlobWriter(flowOf(x), this.engine, this.config, length, limit, kind === 'raw');
    } catch (err) {
      // The body still comes: read and drop it so the client gets to read the answer.
      res.onData(() => undefined);
      return sendError(x, err, 'drain');
    }
    // Receiving bodies are swept when idle; stores count against the limit until answered.
    this.storesInFlight++;
    this.inflight++;
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      this.uploads.delete(entry);
      this.storesInFlight--;
      this.inflight--;
    };
    const entry: Receiving = { upload, x, finish };
    this.uploads.add(entry);
    x.onAbort = () => {
      finish();
      void upload.discard();
    };
    res.onData((ab, isLast) => {
      if (x.done || x.aborted) return;
      try {
        upload.write(new Uint8Array(ab));
      } catch (err) {
        x.onAbort = undefined;
        finish();
        void upload.discard();
        return sendError(x, err, 'drain');
      }
      if (!isLast) return;
      this.uploads.delete(entry);
      x.onAbort = () => void upload.discard();
      void this.complete(x, upload, kind, policyHeader, labels).finally(finish);
    });
  };

  private async complete(x: Exchange, upload: BlobWriter, kind: BodyKind, policyHeader: string, labels: Buffer): Promise<void> {
    try {
      let result: PutResult;
      if (kind === 'raw') {
        result = await upload.finish({ policy: parsePolicy(policyHeader), labels });
      } else {
        const request = parseStoreJson(upload.inMemory()!, policyHeader, this.config);
        checkPlacement(request.policy, 1);
        result = await BlobWriter.storeBuffer(this.engine, request.data, request);
      }
      sendJson(x, result.created ? 201 : 200, `{"id":"${formatBlobId(result.id)}","size":${result.size}}`);
    } catch (err) {
      await upload.discard();
      sendError(x, err);
    }
  }

  readonly get = (res: HttpResponse, req: HttpRequest): void => {
    let meta: BlobMeta;
    try {
      meta = this.lookup(req.getParameter(0));
      // Small records are read, verified and answered right here: no await, no abort handler.
      const data = meta.location === Location.SEGMENT ? this.engine.readInlineSync(meta) : undefined;
      if (data) {
        this.writeBlobHead(res, meta);
        res.end(data);
        return;
      }
    } catch (err) {
      return sendError(newExchange(res), err);
    }
    const x = newExchange(res);
    this.track(x, this.send(x, meta));
  };

  private async send(x: Exchange, meta: BlobMeta): Promise<void> {
    if (meta.location === Location.FILE) return sendBlobFile(x, this.engine, meta, (ex) => this.writeBlobHead(ex.res, meta));
    const data = await this.engine.readInline(meta);
    if (x.aborted) return;
    x.done = true;
    x.res.cork(() => {
      this.writeBlobHead(x.res, meta);
      x.res.end(data);
    });
  }

  private writeBlobHead(res: HttpResponse, meta: BlobMeta): void {
    res
      .writeStatus('200 OK')
      .writeHeader('Content-Type', 'application/octet-stream')
      .writeHeader('X-Blobstore-Blob-Size', String(meta.size))
      .writeHeader('X-Blobstore-Created-At', meta.createdAtNs.toString())
      .writeHeader('X-Blobstore-Policy', String(meta.policy));
  }

  private lookup(idText: string): BlobMeta {
    const id = parseBlobId(idText);
    const meta = this.engine.stat(id);
    if (!meta) throw notFound(`blob ${idText} not found`);
    return meta;
  }

  /**
   * HEAD answers the GET headers without a body. This uWS build sends a body on HEAD if end() is
   * given one and crashes on endWithoutBody(length), so Content-Length is written by hand.
   */
  readonly head = (res: HttpResponse, req: HttpRequest): void => {
    let meta: BlobMeta | undefined;
    let status = '404 Not Found';
    try {
      meta = this.lookup(req.getParameter(0));
    } catch (err) {
      if (err instanceof BlobstoreError && err.status === 400) status = '400 Bad Request';
    }
    if (meta) {
      this.writeBlobHead(res, meta);
      res.writeHeader('Content-Length', String(meta.size)).endWithoutBody();
    } else res.writeStatus(status).writeHeader('Content-Length', '0').endWithoutBody();
  };

  readonly delete = (res: HttpResponse, req: HttpRequest): void => {
    const x = newExchange(res);
    let id: Buffer;
    try {
      id = parseBlobId(req.getParameter(0));
    } catch (err) {
      return sendError(x, err);
    }
    this.track(x, this.engine.delete(id).then(() => sendJson(x, 200, '{"deleted":true}')));
  };

  readonly list = (res: HttpResponse, req: HttpRequest): void => {
    const x = newExchange(res);
    try {
      const limit = this.pageSize(req.getQuery('limit') ?? '');
      const cursor = req.getQuery('cursor') ?? '';
      const page = this.engine.list(req.getQuery('prefix') ?? '', cursor === '' ? undefined : cursor, limit);
      let body = '{"ids":[';
      for (let i = 0; i < page.ids.length; i++) body += (i ? ',"' : '"') + formatBlobId(page.ids[i]!) + '"';
      body += page.hasMore ? `],"next_cursor":"${page.nextCursor}","has_more":true}` : '],"has_more":false}';
      sendJson(x, 200, body);
    } catch (err) {
      sendError(x, err);
    }
  };

  private pageSize(text: string): number {
    if (text === '') return this.config.listDefaultLimit;
    if (!/^[-+]?\d{1,10}$/.test(text.trim())) throw invalidArgument(`invalid limit ${JSON.stringify(text.slice(0, 40))}: expected an integer`);
    const n = Number(text);
    if (n > 2 ** 31 - 1 || n < -(2 ** 31)) throw invalidArgument('invalid limit: out of int32 range');
    if (n <= 0) return this.config.listDefaultLimit;
    return Math.min(n, this.config.listMaxLimit);
  }

  /** Aborts uploads that sent nothing for bodyIdleTimeoutMs (slow or stalled clients). */
  sweepIdle(nowMs: number): void {
    for (const entry of this.uploads) {
      if (nowMs - entry.upload.lastActivityMs < this.config.bodyIdleTimeoutMs) continue;
      entry.finish();
      entry.x.onAbort = undefined;
      void entry.upload.discard();
      sendError(entry.x, new BlobstoreError('request_timeout', `request body idle for over ${this.config.bodyIdleTimeoutMs} ms`), 'now');
    }
  }
}
