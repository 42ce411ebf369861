/**
 * Strict request framing on every listener (RFC 9112 §6, §11.2). uWebSockets.js frames a body by
 * the first Content-Length it sees, reads an empty or duplicated one without complaint, takes any
 * Transfer-Encoding for chunked, and parses chunk sizes and the bytes after the last chunk
 * loosely. A proxy in front that frames the same bytes another way would pass a hidden request
 * through its own checks. So before any route runs:
 *
 *   - two Content-Lengths (equal or not), an empty or non-decimal one, Content-Length beside
 *     Transfer-Encoding, a Transfer-Encoding other than exactly `chunked`, two Transfer-Encodings
 *     or two Hosts, a control byte in a field value (DEL), a byte in the query that is not
 *     visible ASCII: 400, and the connection closes;
 *   - a chunked body on a route that does not stream bodies: 411 (send a Content-Length), and the
 *     connection closes;
 *   - a POST, PUT or DELETE a browser sends for a page of another origin: 403 (fromOtherPage);
 *   - a chunked body on a route that streams it: the answer closes the connection (exchange.ts),
 *     because what uWS reads after a chunked body is not what a strict parser would read.
 *
 * "Closes" is made sure of through uWS's own rule: while a response is open, uWS closes the
 * connection rather than run the next request it parses. So these answers are never written
 * inside uWS's parse of the bytes that carried them: they wait for setImmediate (the same turn of
 * the loop, after the parse), and carry `Connection: close`. A request uWS itself cannot parse
 * (HTTP/1.0, no Host, more than 48 header lines, bare LF, obs-fold, control bytes) never reaches
 * a route; uWS keeps waiting for a request it can read and closes the connection after its 10 s
 * idle timeout (README, Limits).
 */
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import type { AccessLog } from '../log/access-log.js';
import { responseFor } from './logged-response.js';
import { type Answer, answerLast, markChunked } from './reply.js';
import type { HttpRequest, HttpResponse } from './uws.js';

/** How a request's body is framed: by its Content-Length (or none), chunked, or ambiguously. */
export type Framing = 'length' | 'chunked' | BlobstoreError;

/** Turns a refusal into the listener's error answer (the API variant's shape, or the orders app's). */
export type Refuse = (err: BlobstoreError) => Answer;

const DECIMAL = /^[0-9]+$/;

// The scan's state: module-level so that a request's scan allocates nothing but what uWS hands over.
let lengths = 0;
let length = '';
let encodings = 0;
let encoding = '';
let hosts = 0;
let host = '';
let malformed = 0;
// What a browser says of where a request comes from: '' when absent (curl, peers, clients).
let origin = '';
let fetchSite = '';
// Read for the access log and X-Request-Id (logged-response.ts) by the same pass: '' when absent.
let sentId = '';
let sentTrace = '';

/**
 * RFC 9110 5.5: a field value holds no control byte but tab. Of those, this uWS build passes DEL
 * alone (it never parses a head with another, nor a field name that is not a token), so DEL is
 * the one looked for on every request; test/http-framing.test.ts sends every control byte.
 */
const DEL = '\x7f';
/** RFC 9112 3.2: a request-target is visible ASCII (uWS passes DEL and bytes above 0x7e). */
const NOT_VISIBLE_ASCII = /[^\x21-\x7e]/;

/** uWS gives header names in lower case. */
function visit(name: string, value: string): void {
  if (value.indexOf(DEL) !== -1) malformed++;
  switch (name.length) {
    case 4:
      if (name === 'host') {
        hosts++;
        host = value;
      }
      break;
    case 6:
      if (name === 'origin') origin = value;
      break;
    case 11:
      if (name === 'traceparent') sentTrace = value;
      break;
    case 12:
      if (name === 'x-request-id') sentId = value;
      break;
    case 14:
      if (name === 'content-length') {
        lengths++;
        length = value;
      } else if (name === 'sec-fetch-site') fetchSite = value;
      break;
    case 17:
      if (name === 'transfer-encoding') {
        encodings++;
        encoding = value;
      }
      break;
  }
}

/** Methods a page of another origin may send (a browser sends them without asking first). */
const SAFE_METHODS = new Set(['get', 'head', 'options']);

