// The bare uWebSockets.js routes every HTTP figure is compared with (echo-server.mjs serves them
// to wrk; test/helpers/get-alloc-probe.mjs measures their allocations beside a node's):
//   GET  /4k    -> a 4 KiB buffer
//   POST /echo  -> the request body, copied out of uWS's buffers and sent back
//   POST /sink  -> reads and drops the body (any length, chunked too), answers {"size":N}
//   POST /drain -> the least a uWS POST handler can allocate: it reads the two headers any body
//                  handler must (Content-Type, Content-Length), takes the body through handlers
//                  bound once per pooled object (no closure per request), answers a fixed {}.
//                  What is left is uWS's own: the floor of test/get-alloc.test.ts's PUT.
const page = Buffer.alloc(4096, 'g');
const EMPTY_JSON = Buffer.from('{}');

/** One request of /drain at a time; back to the pool once answered (or aborted). */
class Drain {
  constructor(pool) {
    this.pool = pool;
    this.res = undefined;
    this.size = 0;
    this.length = 0;
    this.onAborted = () => this.finish();
    this.onData = (ab, isLast) => {
      this.size += ab.byteLength;
      if (!isLast || this.res === undefined) return;
      this.res.cork(this.answer);
      this.finish();
    };
    this.answer = () => {
      const res = this.res;
      if (this.size !== this.length) res.writeStatus('400 Bad Request');
      res.writeHeader('Content-Type', 'application/json').end(EMPTY_JSON);
    };
  }

  start(res, length) {
    this.res = res;
    this.size = 0;
    this.length = length;
    res.onAborted(this.onAborted);
    res.onData(this.onData);
  }

  finish() {
    if (this.res === undefined) return;
    this.res = undefined;
    this.pool.push(this);
  }
}

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
  const drains = [];
  app.post('/drain', (res, req) => {
    // What a handler of bodies reads before taking one.
    if (req.getHeader('content-type') === '') res.writeStatus('415 Unsupported Media Type');
    const length = Number(req.getHeader('content-length'));
    (drains.pop() ?? new Drain(drains)).start(res, length);
  });
  return app;
}
