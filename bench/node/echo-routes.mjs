// The bare uWebSockets.js routes every HTTP figure is compared with (echo-server.mjs serves them
// to wrk; test/helpers/get-alloc-probe.mjs measures their allocations beside a node's):
//   GET  /4k    -> a 4 KiB buffer
//   POST /echo  -> the request body, copied out of uWS's buffers and sent back
//   POST /sink  -> reads and drops the body (any length, chunked too), answers {"size":N}
const page = Buffer.alloc(4096, 'g');

/** Adds the routes to a uWS app; returns the app. */
export function echoRoutes(app) {
  app.get('/4k', (res) => void res.end(page));
  app.post('/echo', (res) => {
    const chunks = [];
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((ab, isLast) => {
      chunks.push(Buffer.from(new Uint8Array(ab).slice()));
      if (!isLast || aborted) return;
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      res.cork(() => res.end(body));
    });
  });
  app.post('/sink', (res) => {
    let size = 0;
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((ab, isLast) => {
      size += ab.byteLength;
      if (isLast && !aborted) res.cork(() => res.end(JSON.stringify({ size })));
    });
  });
  return app;
}
