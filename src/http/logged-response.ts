/**
 * The access log and X-Request-Id on the HTTP listeners. Answers are written by many writers: the
 * helpers of reply.ts, and fast paths that call uWS directly (small-store.ts, the read cache's
 * answer in blob-routes.ts, download.ts's senders). All of them go through the uWS response, so
 * a request that is logged or came with an X-Request-Id gets, before its route runs
 * (framing.ts's strictRoute), a LoggedResponse standing in for that response: it sees every
 * answer's status and size without any writer knowing.
 *
 *   route callback ─▶ framing scan (notes X-Request-Id, traceparent) ─▶ logged? id sent?
 *     neither (the common case): the route gets uWS's own response, and nothing else happens
 *     either: the route gets a LoggedResponse
 *       writeStatus ─▶ the status, then `X-Request-Id: <the client's id>` when it sent a sane one
 *       end / tryEnd (done) / endWithoutBody / close / abort ─▶ the access line (when logged)
 *
 * A request neither logged nor carrying an id pays one more case in the scan's switch and two
 * comparisons. A success answer to a request without an id carries none (no id is made per
 * request); an error answer that logs its failure carries the id of that line, the client's
 * when it sent one (reply.ts errorAnswer, with clientRequestId).
 */
import type { RecognizedString } from 'uWebSockets.js';
import { type AccessEntry, type AccessLog, msSince, traceparentOf } from '../log/access-log.js';
import { REQUEST_ID_HEADER, saneRequestId } from '../log/request-id.js';
import type { HttpRequest, HttpResponse } from './uws.js';

/** The status of a status line ("404 Not Found", or a pre-encoded head starting with it). */
function statusOf(line: RecognizedString): number {
  if (typeof line === 'string') return (line.charCodeAt(0) - 48) * 100 + (line.charCodeAt(1) - 48) * 10 + (line.charCodeAt(2) - 48);
  const b = line instanceof ArrayBuffer ? new Uint8Array(line, 0, 3) : new Uint8Array(line.buffer, line.byteOffset, 3);
  return (b[0]! - 48) * 100 + (b[1]! - 48) * 10 + (b[2]! - 48);
}

const byteLength = (data: RecognizedString): number => (typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength);

const isRequestIdHeader = (key: RecognizedString): boolean =>
  typeof key === 'string' && key.length === REQUEST_ID_HEADER.length && key.toLowerCase() === 'x-request-id';

/** uWS's peer address text; IPv4 without its IPv6-mapped prefix. */
function peerOf(res: HttpResponse): string {
  const text = Buffer.from(res.getRemoteAddressAsText()).toString('latin1');
  return text.startsWith('::ffff:') ? text.slice(7) : text;
}

/** A uWS response that echoes the client's request id and logs its answer (see the file's comment). */
export class LoggedResponse implements HttpResponse {
  [key: string]: unknown;
  /** The status written (0: none yet). */
  private status = 0;
  private bytes = 0;
  private finished = false;
  /** The id on the line: the client's, or the one an error answer carries. */
  private lineId: string;

  constructor(
    readonly res: HttpResponse,
    /** The client's sane X-Request-Id, echoed on the answer; '' when it sent none. */
    readonly requestId: string,
    /** The line's fields known at the start; undefined when the request is not logged. */
    private readonly entry: AccessEntry | undefined,
    private readonly access: AccessLog,
    private readonly startNs: bigint,
  ) {
    this.lineId = requestId;
  }

  /** The status line goes first; the echoed id right after it. */
  private begin(status: number): void {
    this.status = status;
    if (this.requestId !== '') this.res.writeHeader(REQUEST_ID_HEADER, this.requestId);
  }

  private finish(aborted: boolean): void {
    if (this.finished) return;
    this.finished = true;
    const e = this.entry;
    if (e === undefined) return;
    e.status = this.status;
    e.bytes = this.bytes;
    e.ms = msSince(this.startNs);
    if (this.lineId !== '') e.reqId = this.lineId;
    if (aborted) e.aborted = true;
    this.access.write(e);
  }

  writeStatus(status: RecognizedString): HttpResponse {
    this.res.writeStatus(status);
    this.begin(statusOf(status));
    return this;
  }

