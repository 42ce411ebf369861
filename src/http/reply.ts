/**
 * Writing responses on uWS. A response may be written only while it is not aborted, and outside
 * the route callback only inside cork(); these helpers do both. Error bodies take the shape of the
 * node's variant (wire.ts).
 */
import { isClientGone } from '../errors/client-gone.js';
import { BlobstoreError, toBlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { REQUEST_ID_HEADER, requestId } from '../log/request-id.js';
import { clientRequestId } from './logged-response.js';
import { statusLine } from './status-line.js';
import type { HttpResponse } from './uws.js';
import { type Variant, type Wire, WIRE_B, wireOf } from './wire.js';

/** Per-request state uWS lets us attach to the response object. */
export interface Exchange {
  res: HttpResponse;
  aborted: boolean;
  done: boolean;
  /** Called once if the client goes away before the response is complete. */
  onAbort: (() => void) | undefined;
  /** The encoding of the node's API variant. */
  wire: Wire;
  /** The node's logger (server failures are logged with a request id). */
  log: Logger;
  /** A HEAD request: answers carry the GET's status and headers, without the body. */
  head: boolean;
  /**
   * The request body's last byte is in. From then on the body is never resumed: uWS re-arms its
   * 10 s idle timer on resume(), and a store still working (an EC store distributing its columns)
   * would have its connection closed without an answer.
   */
  bodyDone: boolean;
  /** The body is paused (flowOf); an answer resumes it, so the connection reads its next request. */
  paused: boolean;
  /**
   * The request came chunked (framing.ts): its answer closes the connection, and is never written
   * while uWS could still read a request after it. An answer given before the body is in is held
   * until the body ends or goes quiet (Intake.drop), so that a client still writing reads it.
   */
  chunked: boolean;
  held: Answer | undefined;
  /** Date.now() of the last body bytes read after the answer was given (Intake.drop). */
  bodyActivityMs: number;
}

/** A whole answer of a known body (not an Exchange's: written at once, no abort handling). */
export interface Answer {
  status: number;
  contentType: string;
  body: string;
  headers?: Readonly<Record<string, string>> | undefined;
}

/**
 * How the connection ends after an answer: `keep` leaves it open for the next request; `now` (a
 * stalled body, a body that cannot be framed) closes it after the answer (`Connection: close`);
 * `drain` (a request refused before its body was read) reads and drops the rest of the body first
 * (answerAfterBody), then answers and closes. No request after one answered so is run (RFC 9112
 * 9.6): uWS shuts the connection down once the answer is written and parses nothing more of it.
 */
export type Close = 'keep' | 'drain' | 'now';

/**
 * Writes an answer; to HEAD without the body but with its Content-Length (this uWS build sends a
 * body on HEAD if end() gets one, which the client would read as the next answer). A HEAD
 * answer that must close its connection is not written, the connection is closed: this uWS
 * build cannot end a HEAD answer and close (endWithoutBody with any argument ends the process),
 * and a connection left open would run what follows.
 */
export function writeAnswer(res: HttpResponse, a: Answer, head = false, close: Close = 'keep'): void {
  res.cork(() => {
    res.writeStatus(statusLine(a.status)).writeHeader('Content-Type', a.contentType);
    if (a.headers) for (const key in a.headers) res.writeHeader(key, a.headers[key]!);
    if (head && close !== 'keep') res.close();
    else if (head) res.writeHeader('Content-Length', String(Buffer.byteLength(a.body))).endWithoutBody();
    else res.end(a.body, close !== 'keep');
  });
}

/** A JSON answer on an Exchange (to HEAD without its body), once, unless the client went away. */
export function sendJson(x: Exchange, status: number, body: string, headers?: Readonly<Record<string, string>>, close: Close = 'keep'): void {
  if (x.aborted || x.done) return;
  x.done = true;
  if (x.chunked) return answerChunked(x, { status, contentType: 'application/json', body, headers });
  if (close === 'drain' && !x.bodyDone && !x.head) return answerAfterBody(x, { status, contentType: 'application/json', body, headers });
  if (x.paused) {
    // Left paused once its body was in (flowOf): resumed with the answer, or a kept-alive
    // connection would never read its next request.
    x.paused = false;
    x.res.resume();
  }
  writeAnswer(x.res, { status, contentType: 'application/json', body, headers }, x.head, close);
}

/** Responses whose request came chunked (framing.ts): their answer ends the connection. */
const chunkedRequests = new WeakSet<HttpResponse>();

/** The framing check saw `res`'s request come chunked. */
export function markChunked(res: HttpResponse): void {
  chunkedRequests.add(res);
}

/** Whether `res` answers a chunked request: its answer goes through answerLast once the body is in. */
export const answersChunked = (res: HttpResponse): boolean => chunkedRequests.has(res);

/**
 * Writes `a` with `Connection: close` once uWS has finished parsing what it read (framing.ts),
 * unless the client went away or uWS closed the connection for a request that came after this one.
 */
export function answerLast(res: HttpResponse, a: Answer, isAborted: () => boolean): void {
  setImmediate(() => {
    if (isAborted()) return;
    res.cork(() => {
      res.writeStatus(statusLine(a.status)).writeHeader('Content-Type', a.contentType);
      if (a.headers) for (const key in a.headers) res.writeHeader(key, a.headers[key]!);
      res.end(a.body, true);
    });
  });
}

/** The answer to a chunked request: once its body is in (bodyEnded), closing the connection. */
function answerChunked(x: Exchange, a: Answer): void {
  if (x.bodyDone) return answerLast(x.res, a, () => x.aborted);
  x.held = a;
  if (x.paused) {
    // Read on to the body's end, where the answer goes.
    x.paused = false;
    x.res.resume();
  }
}

/**
 * How long the body of a request answered before it was read may go quiet before the answer goes
 * anyway: a client holding its upload (refused with 503 for want of a slot), or one that stopped
 * sending when it saw no answer coming.
 */
const DRAIN_QUIET_MS = 300;
/** The longest a body still trickling holds its answer (a 503 for want of an upload slot is due soon). */
const DRAIN_HOLD_MAX_MS = 1000;

/**
 * The answer to a request refused before its body was read: held while the body still comes (read
 * and dropped; at most DRAIN_HOLD_MAX_MS), then written with `Connection: close` and the
 * connection closed (answerLast). A
 * client still writing (fetch, which reads no answer before its body is sent) then reads it rather
 * than a reset, and nothing it sends after the body is run (RFC 9112 9.6): an answer written at
 * once would leave uWS reading the body and then the next request.
 */
function answerAfterBody(x: Exchange, a: Answer): void {
  x.held = a;
  x.bodyActivityMs = Date.now();
  x.res.onData((_chunk, isLast) => {
    x.bodyActivityMs = Date.now();
    if (isLast) bodyEnded(x);
  });
  if (x.paused) {
    x.paused = false;
    x.res.resume();
  }
  const since = Date.now();
  const quiet = setInterval(() => {
    if (x.aborted || x.held === undefined) return clearInterval(quiet);
    const now = Date.now();
    if (now - x.bodyActivityMs < DRAIN_QUIET_MS && now - since < DRAIN_HOLD_MAX_MS) return;
    clearInterval(quiet);
    bodyEnded(x);
  }, DRAIN_QUIET_MS / 3);
}

/** The body's last byte is in (or it went quiet): an answer held for it goes out. */
export function bodyEnded(x: Exchange): void {
  x.bodyDone = true;
  const held = x.held;
  if (held === undefined) return;
  x.held = undefined;
  answerLast(x.res, held, () => x.aborted);
}

/** The error body of a variant (`'a'`, `'b'` or its Wire); variant B when not given. */
export function errorBody(err: BlobstoreError, variant: Variant | Wire = WIRE_B): string {
  return (typeof variant === 'string' ? wireOf(variant) : variant).errorBody(err);
}

/**
 * The one error answer of every route and listener: the variant's shape with the error's status
 * and headers. An error that is a fault of this node (`err.logged`) is logged with a request id
 * (the client's X-Request-Id, `sentId`, when it sent a sane one; else a new one), which the
 * answer carries in X-Request-Id; a client's mistake or an overload is not.
 */
export function errorAnswer(err: BlobstoreError, wire: Wire, log: Logger, sentId?: string): Answer {
  let headers = err.headers;
  if (err.logged) {
    const reqId = requestId(sentId);
    log.error({ reqId, status: err.status, err: err.cause ?? err }, `${err.message}${err.cause ? `: ${(err.cause as Error).message ?? String(err.cause)}` : ''}`);
    headers = { ...headers, [REQUEST_ID_HEADER]: reqId };
  }
  return { status: err.status, contentType: 'application/json', body: wire.errorBody(err), headers };
}

/** Answers `error` on a bare response (a route without an Exchange): see errorAnswer. */
export function writeError(res: HttpResponse, error: unknown, wire: Wire, log: Logger, head: boolean): void {
  writeAnswer(res, errorAnswer(toBlobstoreError(error), wire, log, clientRequestId(res)), head);
}

/** Answers `error` on an Exchange, once, unless the client went away: see errorAnswer. */
export function sendError(x: Exchange, error: unknown, close: Close = 'keep'): void {
  // A client that went away has nobody to answer, and its leaving is no failure of ours to log.
  if (isClientGone(error) || x.aborted || x.done) return;
  const a = errorAnswer(toBlobstoreError(error), x.wire, x.log, clientRequestId(x.res));
  sendJson(x, a.status, a.body, a.headers, close);
}

/**
 * Pauses and resumes the request body while the response is still open. Once the body is in,
 * a pause still holds (it also stops uWS's idle timer while the answer is being worked out) but
 * nothing resumes it (see Exchange.bodyDone); the answer is written all the same.
 */
export function flowOf(x: Exchange): { pause(): void; resume(): void } {
  return {
    pause: () => {
      if (x.aborted || x.done) return;
      x.paused = true;
      x.res.pause();
    },
    resume: () => {
      if (x.aborted || x.done || x.bodyDone) return;
      x.paused = false;
      x.res.resume();
    },
  };
}

export function newExchange(res: HttpResponse, wire: Wire, log: Logger, head = false): Exchange {
  const x: Exchange = {
    res, aborted: false, done: false, onAbort: undefined, wire, log, head, bodyDone: false, paused: false, chunked: answersChunked(res), held: undefined, bodyActivityMs: 0,
  };
  res.onAborted(() => {
    x.aborted = true;
    x.onAbort?.();
  });
  return x;
}
