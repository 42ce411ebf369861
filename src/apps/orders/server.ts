import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from '../../http/uws.js';
import { statusLine } from '../../http/status-line.js';
import { type Refuse, strictRoute } from '../../http/framing.js';
import { answerLast, answersChunked } from '../../http/reply.js';
import { listenExclusive, loadUws } from '../../http/uws.js';
import { parseHostPort } from '../../config/units.js';
import { bodyTooLarge } from './errors.js';
import type { OrdersRequest, OrdersResponse, OrdersService } from './service.js';

/**
 * The orders API's HTTP transport on uWebSockets.js: decode the request while uWS' HttpRequest is
 * valid (only inside the callback), let the service route and authenticate, read a body only for
 * the route that takes one (bounded by ordersMaxBodyBytes), write the answer corked.
 */

export interface OrdersServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** Stops accepting; resolves once the writes in progress answered (at most `timeoutMs`). */
  close(timeoutMs: number): Promise<void>;
}

export function startOrdersServer(service: OrdersService, addr: string, maxBodyBytes: number): OrdersServer {
  const hostPort = parseHostPort(addr);
  if (!hostPort) throw new Error(`invalid orders address ${addr}`);
  const uws = loadUws();
  const app: TemplatedApp = uws.App();
  // Creates and cancels between their body and their answer; shutdown waits for them.
  const pending = { count: 0 };
  // The framing check of every listener (src/http/framing.ts); its refusals in FastAPI's shape.
  const refuse: Refuse = (err) => ({ status: err.status, contentType: 'application/json', body: JSON.stringify({ detail: err.message }) });
  app.any('/*', strictRoute((res, req) => handle(service, res, req, maxBodyBytes, pending), true, refuse));
  let socket: us_listen_socket | false = false;
  listenExclusive(app, hostPort.host, hostPort.port, (s) => {
    socket = s;
  });
  if (!socket) throw new Error(`cannot listen on ${addr} (address in use or not permitted)`);
  const port = uws.us_socket_local_port(socket);
  return {
    port,
    close: async (timeoutMs) => {
      if (socket) uws.us_listen_socket_close(socket);
      socket = false;
      const deadline = Date.now() + timeoutMs;
      while (pending.count > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    },
  };
}

function handle(service: OrdersService, res: HttpResponse, req: HttpRequest, maxBodyBytes: number, pending: { count: number }): void {
  const contentType = req.getHeader('content-type');
  const request: OrdersRequest = {
    method: req.getCaseSensitiveMethod(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    authorization: req.getHeader('authorization'),
    // uWS answers '' for an absent header; FastAPI treats an empty one as absent too.
    contentType: contentType === '' ? undefined : contentType,
    host: req.getHeader('host') || '127.0.0.1',
  };
  const reply: Reply = { res, head: request.method === 'HEAD', aborted: false, pending, chunked: answersChunked(res) };
  // A chunked request's answer closes the connection, written after uWS's parse (src/http/framing.ts).
  if (reply.chunked) watchAbort(reply);
  const prepared = service.prepare(request);
  if (prepared.kind === 'done') return send(reply, prepared.response);
  if (!prepared.needsBody) return finish(reply, service.respond(prepared, request, undefined), service);
  const declared = Number(req.getHeader('content-length') || '0');
  watchAbort(reply);
  // Answered before the body is read: uWS reads and drops the rest, so a client still writing
  // reads the 413 rather than a reset; the answer says Connection: close.
  if (declared > maxBodyBytes) return send(reply, service.failed(bodyTooLarge(maxBodyBytes)), true);
  readBody(res, maxBodyBytes, (body) => {
    // Only a chunked body grows past the limit: its answer closes the connection, so it waits
    // for the body's end (readBody drops the rest) rather than cut a client still writing.
    if (body === undefined) return send(reply, service.failed(bodyTooLarge(maxBodyBytes)), true);
    finish(reply, service.respond(prepared, request, body), service);
  });
}

/** One response in progress; uWS forbids touching `res` after the client went away. */
interface Reply {
  readonly res: HttpResponse;
  readonly head: boolean;
  readonly pending: { count: number };
  aborted: boolean;
  watched?: boolean;
  /** The request came chunked: the answer closes the connection (src/http/framing.ts). */
  readonly chunked: boolean;
}

function watchAbort(reply: Reply): void {
  if (reply.watched) return;
  reply.watched = true;
  reply.res.onAborted(() => {
    reply.aborted = true;
  });
}

/**
 * Collects the body (copied once out of uWS' transient chunks), or, for a body past the limit,
 * reads and drops the rest and then says undefined.
 */
function readBody(res: HttpResponse, maxBytes: number, done: (body: Uint8Array | undefined) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    size += chunk.byteLength;
    if (size > maxBytes) {
      chunks.length = 0;
      if (isLast) done(undefined);
      return;
    }
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
  });
}

function finish(reply: Reply, response: OrdersResponse | Promise<OrdersResponse>, service: OrdersService): void {
  if (!(response instanceof Promise)) return send(reply, response);
  watchAbort(reply);
  reply.pending.count++;
  response
    .then((r) => send(reply, r), (err: unknown) => send(reply, service.failed(err)))
    .finally(() => reply.pending.count--);
}

/** Writes the answer; `early` (before the body was read) says Connection: close and keeps reading. */
function send(reply: Reply, response: OrdersResponse, early = false): void {
  if (reply.aborted) return;
  const { res } = reply;
  if (reply.chunked) {
    const headers = response.headers ? { ...response.headers } : undefined;
    return answerLast(res, { status: response.status, contentType: response.contentType ?? 'application/json', body: response.body, headers }, () => reply.aborted);
  }
  res.cork(() => {
    res.writeStatus(statusLine(response.status));
    if (response.status !== 307) res.writeHeader('content-type', response.contentType ?? 'application/json');
    if (response.headers) for (const [name, value] of Object.entries(response.headers)) res.writeHeader(name, value);
    if (early) res.writeHeader('connection', 'close');
    if (reply.head) {
      // This uWS build aborts on endWithoutBody(length) and writes a body with end() on HEAD.
      res.writeHeader('content-length', String(Buffer.byteLength(response.body)));
      res.endWithoutBody();
    } else {
      res.end(response.body);
    }
  });
}
