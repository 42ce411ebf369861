/**
 * A client of the blob API (variant B, the default), for ingest: stores spread over the nodes it
 * is given, keep-alive connections pooled per node (undici), bodies streamed both ways, failed
 * calls retried with back-off on another node, and every download checked against its id.
 *
 *   put ──▶ next node (round robin) ──▶ 2xx: the id     503/507/408, a connection error, a timeout
 *                                                         ──▶ back-off (Retry-After, else 2^n x base
 *                                                              with jitter) ──▶ the next node
 *   get ──▶ a node ──▶ bytes hashed as they come ──▶ BLAKE3(bytes)[0..16) = id, or BlobIdMismatch
 *
 * Content addressing makes a retried store safe: the same bytes are the same blob. A body is
 * retried only when it can be sent again (bytes in memory, or a factory that opens it anew).
 */
import { Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type { Dispatcher } from 'undici';
import { BATCH_CONTENT_TYPE, BATCH_FRAME_HEAD_BYTES, BATCH_PATH, splitBatch, writeFrameHead } from '../blob/batch.js';
import { BlobClientError, BlobIdMismatch, type ClientErrorKind } from './errors.js';
import { BATCH_MAX_BLOBS, BATCH_MAX_BYTES } from './limits.js';
import { RawConnectionError, RawPool } from './raw-pool.js';

export interface BlobClientOptions {
  /** Base URLs of the nodes (http://host:port); stores are spread over them, reads fail over. */
  urls: string | readonly string[];
  /** Bearer token (a node with AuthTokensFile). */
  token?: string;
  /** Attempts after the first, over the nodes (default 5). */
  retries?: number;
  /** First back-off; it doubles per attempt, with ±50% jitter (default 100 ms, at most 5 s). */
  retryBaseMs?: number;
  /** A call with no progress for this long fails (and is retried): headers, or body bytes (default 30 s). */
  timeoutMs?: number;
  /** Keep-alive connections per node (default 64). */
  connections?: number;
  /** PEM of the CA that signs the nodes' certificates (https URLs). */
  ca?: string | Buffer;
}

/**
 * A body: bytes, or a factory that opens the stream anew for each attempt (retried as bytes are),
 * or a stream itself (standard input: it can be read once, so it is sent once, never retried).
 */
export type Body = Uint8Array | Readable | AsyncIterable<Uint8Array> | (() => Readable | AsyncIterable<Uint8Array>);

export interface PutOptions {
  /** 0-5 or a name (REPLICA3, EC42, ...); the node's default (REPLICA3) when absent. */
  policy?: number | string;
  labels?: Readonly<Record<string, string>>;
  /** The body's length when it is a stream (sent as Content-Length; else chunked). */
  size?: number;
  /** Bytes of the body sent so far, as they go (for a progress display). */
  onProgress?: (bytes: number) => void;
}

export interface PutResult {
  id: string;
  size: number;
  /** False when the node already held these bytes. */
  created: boolean;
  /** The node that took it. */
  url: string;
}

export interface BlobStat {
  id: string;
  size: number;
  /** Unix nanoseconds. */
  createdAtNs: bigint;
  policy: number;
}

/** A batch body's buffer is at least this large, so that buffers fit the batches after them. */
const BATCH_BUFFER_MIN_BYTES = 1024 * 1024;

/**
 * undici and the hashing addon, loaded on first use: a command that only stores small files
 * needs neither, and they were half of its start (about 0.1 s).
 */
const requireCjs = createRequire(import.meta.url);
let undici: typeof import('undici') | undefined;
const undiciOf = (): typeof import('undici') => (undici ??= requireCjs('undici') as typeof import('undici'));
const request: typeof import('undici').request = (url, options) => undiciOf().request(url, options);
const hashing = (): Promise<typeof import('../hash/blake3.js')> => import('../hash/blake3.js');

/** The HTTP API takes a Content-Length of at most nine digits; larger bodies go chunked. */
const CONTENT_LENGTH_MAX = 999_999_999;
const LOWER_HEX_ID = /^[0-9a-f]{32}$/;
/** Statuses worth another attempt (another node, or later): overload, a full disk, a stalled body. */
const RETRY_STATUSES = new Set([408, 502, 503, 504, 507]);

/** A store failure that an attempt on another node may not have. */
function retryable(err: unknown): boolean {
  if (err instanceof BlobClientError) return err.kind === 'unavailable' || err.kind === 'network' || err.kind === 'timeout';
  return false;
}

export class BlobClient {
  readonly urls: readonly string[];
  private agent: Dispatcher | undefined;
  private readonly agentOptions: import('undici').Agent.Options;
  private readonly retries: number;
  private readonly retryBaseMs: number;
  private readonly headers: Record<string, string>;
  /** Per node: the connections stores of bodies in memory go over (raw-pool.ts). */
  private readonly raw: Map<string, RawPool>;
  private next = 0;
  /** Bodies of batches answered, for the next ones (batchBuffer); as many as were in flight at once. */
  private readonly batchBuffers: Buffer[] = [];
  /** A node answered the batch route 404 or 501 (it predates it): blobs go one by one. */
  private noBatch = false;

  constructor(options: BlobClientOptions) {
    const urls = (typeof options.urls === 'string' ? options.urls.split(',') : options.urls).map((u) => normalizeUrl(u));
    if (urls.length === 0) throw new BlobClientError('usage', 'no node URL given');
    this.urls = urls;
    this.retries = options.retries ?? 5;
    this.retryBaseMs = options.retryBaseMs ?? 100;
    const timeout = options.timeoutMs ?? 30_000;
    this.agentOptions = {
      connections: options.connections ?? 64,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      keepAliveTimeout: 30_000,
      connect: options.ca ? { ca: options.ca } : undefined,
    };
    this.headers = options.token ? { authorization: `Bearer ${options.token}` } : {};
    this.raw = new Map(urls.map((u) => [u, new RawPool(u, timeout, options.ca)]));
  }

  /** Stores a blob; resolves with its id once a node answered 2xx (the bytes durable there). */
  async put(body: Body, options: PutOptions = {}): Promise<PutResult> {
    const headers = this.storeHeaders(options, 'application/octet-stream');
    if (body instanceof Uint8Array && body.length <= CONTENT_LENGTH_MAX) return this.putBytes(body, headers, options);
    const size = body instanceof Uint8Array ? body.length : options.size;
    // A chunked body still says its length: a large EC store then streams its columns as it arrives.
    if (size !== undefined) headers[size <= CONTENT_LENGTH_MAX ? 'content-length' : 'x-blobstore-size'] = String(size);
    const again = body instanceof Uint8Array || typeof body === 'function';
    return this.attempt(again ? this.retries : 0, true, async (url) => {
      let sent = 0;
      const source = body instanceof Uint8Array ? body : Readable.from(typeof body === 'function' ? body() : body);
      const counted = options.onProgress && !(source instanceof Uint8Array) ? Readable.from(countBytes(source, (n) => options.onProgress!((sent += n)))) : source;
      const res = await request(`${url}/v1/blobs`, { method: 'POST', headers, body: counted, dispatcher: this.dispatcher });
      const text = await res.body.text();
      if (res.statusCode !== 200 && res.statusCode !== 201) throw errorOf(res.statusCode, text, `store on ${url}`, res.headers);
      if (source instanceof Uint8Array) options.onProgress?.(source.length);
      const answer = JSON.parse(text) as { id: string; size: number };
      return { id: answer.id, size: Number(answer.size), created: res.statusCode === 201, url };
    });
  }

  /**
   * Stores blobs held in memory, many per request (POST /v1/blobs/batch: one request, one send
   * and one group commit on the node for up to BATCH_MAX_BLOBS of them); resolves with their
   * results in the order given once every one is durable on a node. A batch is retried whole
   * (the same bytes are the same blobs). A node without the batch route (404, 501) takes them
   * one by one. `onProgress` gets the bytes of the blobs stored so far.
   */
  async putMany(blobs: readonly Uint8Array[], options: PutOptions = {}): Promise<PutResult[]> {
    const { onProgress, ...rest } = options;
    const results: PutResult[] = [];
    let sent = 0;
    for (let from = 0; from < blobs.length; ) {
      let to = from;
      let bytes = 0;
      while (to < blobs.length && to - from < BATCH_MAX_BLOBS && (to === from || bytes + blobs[to]!.length <= BATCH_MAX_BYTES)) bytes += BATCH_FRAME_HEAD_BYTES + blobs[to++]!.length;
      const body = this.batchBuffer(bytes);
      let at = 0;
      for (let i = from; i < to; i++) {
        at = writeFrameHead(body, at, blobs[i]!.length);
        body.set(blobs[i]!, at);
        at += blobs[i]!.length;
      }
      results.push(...(await this.putFramed(body, to - from, rest)));
      // Answered: the node read all of it, and nothing still writes from it.
      this.batchBuffers.push(Buffer.from(body.buffer));
      for (; from < to; from++) sent += blobs[from]!.length;
      onProgress?.(sent);
    }
    return results;
  }

  /**
   * Stores a batch body framed by the caller (src/blob/batch.ts), `count` blobs: for bytes read
   * straight into place, as `blobstore put` does. `body` must stay as it is until this settles.
   * Retried, and taken one by one by a node without the batch route, as putMany.
   */
  async putFramed(body: Uint8Array, count: number, options: PutOptions = {}): Promise<PutResult[]> {
    if (!this.noBatch && count > 1) {
      const results = await this.sendBatch(body, count, options);
      if (results) return results;
      this.noBatch = true;
    }
    const blobs = splitBatch(body, count);
    if (typeof blobs === 'string' || blobs.length !== count) throw new BlobClientError('usage', `not a batch body of ${count} blobs${typeof blobs === 'string' ? `: ${blobs}` : ''}`);
    return Promise.all(blobs.map((b) => this.put(b, options)));
  }

  /** One batch request, retried; undefined when the node has no batch route (404, 501). */
  private sendBatch(body: Uint8Array, count: number, options: PutOptions): Promise<PutResult[] | undefined> {
    const lines = headerLines(this.storeHeaders(options, BATCH_CONTENT_TYPE));
    return this.attempt(this.retries, true, async (url) => {
      let answer;
      try {
        answer = await this.raw.get(url)!.post(BATCH_PATH, lines, body);
      } catch (err) {
        throw networkError(err, url);
      }
      if (answer.status === 404 || answer.status === 501) return undefined;
      if (answer.status !== 200) throw errorOf(answer.status, answer.body, `batch store of ${count} blobs on ${url}`, answer.headers);
      const stored = (JSON.parse(answer.body) as { blobs: { id: string; size: number; created: boolean }[] }).blobs;
      if (stored.length !== count) throw new BlobClientError('failed', `batch store on ${url}: ${stored.length} results for ${count} blobs`);
      return stored.map((r) => ({ id: r.id, size: Number(r.size), created: r.created, url }));
    });
  }

  /**
   * A buffer for a batch's body: one of the last batches' when it is large enough (a fresh one
   * per batch cost a page fault per 4 KiB on first touch, in kernel time).
   */
  private batchBuffer(bytes: number): Buffer {
    const at = this.batchBuffers.findIndex((b) => b.length >= bytes);
    if (at >= 0) return this.batchBuffers.splice(at, 1)[0]!.subarray(0, bytes);
    return Buffer.allocUnsafeSlow(Math.max(bytes, BATCH_BUFFER_MIN_BYTES)).subarray(0, bytes);
  }

  /** A store's headers (the token, the body's type, the policy and labels). */
  private storeHeaders(options: PutOptions, contentType: string): Record<string, string> {
    const headers: Record<string, string> = { ...this.headers, 'content-type': contentType };
    if (options.policy !== undefined) headers['x-blobstore-policy'] = String(options.policy);
    if (options.labels) headers['x-blobstore-labels'] = JSON.stringify(options.labels);
    return headers;
  }

  /** A store of bytes in memory, over the node's raw connections. */
  private putBytes(body: Uint8Array, headers: Record<string, string>, options: PutOptions): Promise<PutResult> {
    const lines = headerLines(headers);
    return this.attempt(this.retries, true, async (url) => {
      let answer;
      try {
        answer = await this.raw.get(url)!.post('/v1/blobs', lines, body);
      } catch (err) {
        throw networkError(err, url);
      }
      if (answer.status !== 200 && answer.status !== 201) throw errorOf(answer.status, answer.body, `store on ${url}`, answer.headers);
      options.onProgress?.(body.length);
      const stored = JSON.parse(answer.body) as { id: string; size: number };
      return { id: stored.id, size: Number(stored.size), created: answer.status === 201, url };
    });
  }

  /** The whole blob, checked against its id. */
  async get(id: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    await this.read(id, (chunk) => void parts.push(chunk));
    return Buffer.concat(parts);
  }

  /**
   * Streams the blob to `sink` chunk by chunk, hashing as it goes; rejects with BlobIdMismatch
   * when the bytes are not the id's (the sink has seen them: write to a temporary place, and keep
   * it only once this resolves). A node that fails before the first byte is retried on the next.
   */
  async read(id: string, sink: (chunk: Buffer) => void | Promise<void>, onProgress?: (bytes: number, total: number | undefined) => void): Promise<{ size: number }> {
    checkId(id);
    return this.attempt(this.retries, false, async (url) => {
      const res = await request(`${url}/v1/blobs/${id}`, { method: 'GET', headers: this.headers, dispatcher: this.dispatcher });
      if (res.statusCode !== 200) throw errorOf(res.statusCode, await res.body.text(), `read of ${id} from ${url}`, res.headers);
      const total = Number(res.headers['content-length'] ?? NaN);
      const { createHasher, ID_BYTES } = await hashing();
      const hasher = createHasher();
      let size = 0;
      try {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          hasher.update(chunk);
          size += chunk.length;
          await sink(chunk);
          onProgress?.(size, Number.isFinite(total) ? total : undefined);
        }
      } catch (err) {
        // Bytes already went to the sink: no retry from here.
        throw new BlobClientError('network', `read of ${id} from ${url} broke off after ${size} bytes: ${(err as Error).message}`, { cause: err, final: true });
      }
      if (Number.isFinite(total) && size !== total) throw new BlobClientError('network', `read of ${id} from ${url}: ${size} of ${total} bytes`, { final: true });
      const actual = hasher.digest().subarray(0, ID_BYTES).toString('hex');
      if (actual !== id) throw new BlobIdMismatch(id, actual, url);
      return { size };
    });
  }

  /** The blob's metadata, or undefined when no node has it. */
  async stat(id: string): Promise<BlobStat | undefined> {
    checkId(id);
    return this.attempt(this.retries, false, async (url) => {
      const res = await request(`${url}/v1/blobs/${id}`, { method: 'HEAD', headers: this.headers, dispatcher: this.dispatcher });
      await res.body.dump();
      if (res.statusCode === 404) return undefined;
      // A HEAD answer has no body to carry the node's message: the status says what it means.
      if (res.statusCode !== 200) throw errorOf(res.statusCode, HEAD_REASONS[res.statusCode] ?? '', `stat of ${id} on ${url}`, res.headers);
      const header = (name: string): string => String(res.headers[name] ?? '');
      return { id, size: Number(header('x-blobstore-blob-size')), createdAtNs: BigInt(header('x-blobstore-created-at') || '0'), policy: Number(header('x-blobstore-policy')) };
    });
  }

  /** Ids stored on the first node that answers (the list is a node's own, as the spec says), page by page. */
  async *list(options: { prefix?: string; pageSize?: number } = {}): AsyncIterable<string> {
    if (options.prefix !== undefined && !/^[0-9a-f]{0,32}$/.test(options.prefix)) {
      throw new BlobClientError('usage', `invalid prefix ${JSON.stringify(options.prefix.slice(0, 80))}: expected up to 32 lower-case hex characters`);
    }
    const url = this.urls[0]!;
    let cursor = '';
    for (;;) {
      const query = new URLSearchParams();
      if (options.prefix) query.set('prefix', options.prefix);
      if (options.pageSize) query.set('limit', String(options.pageSize));
      if (cursor) query.set('cursor', cursor);
      const page = await this.attempt(this.retries, false, async (u) => {
        const res = await request(`${u}/v1/blobs?${query}`, { method: 'GET', headers: this.headers, dispatcher: this.dispatcher });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw errorOf(res.statusCode, text, `list on ${u}`, res.headers);
        return JSON.parse(text) as { ids: string[]; next_cursor?: string; has_more: boolean };
      }, [url]);
      yield* page.ids;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** Deletes the blob on every node given (the spec's delete is local to a node). */
  async delete(id: string): Promise<void> {
    checkId(id);
    for (const url of this.urls) {
      await this.attempt(this.retries, false, async (u) => {
        const res = await request(`${u}/v1/blobs/${id}`, { method: 'DELETE', headers: this.headers, dispatcher: this.dispatcher });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw errorOf(res.statusCode, text, `delete of ${id} on ${u}`, res.headers);
      }, [url]);
    }
  }

  async close(): Promise<void> {
    for (const pool of this.raw.values()) pool.close();
    await this.agent?.close();
  }

  /** undici's keep-alive pools, made on the first call that is not a store of bytes in memory. */
  private get dispatcher(): Dispatcher {
    return (this.agent ??= new (undiciOf().Agent)(this.agentOptions));
  }

  /**
   * Runs `call` on a node, and on the next ones after a retryable failure, `retries` times at most
   * with back-off. `spread`: start at the next node in turn (stores); else at the first.
   */
  private async attempt<T>(retries: number, spread: boolean, call: (url: string) => Promise<T>, urls: readonly string[] = this.urls): Promise<T> {
    let at = spread ? this.next++ % urls.length : 0;
    for (let attempt = 0; ; attempt++) {
      const url = urls[at % urls.length]!;
      try {
        return await call(url);
      } catch (raw) {
        const err = raw instanceof BlobClientError ? raw : networkError(raw, url);
        if (attempt >= retries || !retryable(err) || err.final) throw err;
        await sleep(err.retryAfterMs ?? this.backoffMs(attempt));
        at++;
      }
    }
  }

  private backoffMs(attempt: number): number {
    return Math.min(5000, this.retryBaseMs * 2 ** attempt) * (0.5 + Math.random());
  }
}

/**
 * http(s)://host:port without a trailing slash; a bare host:port means http. A node's API is at
 * its root: a URL with a path, a query or another scheme is refused (stores would go to the root
 * and reads under the path).
 */
function normalizeUrl(url: string): string {
  const u = url.trim().replace(/\/+$/, '');
  if (u === '') throw new BlobClientError('usage', 'an empty node URL');
  const full = /^[a-z][a-z0-9+.-]*:\/\//i.test(u) ? u : `http://${u}`;
  let parsed: URL;
  try {
    parsed = new URL(full);
  } catch {
    throw new BlobClientError('usage', `node URL ${JSON.stringify(url)}: not a URL (expected http://host:port or https://host:port)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new BlobClientError('usage', `node URL ${JSON.stringify(url)}: ${parsed.protocol.slice(0, -1)} is not http or https`);
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new BlobClientError('usage', `node URL ${JSON.stringify(url)}: a node's API is at its root; give ${parsed.protocol}//${parsed.host}`);
  }
  return `${parsed.protocol}//${parsed.host}`;
}

/** What a HEAD answer's status means (it has no body for the node's message). */
const HEAD_REASONS: Readonly<Record<number, string>> = {
  400: 'invalid request',
  401: 'missing or invalid bearer token',
  403: 'the token lacks the scope',
  503: 'unavailable',
  507: 'insufficient storage',
};

/** TLS verification failures: the node's certificate is not trusted here; another attempt fails alike. */
const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED', 'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Header lines for the raw pool (each ending in CRLF). */
function headerLines(headers: Record<string, string>): string {
  let lines = '';
  for (const name in headers) {
    const value = headers[name]!;
    if (/[\r\n]/.test(value)) throw new BlobClientError('usage', `header ${name}: a line break in its value`);
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

function checkId(id: string): void {
  if (!LOWER_HEX_ID.test(id)) throw new BlobClientError('usage', `invalid blob ID ${JSON.stringify(id.slice(0, 80))}: expected 32 lower-case hex characters`);
}

const KINDS: Record<number, ClientErrorKind> = { 400: 'invalid', 401: 'auth', 403: 'auth', 404: 'not_found', 412: 'invalid', 413: 'invalid', 415: 'invalid' };

/** A node's error answer (the spec's shape: its message), as an error of the right kind. */
function errorOf(status: number, text: string, what: string, headers: Record<string, string | string[] | undefined>): BlobClientError {
  let message = text.slice(0, 300);
  try {
    const body = JSON.parse(text) as { message?: unknown };
    if (typeof body.message === 'string') message = body.message;
  } catch {
    // not the error shape: the text as it came
  }
  const kind: ClientErrorKind = RETRY_STATUSES.has(status) ? (status === 408 ? 'timeout' : 'unavailable') : (KINDS[status] ?? 'failed');
  const after = Number(headers['retry-after']);
  return new BlobClientError(kind, `${what}: ${status}${message ? ` ${message}` : ''}`, { status, retryAfterMs: Number.isFinite(after) && after > 0 ? Math.min(after, 30) * 1000 : undefined });
}

function networkError(err: unknown, url: string): BlobClientError {
  if (err instanceof BlobClientError) return err;
  const e = err as { code?: string; message?: string; name?: string };
  if (e.code !== undefined && CERTIFICATE_CODES.has(e.code)) {
    return new BlobClientError('network', `${url}: ${e.code}${e.message ? ` ${e.message}` : ''} (the node's certificate is not trusted here: give the CA that signed it with --cacert, or NODE_EXTRA_CA_CERTS)`, { cause: err, final: true });
  }
  const timeout = e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT' || (err instanceof RawConnectionError && e.code === 'ETIMEDOUT');
  return new BlobClientError(timeout ? 'timeout' : 'network', `${url}: ${e.code ?? e.name ?? 'error'}${e.message ? ` ${e.message}` : ''}`, { cause: err });
}

/** Passes a stream's chunks on, counting them. */
async function* countBytes(source: AsyncIterable<Uint8Array>, count: (n: number) => void): AsyncIterable<Uint8Array> {
  for await (const chunk of source) {
    count(chunk.length);
    yield chunk;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
