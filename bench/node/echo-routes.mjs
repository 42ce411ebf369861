// The bare uWebSockets.js routes every HTTP figure is compared with (echo-server.mjs serves them
// to wrk; test/helpers/get-alloc-probe.mjs measures their allocations beside a node's):
//   GET  /4k    -> a 4 KiB buffer
//   POST /echo  -> the request body, copied out of uWS's buffers and sent back
//   POST /sink  -> reads and drops the body (any length, chunked too), answers {"size":N}
//   POST /drain -> the least a uWS POST handler can allocate: it reads the two headers any body
//                  handler must (Content-Type, Content-Length), takes the body through handlers
//                  bound once per pooled object (no closure per request), answers a fixed {}.
//                  What is left is uWS's own: the floor of test/get-alloc.test.ts's PUT.
//   GET  /file?<path> -> the file, read in 1 MiB pieces on libuv's pool (the next read under way
//                  while one is sent), sent with backpressure: a GET of a large blob with nothing
//                  checked or counted, the HTTP ceiling of the node's large GET.
import { open } from 'node:fs/promises';

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

const PIECE = 1024 * 1024;

/**
 * Streams the file at `path` to `res`: each piece read while the last is sent, uWS's backpressure
 * obeyed (this uWS keeps the first onWritable handler a response registers: one serves every wait).
 */
async function sendFile(res, path) {
  let aborted = false;
  let pending;
  res.onAborted(() => {
    aborted = true;
    pending?.resolve();
  });
  res.onWritable((written) => {
    if (!pending) return true;
    const [sent, finished] = res.tryEnd(pending.piece.subarray(written - pending.offset), pending.total);
    if (sent || finished) {
      const { resolve } = pending;
      pending = undefined;
      resolve();
    }
    return sent;
  });
  const file = await open(path, 'r');
  try {
    const total = (await file.stat()).size;
    const buffers = [Buffer.allocUnsafeSlow(PIECE), Buffer.allocUnsafeSlow(PIECE)];
    const readAt = (at, i) => file.read(buffers[i % 2], 0, Math.min(PIECE, total - at), at);
    let next = readAt(0, 0);
    for (let at = 0, i = 0; at < total && !aborted; i++) {
      const { bytesRead } = await next;
      if (bytesRead === 0) throw new Error(`${path}: ended at ${at} of ${total} bytes`);
      const piece = buffers[i % 2].subarray(0, bytesRead);
      at += bytesRead;
      if (at < total) next = readAt(at, i + 1);
      if (aborted) break;
      let ok = false;
      let done = false;
      const offset = res.getWriteOffset();
      res.cork(() => ([ok, done] = res.tryEnd(piece, total)));
      // uWS keeps what it could not send; the rest goes from onWritable before the next read lands in this buffer.
      if (!ok && !done) await new Promise((resolve) => (pending = { piece, offset, total, resolve }));
    }
  } finally {
    await file.close();
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
  app.get('/file', (res, req) => {
    const path = decodeURIComponent(req.getQuery() ?? '');
    sendFile(res, path).catch((err) => {
      console.error(`echo-server: /file: ${err.message}`);
      res.close();
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
