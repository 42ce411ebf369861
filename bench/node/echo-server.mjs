// The ceiling of the HTTP figures: bare uWebSockets.js on the same host, driven by the same wrk.
//   GET  /4k    -> a 4 KiB buffer
//   POST /echo  -> the request body, copied out of uWS's buffers and sent back
//   POST /sink  -> reads and drops the body (any length, chunked too), answers {"size":N}
// usage: node bench/node/echo-server.mjs PORT   (answers /healthz 200; SIGTERM stops it)
import uWS from 'uWebSockets.js';

const port = Number(process.argv[2] ?? 9001);
const page = Buffer.alloc(4096, 'g');
const app = uWS.App();

app.get('/healthz', (res) => void res.end('ok'));
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

app.listen('127.0.0.1', port, (token) => {
  if (!token) {
    console.error(`echo-server: cannot listen on 127.0.0.1:${port}`);
    process.exit(1);
  }
  console.log(`echo-server: listening on http://127.0.0.1:${port}`);
});
const stop = () => {
  app.close?.();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
