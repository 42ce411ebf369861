// A node (in this process, from dist/) and a bare uWS server beside it, for test/get-alloc.test.ts:
// the test drives GETs (and PUTs) from its own process and asks this one how much it allocated meanwhile.
//   node --expose-gc --max-semi-space-size=64 --min-semi-space-size=64 get-alloc-probe.mjs DATA_DIR
// stdout: one JSON line {port, barePort}; then per stdin line: "mark" -> "marked", "read" ->
// {newSpaceBytes, gcs} (young-generation bytes allocated since the mark, and collections since it).
import { createRequire } from 'node:module';
import { PerformanceObserver } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { getHeapSpaceStatistics } from 'node:v8';

const dist = new URL('../../dist/src/', import.meta.url);
const { loadConfig } = await import(new URL('config/load.js', dist).href);
const { startNode } = await import(new URL('node.js', dist).href);
const { silentLogger } = await import(new URL('log/logger.js', dist).href);

const dataDir = process.argv[2];
const config = loadConfig({
  // Index commits every 50 ms (the default is 5): a commit's own garbage is shared by the stores
  // of its interval, and the PUT test holds what a store allocates (test/get-alloc.test.ts).
  flags: { dataDir, nodeId: 'alloc-probe', listen: '127.0.0.1:0', metricsAddr: '', grpcAddr: '', indexCommitIntervalMs: 50 },
  env: {},
  file: '/nonexistent/blobstore-alloc-probe.json',
});
const node = await startNode(config, silentLogger());

// The reference: the bench's bare uWS routes (GET /4k, POST /echo); their own per-request
// objects are the floor. Each reads every request header once first, as the node's framing check
// must (src/http/framing.ts): the strings uWS makes to hand the headers over are uWS's.
const uws = createRequire(import.meta.url)('uWebSockets.js');
const { echoRoutes } = await import(new URL('../../bench/node/echo-routes.mjs', import.meta.url).href);
const seeHeader = () => undefined;
const headersRead = (handler) => (res, req) => {
  req.forEach(seeHeader);
  return handler(res, req);
};
const bare = uws.App();
const app = echoRoutes({
  get: (pattern, handler) => bare.get(pattern, headersRead(handler)),
  post: (pattern, handler) => bare.post(pattern, headersRead(handler)),
});
const barePort = await new Promise((resolve, reject) =>
  bare.listen('127.0.0.1', 0, (token) => (token ? resolve(uws.us_socket_local_port(token)) : reject(new Error('bare listen failed')))),
);

let gcs = 0;
new PerformanceObserver((list) => (gcs += list.getEntries().length)).observe({ entryTypes: ['gc'] });
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_used_size;
let mark = 0;

process.stdout.write(JSON.stringify({ port: node.port, barePort }) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'mark') {
    globalThis.gc();
    globalThis.gc();
    // Let the observer hear of those two before counting from zero.
    await new Promise((resolve) => setTimeout(resolve, 20));
    gcs = 0;
    mark = newSpace();
    process.stdout.write('marked\n');
  } else if (line === 'read') {
    const used = newSpace();
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.stdout.write(JSON.stringify({ newSpaceBytes: used - mark, gcs }) + '\n');
  } else if (line === 'stop') {
    break;
  }
}
await node.stop();
process.exit(0);