  writeHeader(key: RecognizedString, value: RecognizedString): HttpResponse {
    // uWS writes "200 OK" itself before a header that comes without a status.
    if (this.status === 0) this.begin(200);
    if (isRequestIdHeader(key)) {
      // An error answer's id (reply.ts): the client's is on the answer already.
      if (this.requestId !== '') return this;
      this.lineId = typeof value === 'string' ? value : Buffer.from(value as Uint8Array).toString('latin1');
    }
    this.res.writeHeader(key, value);
    return this;
  }

  write(chunk: RecognizedString): boolean {
    if (this.status === 0) this.begin(200);
    this.bytes += byteLength(chunk);
    return this.res.write(chunk);
  }

  end(body?: RecognizedString, closeConnection?: boolean): HttpResponse {
    if (this.status === 0) this.begin(200);
    if (body !== undefined) this.bytes += byteLength(body);
    // uWS reads an explicit undefined as a value: pass what the caller passed.
    if (closeConnection !== undefined) this.res.end(body, closeConnection);
    else if (body !== undefined) this.res.end(body);
    else this.res.end();
    this.finish(false);
    return this;
  }

  endWithoutBody(reportedContentLength?: number, closeConnection?: boolean): HttpResponse {
    if (this.status === 0) this.begin(200);
    if (closeConnection !== undefined) this.res.endWithoutBody(reportedContentLength, closeConnection);
    else if (reportedContentLength !== undefined) this.res.endWithoutBody(reportedContentLength);
    else this.res.endWithoutBody();
    this.finish(false);
    return this;
  }

  tryEnd(fullBodyOrChunk: RecognizedString, totalSize: number): [boolean, boolean] {
    if (this.status === 0) this.begin(200);
    const result = this.res.tryEnd(fullBodyOrChunk, totalSize);
    if (result[1]) {
      this.bytes = totalSize;
      this.finish(false);
    }
    return result;
  }

  /** Cuts the answer short (a body that failed part way): logged as aborted, with the bytes sent. */
  close(): HttpResponse {
    if (!this.finished && this.bytes === 0) this.bytes = this.res.getWriteOffset();
    this.res.close();
    this.finish(true);
    return this;
  }

  onAborted(handler: () => void): HttpResponse {
    this.res.onAborted(() => {
      this.finish(true);
      handler();
    });
    return this;
  }

  cork(cb: () => void): HttpResponse {
    this.res.cork(cb);
    return this;
  }

  onWritable(handler: (offset: number) => boolean): HttpResponse {
    this.res.onWritable(handler);
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): HttpResponse {
    this.res.onData(handler);
    return this;
  }

  pause(): void {
    this.res.pause();
  }

  resume(): void {
    this.res.resume();
  }

  getWriteOffset(): number {
    return this.res.getWriteOffset();
  }

  getRemoteAddress(): ArrayBuffer {
    return this.res.getRemoteAddress();
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return this.res.getRemoteAddressAsText();
  }

  getProxiedRemoteAddress(): ArrayBuffer {
    return this.res.getProxiedRemoteAddress();
  }

  getProxiedRemoteAddressAsText(): ArrayBuffer {
    return this.res.getProxiedRemoteAddressAsText();
  }

  upgrade<UserData>(userData: UserData, key: RecognizedString, protocol: RecognizedString, extensions: RecognizedString, context: unknown): void {
    this.res.upgrade(userData, key, protocol, extensions, context as never);
  }
}

/**
 * The response a route gets (framing.ts): `res` itself unless the request is `logged` or came
 * with a sane X-Request-Id (`sentId`, '' when absent). `route` is the pattern it matched.
 */
export function responseFor(
  res: HttpResponse, req: HttpRequest, access: AccessLog, logged: boolean, route: string, sentId: string, sentTrace: string,
): HttpResponse {
  const id = sentId === '' ? '' : saneRequestId(sentId);
  if (!logged && id === '') return res;
  let entry: AccessEntry | undefined;
  if (logged) {
    entry = {
      access: 'http', method: req.getMethod().toUpperCase(), route, status: 0, bytes: 0, ms: 0, peer: peerOf(res),
    };
    const trace = sentTrace === '' ? undefined : traceparentOf(sentTrace);
    if (trace !== undefined) entry.traceparent = trace;
  }
  return new LoggedResponse(res, id, entry, access, logged ? process.hrtime.bigint() : 0n);
}

/** The client's sane X-Request-Id of the request `res` answers, if it sent one (for errorAnswer). */
export function clientRequestId(res: HttpResponse): string | undefined {
  return res instanceof LoggedResponse && res.requestId !== '' ? res.requestId : undefined;
}