/**
 * Whether a browser sends this request for a page of another origin (RFC 6454; Fetch's
 * Sec-Fetch-Site). No listener here serves CORS, so such a page has no business changing
 * anything; yet a browser sends a POST of `text/plain` cross-site without asking first: a page
 * could have a node on loopback, reachable without a credential, join a stranger to its cluster
 * or store blobs. Sec-Fetch-Site is the browser's own verdict, right behind a proxy that rewrites
 * Host; a browser that does not send it is judged by Origin against Host.
 */
function fromOtherPage(method: string): boolean {
  if (SAFE_METHODS.has(method.toLowerCase())) return false;
  if (fetchSite === 'cross-site' || fetchSite === 'same-site') return true;
  if (fetchSite === 'same-origin' || fetchSite === 'none') return false;
  if (origin === 'null') return true;
  // Only a browser's Origin counts (RFC 6454 7: "null", or scheme://host[:port]); any other value
  // is not one a browser sends.
  const authority = SERIALIZED_ORIGIN.exec(origin)?.[1];
  return authority !== undefined && authority.toLowerCase() !== host.toLowerCase();
}

/** A serialized origin of a page served over HTTP(S): its authority. */
const SERIALIZED_ORIGIN = /^https?:\/\/([^/\s]+)$/;

/** The framing of `req` (valid only inside its route callback). */
export function framingOf(req: HttpRequest): Framing {
  lengths = 0;
  encodings = 0;
  hosts = 0;
  malformed = 0;
  origin = '';
  fetchSite = '';
  sentId = '';
  sentTrace = '';
  req.forEach(visit);
  if (malformed > 0) return invalidArgument('a header field value holds a control byte');
  if ((origin !== '' || fetchSite !== '') && fromOtherPage(req.getMethod())) {
    return new BlobstoreError('permission_denied', 'a web page of another origin may not send this request (no listener here serves CORS)');
  }
  // The query only: getUrl() would be a string made on every request (the cached GET makes none
  // but its id), and a path with such a byte matches no route, or gives a parameter that fails
  // its own check (ids are hex, column indexes decimal).
  const query = req.getQuery();
  if (query !== undefined && NOT_VISIBLE_ASCII.test(query)) return invalidArgument('the query holds a byte that is not visible ASCII');
  if (lengths > 1) return invalidArgument('more than one Content-Length header');
  if (encodings > 1) return invalidArgument('more than one Transfer-Encoding header');
  if (hosts > 1) return invalidArgument('more than one Host header');
  if (encodings === 1) {
    if (lengths === 1) return invalidArgument('Content-Length together with Transfer-Encoding');
    // A coding this node does not apply (gzip, or chunked not last) leaves the body's end unknown.
    if (encoding.toLowerCase() !== 'chunked') return invalidArgument(`Transfer-Encoding ${JSON.stringify(encoding.slice(0, 40))}: only chunked is accepted`);
    return 'chunked';
  }
  if (lengths === 1 && !DECIMAL.test(length)) {
    return invalidArgument(length === '' ? 'empty Content-Length header' : 'Content-Length is not a decimal number');
  }
  return 'length';
}

/**
 * A refusal before the route: the answer waits for the parse to end (answerLast), then closes.
 * HEAD is closed without one: this uWS cannot end a HEAD answer and close its connection.
 */
function refuse(res: HttpResponse, a: Answer, head: boolean): void {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  if (!head) return answerLast(res, a, () => aborted);
  setImmediate(() => {
    if (!aborted) res.close();
  });
}

/**
 * A route handler behind the framing check. `streams`: the route reads its body as it comes and
 * takes a chunked one; other routes answer a chunked body 411. With `access`, a request that is
 * logged or came with an X-Request-Id is answered through a LoggedResponse (logged-response.ts),
 * refusals included; `route` is the pattern its line names.
 */
export function strictRoute(
  handler: (res: HttpResponse, req: HttpRequest) => void, streams: boolean, refusal: Refuse, access?: AccessLog, route = '',
): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const framing = framingOf(req);
    if (access !== undefined) {
      const logged = access.sampled();
      if (logged || sentId !== '') res = responseFor(res, req, access, logged, route, sentId, sentTrace);
    }
    if (framing === 'length') return handler(res, req);
    if (framing === 'chunked') {
      if (!streams) return refuse(res, refusal(lengthRequired()), req.getMethod() === 'head');
      markChunked(res);
      return handler(res, req);
    }
    refuse(res, refusal(framing), req.getMethod() === 'head');
  };
}

const lengthRequired = (): BlobstoreError =>
  new BlobstoreError('length_required', 'this route takes a body with Content-Length, not chunked');
