/**
 * The one place that reaches into grpc-js: the HTTP/2 server our grpc-js server makes (through
 * its createHttp2Server, which server.ts wraps on that instance) gets its `emit` wrapped, so a
 * new stream on a path we serve directly (direct-streams.ts: PutStream, GetStream) goes to our
 * handler instead of grpc-js's 'stream' listener. Why: grpc-js moves a stream's messages one at
 * a time through promises and copies each twice, which held PutStream and GetStream well below a
 * bare node:http2 stream (README, Performance); everything else (unary calls, health, reflection,
 * the cluster services, sessions, keepalive, shutdown) stays grpc-js's.
 *
 * Only plain calls are taken (POST, content-type application/grpc[+proto], no compression);
 * any other goes to grpc-js unchanged, which answers it as before. The seam depends on grpc-js
 * making its server through createHttp2Server and on Node emitting 'stream' through
 * `server.emit`: server.ts refuses to start when the first stops holding, and
 * test/grpc/direct-seam.test.ts fails when either does.
 */
import type http2 from 'node:http2';

export type DirectHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

/** Whether a request is one we serve ourselves; anything unusual is left to grpc-js. */
export function servedDirectly(headers: http2.IncomingHttpHeaders): boolean {
  const contentType = headers['content-type'];
  const encoding = headers['grpc-encoding'];
  return headers[':method'] === 'POST' &&
    (contentType === 'application/grpc' || contentType === 'application/grpc+proto') &&
    (encoding === undefined || encoding === 'identity');
}

/**
 * From now on `server` hands streams on `routes` (by `:path`) to their handler, the rest to its
 * listeners. `opened` is told of each stream handed over (grpc-js counts a connection's open calls
 * to close it once idle, and sees none of these).
 */
export function interceptStreams(server: http2.Http2Server, routes: ReadonlyMap<string, DirectHandler>, opened?: (stream: http2.ServerHttp2Stream) => void): void {
  const emit = server.emit;
  server.emit = function (this: http2.Http2Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'stream') {
      const headers = args[1] as http2.IncomingHttpHeaders;
      const handler = routes.get(headers[':path'] ?? '');
      if (handler && servedDirectly(headers)) {
        opened?.(args[0] as http2.ServerHttp2Stream);
        handler(args[0] as http2.ServerHttp2Stream, headers);
        return true;
      }
    }
    return emit.call(this, event, ...args);
  } as typeof server.emit;
}
