/**
 * gRPC against the raw HTTP body path of the same node, same run (issue 6 targets):
 *
 *   unary 4 KiB Put/s (grpc-js client: CHANNELS connections x IN_FLIGHT calls each, unique bodies)
 *     vs wrk's 4 KiB raw POST/s at 64 connections            target >= 0.60
 *   1 GiB PutStream (1 MiB PutChunk messages) vs chunked raw POST     target >= 0.70
 *   1 GiB GetStream vs raw GET, both warm, both read by curl          target >= 0.70
 *     (curl speaks gRPC's HTTP/2 with prior knowledge: the request is the 5-byte prefix and the
 *     GetStreamRequest bytes; it writes the framed GetChunk messages to /dev/null, as it writes the
 *     raw body). GetStream read by the grpc-js client is reported beside it.
 *
 * The ceiling of the streams (issue 19) is a bare node:http2 server in the same run (bare-h2.ts,
 * same window and frame settings): PutStream against its discard and write + fsync modes,
 * GetStream against its from-memory and from-a-warm-file modes, each with the same two clients;
 * the ratios put_stream_vs_bare_* and get_stream_vs_bare_* (target >= 0.80) compare per round.
 * BENCH_GRPC_UNARY=0 skips the unary rows; BENCH_GRPC_PROFILE=1 runs the node and the bare server
 * under `node --cpu-prof` and prints their top self times (profiles kept in bench/results/).
 *
 * Rounds interleave HTTP and gRPC so load from elsewhere hits both alike; figures are medians,
 * ratios are per round. The unary load comes from a worker thread (unary-load.ts; more with
 * BENCH_GRPC_CLIENT_THREADS); the log says how much CPU it used: on two cores the client competes
 * with the node (a grpc-js call costs the client about as much CPU as the server).
 *
 * Knobs: BENCH_RUN_SECONDS, BENCH_REPEATS, BENCH_STREAM_BYTES (lib.ts); BENCH_GRPC_CHANNELS (4),
 * BENCH_GRPC_IN_FLIGHT (16 per channel), BENCH_GRPC_CLIENT_THREADS (1).
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, promises as fsp, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from '../../src/proto/loader.js';
import {
  CONNECTIONS, GiB, KiB, MiB, REPEATS, ROOT, RUN_SECONDS, curlGetSeconds, emit, envInt, freePort, listIds, log, median, memoryDir, removeDir, round, runNonce, runWrk, settle, startNode, tempDir,
} from '../node/lib.js';
import { chunk, chunkCount, putChunked } from '../node/stream-client.js';
import type { UnaryLoadJob, UnaryLoadResult } from './unary-load.js';

const BENCH = 'grpc';
const SIZE = 4 * KiB;
const TOTAL = envInt('BENCH_STREAM_BYTES', GiB);
const CHANNELS = envInt('BENCH_GRPC_CHANNELS', 4);
const IN_FLIGHT = envInt('BENCH_GRPC_IN_FLIGHT', 16);
const THREADS = envInt('BENCH_GRPC_CLIENT_THREADS', 1);
const UNARY = envInt('BENCH_GRPC_UNARY', 1) !== 0;
const PROFILE = envInt('BENCH_GRPC_PROFILE', 0) !== 0;
/** The node's default --grpc-window-bytes; the bare server announces the same. */
const WINDOW_BYTES = 8 * MiB;
const execFileAsync = promisify(execFile);

type Client = grpc.Client & Record<string, (...args: unknown[]) => any>;
const pkg = grpc.loadPackageDefinition(loadProtos()) as unknown as { blobstore: { v1: Record<string, grpc.ServiceClientConstructor> } };

/** The streams' client, from the repo's .proto; a 16 MiB HTTP/2 window for large downloads. */
function blobClient(target: string): Client {
  return new pkg.blobstore.v1.BlobService!(target, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
    'grpc-node.flow_control_window': 16 * 1024 * 1024,
    'grpc.enable_channelz': 0,
  }) as unknown as Client;
}

/**
 * Unary 4 KiB Puts for `seconds` from THREADS worker threads (unary-load.ts), each with
 * CHANNELS / THREADS connections of IN_FLIGHT calls: CHANNELS x IN_FLIGHT in flight in all.
 */
async function unaryPuts(target: string, seconds: number, nonce: string): Promise<{ rps: number; errors: number; clientCpu: number }> {
  const perThread = Math.max(1, Math.round(CHANNELS / THREADS));
  const results = await Promise.all(Array.from({ length: THREADS }, (_, thread) => {
    const job: UnaryLoadJob = { target, channels: perThread, inFlight: IN_FLIGHT, seconds, size: SIZE, nonce, thread };
    const worker = new Worker(new URL('./unary-load.js', import.meta.url), { workerData: job });
    return new Promise<UnaryLoadResult>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  }));
  const done = results.reduce((a, r) => a + r.done, 0);
  const errors = results.reduce((a, r) => a + r.errors, 0);
  const first = results.find((r) => r.firstError)?.firstError;
  if (first) log(`${BENCH}: unary errors, first: ${first}`);
  const elapsed = Math.max(...results.map((r) => r.elapsedS));
  return { rps: done / elapsed, errors, clientCpu: results.reduce((a, r) => a + r.cpuS, 0) / elapsed };
}

/** Metadata that picks the bare server's mode (the node ignores it). */
function bareMode(mode?: string): grpc.Metadata {
  const m = new grpc.Metadata();
  if (mode) m.set('x-bare-mode', mode);
  return m;
}

async function putStream(c: Client, nonce: string, mode?: string): Promise<{ seconds: number; id: Buffer }> {
  const count = chunkCount(TOTAL);
  const t0 = performance.now();
  const response = await new Promise<{ id: { id: Buffer }; size: string }>((resolve, reject) => {
    const call = c.PutStream!(bareMode(mode), (err: grpc.ServiceError | null, r: { id: { id: Buffer }; size: string }) => (err ? reject(err) : resolve(r))) as grpc.ClientWritableStream<unknown>;
    void (async () => {
      for (let i = 0; i < count; i++) {
        const message = { data: chunk(TOTAL, nonce, i), final: i === count - 1, policy: i === 0 ? 1 : 0 };
        if (!call.write(message)) await new Promise((r) => call.once('drain', r));
      }
      call.end();
    })().catch(reject);
  });
  if (!mode && Number(response.size) !== TOTAL) throw new Error(`PutStream: size ${response.size}, sent ${TOTAL}`);
  return { seconds: (performance.now() - t0) / 1000, id: response.id.id };
}

async function getStream(c: Client, id: Buffer, mode?: string): Promise<number> {
  const t0 = performance.now();
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    const call = c.GetStream!({ id: { id } }, bareMode(mode)) as grpc.ClientReadableStream<{ data?: Buffer }>;
    call.on('data', (m: { data?: Buffer }) => (total += m.data?.length ?? 0));
    call.on('error', reject);
    call.on('end', resolve);
  });
  if (total !== TOTAL) throw new Error(`GetStream: ${total} of ${TOTAL} bytes`);
  return (performance.now() - t0) / 1000;
}

/** GetStream read by curl over h2c; resolves with the seconds, after checking grpc-status 0. */
async function curlGetStream(grpcPort: number, id: Buffer, dir: string, mode?: string): Promise<number> {
  const request = join(dir, 'get-stream-request.bin');
  const headers = join(dir, 'get-stream-headers.txt');
  // GetStreamRequest {id: BlobID {id}} = 0a 12 0a 10 <16 bytes>, framed: 00 <u32 length>.
  await fsp.writeFile(request, Buffer.concat([Buffer.from([0, 0, 0, 0, 20, 0x0a, 18, 0x0a, 16]), id]));
  const { stdout } = await execFileAsync('curl', [
    '-sS', '--http2-prior-knowledge', '--max-time', '300', '-H', 'content-type: application/grpc', '-H', 'te: trailers',
    ...(mode ? ['-H', `x-bare-mode: ${mode}`] : []),
    '--data-binary', `@${request}`, '-o', '/dev/null', '-D', headers, '-w', '%{size_download} %{time_total}',
    `http://127.0.0.1:${grpcPort}/blobstore.v1.BlobService/GetStream`,
  ]);
  const [size, seconds] = stdout.trim().split(' ');
  const status = /grpc-status: *(\d+)/.exec(await fsp.readFile(headers, 'utf8'))?.[1];
  if (status !== '0' || Number(size) < TOTAL) throw new Error(`curl GetStream: grpc-status ${status}, ${size} bytes`);
  return Number(seconds);
}

/**
 * The PutStream request body, gRPC-framed: one PutChunk {data = 2, final = 3} per 1 MiB, written
 * once to a file that curl streams (a C client, as wrk and curl are for the HTTP figures; the
 * grpc-js client costs the node's 2 cores more than the server does).
 */
async function writePutStreamBody(path: string, nonce: string): Promise<void> {
  const fh = await fsp.open(path, 'w');
  const count = chunkCount(TOTAL);
  for (let i = 0; i < count; i++) {
    const data = chunk(TOTAL, nonce, i);
    const last = i === count - 1;
    const len = varint(data.length);
    const messageBytes = 1 + len.length + data.length + (last ? 2 : 0);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(messageBytes, 1);
    await fh.write(Buffer.concat([head, Buffer.from([0x12]), len, data, last ? Buffer.from([0x18, 0x01]) : Buffer.alloc(0)]));
  }
  await fh.close();
}

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** Writes and removes a file of TOTAL bytes: the pages it used are free for the next measured write. */
async function scratchWriteAndRemove(path: string): Promise<void> {
  const fh = await fsp.open(path, 'w');
  const block = Buffer.alloc(MiB, 0x5a);
  for (let at = 0; at < TOTAL; at += MiB) await fh.write(block, 0, MiB, at);
  await fh.sync();
  await fh.close();
  await fsp.rm(path, { force: true });
}

/** PutStream sent by curl over h2c from `body`; resolves with the seconds after grpc-status 0. */
async function curlPutStream(grpcPort: number, body: string, dir: string, mode?: string): Promise<number> {
  const headers = join(dir, 'put-stream-headers.txt');
  const { stdout } = await execFileAsync('curl', [
    '-sS', '--http2-prior-knowledge', '--max-time', '300', '-X', 'POST', '-H', 'content-type: application/grpc', '-H', 'te: trailers',
    ...(mode ? ['-H', `x-bare-mode: ${mode}`] : []),
    '-T', body, '-o', '/dev/null', '-D', headers, '-w', '%{time_total}', `http://127.0.0.1:${grpcPort}/blobstore.v1.BlobService/PutStream`,
  ]);
  const status = /grpc-status: *(\d+)/.exec(await fsp.readFile(headers, 'utf8'))?.[1];
  if (status !== '0') throw new Error(`curl PutStream: grpc-status ${status}: ${await fsp.readFile(headers, 'utf8')}`);
  return Number(stdout.trim());
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

/** Top self times of the one .cpuprofile in `profDir` (kept as bench/results/grpc-`name`.cpuprofile). */
function summarizeProfile(name: string, profDir: string): void {
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return log(`${BENCH}: no profile from ${name}`);
  const results = join(ROOT, 'bench/results');
  mkdirSync(results, { recursive: true });
  copyFileSync(join(profDir, file), join(results, `grpc-${name}.cpuprofile`));
  const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^file:\/\//, '').replace(ROOT, '')}:${f.lineNumber + 1}`;
    const us = profile.timeDeltas[i] ?? 0;
    totals.set(key, (totals.get(key) ?? 0) + us);
    all += us;
  });
  const busy = all - (totals.get('(idle) :0') ?? 0);
  log(`${BENCH}: ${name} profile, ${(all / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s; top self times (% of busy):`);
  for (const [key, us] of [...totals].sort((x, y) => y[1] - x[1]).slice(0, 25)) log(`  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${key}`);
}

/** The bare node:http2 reference (bare-h2.ts) on a free port, serving `file` for GetStream. */
async function startBare(file: string, profDir?: string): Promise<{ port: number; stop: () => Promise<void> }> {
  const args = [...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), join(ROOT, 'dist/bench/grpc/bare-h2.js'), String(WINDOW_BYTES), file, String(TOTAL)];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`bare-h2 exited ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { port, stop: async () => {
    child.kill('SIGTERM');
    await exited;
  } };
}

/** The blob bare-h2 serves from a file: TOTAL bytes of the bench's pattern, read once to warm it. */
async function writeBareBlob(path: string, nonce: string): Promise<void> {
  const fh = await fsp.open(path, 'w');
  for (let i = 0; i < chunkCount(TOTAL); i++) await fh.write(chunk(TOTAL, nonce, i));
  await fh.close();
  await execFileAsync('sh', ['-c', `cat '${path}' > /dev/null`]);
}

async function main(): Promise<void> {
  const dir = tempDir('grpc');
  const bodies = memoryDir('grpc-bodies');
  const grpcPort = await freePort();
  const profDirs = PROFILE ? { node: join(dir, 'prof-node'), bare: join(dir, 'prof-bare') } : undefined;
  const node = await startNode(join(dir, 'data'), ['--grpc-addr', `127.0.0.1:${grpcPort}`], profDirs ? ['--cpu-prof', `--cpu-prof-dir=${profDirs.node}`] : []);
  const bareFile = join(dir, 'bare-blob.bin');
  const bare = await startBare(bareFile, profDirs?.bare);
  const target = `127.0.0.1:${grpcPort}`;
  const client = blobClient(target);
  const bareClient = blobClient(`127.0.0.1:${bare.port}`);
  const nonce = runNonce();
  const url = `http://127.0.0.1:${node.port}`;
  const small: { http: number; grpc: number; httpErrors: number; grpcErrors: number; clientCpu: number }[] = [];
  const big: Record<BigKey, number>[] = [];
  try {
    await writeBareBlob(bareFile, `${nonce}B`);
    if (UNARY) {
      log(`${BENCH}: warm-up (2 s each)`);
      await runWrk({ url, script: 'post-unique.lua', args: [String(SIZE), `${nonce}w`], seconds: 2 });
      await unaryPuts(target, 2, `${nonce}gw`);
      await settle(BENCH);
    }
    for (let r = 0; r < (UNARY ? REPEATS : 0); r++) {
      const http = await runWrk({ url, script: 'post-unique.lua', args: [String(SIZE), `${nonce}h${r}`] });
      const g = await unaryPuts(target, RUN_SECONDS, `${nonce}g${r}`);
      small.push({ http: http.rps, grpc: g.rps, httpErrors: http.errors, grpcErrors: g.errors, clientCpu: g.clientCpu });
      log(`${BENCH} 4 KiB round ${r + 1}/${REPEATS}: HTTP raw ${http.rps.toFixed(0)} PUT/s, gRPC ${g.rps.toFixed(0)} Put/s ` +
        `(errors ${http.errors} / ${g.errors}; the gRPC client threads used ${(g.clientCpu * 100).toFixed(0)}% of a core)`);
    }
    // Warm-up (not counted): the node's first large upload after start is much slower than the next.
    const warm = await putChunked(node.port, TOTAL, `${nonce}warm`);
    await fetch(`${url}/v1/blobs/${warm.id}`, { method: 'DELETE' });
    for (let r = 0; r < REPEATS; r++) {
      await settle(`${BENCH} 1 GiB round ${r + 1}`);
      const raw = await putChunked(node.port, TOTAL, `${nonce}R${r}`);
      const body = join(bodies, 'put-stream-body.bin');
      await writePutStreamBody(body, `${nonce}C${r}`);
      // The disk is slower for a large write that follows another (its cache is still draining
      // when the guest's dirty pages are gone): the node's PutStream and the bare write + fsync
      // take turns going first, each after a settle, and the discard runs (no disk) go between.
      const bareFirst = r % 2 === 1;
      // Each side's file goes once it is measured (the node's blob deleted, the bare one removed),
      // so the next write finds pages just freed, as the first does after a scratch file.
      const dropStored = async (): Promise<void> => {
        for (const id of await listIds(node.port, 1000)) if (id !== raw.id) await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
      };
      const durable = async <T>(ours: () => Promise<T>, bareFsync: () => Promise<T>, label: string): Promise<[T, T]> => {
        const oursThenDrop = async (): Promise<T> => {
          const result = await ours();
          await dropStored();
          return result;
        };
        await scratchWriteAndRemove(join(dir, 'scratch.bin'));
        await settle(`${BENCH} 1 GiB round ${r + 1} (${label}, ${bareFirst ? 'bare fsync' : 'node'} first)`);
        const first = await (bareFirst ? bareFsync : oursThenDrop)();
        await settle(`${BENCH} 1 GiB round ${r + 1} (${label}, then ${bareFirst ? 'node' : 'bare fsync'})`);
        const second = await (bareFirst ? oursThenDrop : bareFsync)();
        return bareFirst ? [second, first] : [first, second];
      };
      const bareDiscardCurl = await curlPutStream(bare.port, body, dir, 'discard');
      const [grpcPutCurl, bareFsyncCurl] = await durable(() => curlPutStream(grpcPort, body, dir), () => curlPutStream(bare.port, body, dir, 'fsync'), 'curl');
      await fsp.rm(body);
      const bareDiscardJs = (await putStream(bareClient, `${nonce}D${r}`, 'discard')).seconds;
      const [gp, bareFsyncJsPut] = await durable(() => putStream(client, `${nonce}G${r}`), () => putStream(bareClient, `${nonce}F${r}`, 'fsync'), 'grpc-js');
      const bareFsyncJs = bareFsyncJsPut.seconds;
      await curlGetSeconds(`${url}/v1/blobs/${raw.id}`, TOTAL); // warm the page cache for both reads
      const rawGet = await curlGetSeconds(`${url}/v1/blobs/${raw.id}`, TOTAL);
      const id = Buffer.from(raw.id, 'hex');
      const grpcGet = await curlGetStream(grpcPort, id, dir);
      const bareMemoryCurl = await curlGetStream(bare.port, id, dir, 'memory');
      const bareFileCurl = await curlGetStream(bare.port, id, dir, 'file');
      const grpcJsGet = await getStream(client, id);
      const bareMemoryJs = await getStream(bareClient, id, 'memory');
      const bareFileJs = await getStream(bareClient, id, 'file');
      big.push({
        rawPut: raw.seconds, grpcPut: grpcPutCurl, grpcJsPut: gp.seconds, rawGet, grpcGet, grpcJsGet,
        bareDiscardCurl, bareFsyncCurl, bareDiscardJs, bareFsyncJs, bareMemoryCurl, bareFileCurl, bareMemoryJs, bareFileJs,
      });
      const mbs = (s: number): string => (TOTAL / s / 1e6).toFixed(0);
      log(`${BENCH} 1 GiB round ${r + 1}/${REPEATS}: PUT raw ${mbs(raw.seconds)} MB/s, PutStream ${mbs(grpcPutCurl)} MB/s (curl), ${mbs(gp.seconds)} MB/s (grpc-js); ` +
        `GET raw ${mbs(rawGet)} MB/s, GetStream ${mbs(grpcGet)} MB/s (curl), ${mbs(grpcJsGet)} MB/s (grpc-js)`);
      log(`${BENCH} 1 GiB round ${r + 1}/${REPEATS}, bare node:http2: put discard ${mbs(bareDiscardCurl)} / fsync ${mbs(bareFsyncCurl)} MB/s (curl), ` +
        `${mbs(bareDiscardJs)} / ${mbs(bareFsyncJs)} MB/s (grpc-js); get memory ${mbs(bareMemoryCurl)} / file ${mbs(bareFileCurl)} MB/s (curl), ` +
        `${mbs(bareMemoryJs)} / ${mbs(bareFileJs)} MB/s (grpc-js)`);
      for (const id of [raw.id, gp.id.toString('hex')]) await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
    }
  } finally {
    client.close();
    bareClient.close();
    await node.stop();
    await bare.stop();
    if (profDirs) {
      summarizeProfile('node', profDirs.node);
      summarizeProfile('bare', profDirs.bare);
    }
    removeDir(dir);
    removeDir(bodies);
  }
  if (UNARY) emitUnary(small);
  emitStreams(big);
}

type BigKey = 'rawPut' | 'grpcPut' | 'grpcJsPut' | 'rawGet' | 'grpcGet' | 'grpcJsGet' | 'bareDiscardCurl' | 'bareFsyncCurl' | 'bareDiscardJs' | 'bareFsyncJs' |
  'bareMemoryCurl' | 'bareFileCurl' | 'bareMemoryJs' | 'bareFileJs';

function emitUnary(small: { http: number; grpc: number; httpErrors: number; grpcErrors: number; clientCpu: number }[]): void {
  const smallCommon = { body_bytes: SIZE, seconds: RUN_SECONDS, repeats: REPEATS };
  emit({ bench: BENCH, metric: 'http_raw_put_4KiB', value: round(median(small.map((s) => s.http)), 0), unit: 'req/s', ...smallCommon, connections: CONNECTIONS, runs: small.map((s) => round(s.http, 0)), errors: small.reduce((a, s) => a + s.httpErrors, 0) });
  emit({ bench: BENCH, metric: 'grpc_unary_put_4KiB', value: round(median(small.map((s) => s.grpc)), 0), unit: 'req/s', ...smallCommon, channels: CHANNELS, client_threads: THREADS, in_flight: CHANNELS * IN_FLIGHT, runs: small.map((s) => round(s.grpc, 0)), errors: small.reduce((a, s) => a + s.grpcErrors, 0), client_cpu: round(median(small.map((s) => s.clientCpu)), 2) });
  const unaryRatio = median(small.map((s) => s.grpc / s.http));
  emit({ bench: BENCH, metric: 'grpc_unary_vs_http_raw', value: round(unaryRatio), unit: 'ratio', target: '>= 0.60', pass: unaryRatio >= 0.6 });
}

function emitStreams(big: Record<BigKey, number>[]): void {
  const bigCommon = { bytes: TOTAL, repeats: REPEATS };
  const mbps = (k: BigKey): number => round(median(big.map((x) => TOTAL / x[k] / 1e6)), 1);
  emit({ bench: BENCH, metric: 'put_raw', value: mbps('rawPut'), unit: 'MB/s', ...bigCommon });
  emit({ bench: BENCH, metric: 'put_stream_grpc', value: mbps('grpcPut'), unit: 'MB/s', ...bigCommon, message_bytes: 1024 * 1024, client: 'curl' });
  emit({ bench: BENCH, metric: 'put_stream_grpc_js', value: mbps('grpcJsPut'), unit: 'MB/s', ...bigCommon, message_bytes: 1024 * 1024, client: 'grpc-js' });
  emit({ bench: BENCH, metric: 'get_raw_warm', value: mbps('rawGet'), unit: 'MB/s', ...bigCommon, client: 'curl' });
  emit({ bench: BENCH, metric: 'get_stream_grpc_warm', value: mbps('grpcGet'), unit: 'MB/s', ...bigCommon, client: 'curl' });
  emit({ bench: BENCH, metric: 'get_stream_grpc_js_warm', value: mbps('grpcJsGet'), unit: 'MB/s', ...bigCommon, client: 'grpc-js' });
  const putRatio = median(big.map((x) => x.rawPut / x.grpcPut));
  const getRatio = median(big.map((x) => x.rawGet / x.grpcGet));
  emit({ bench: BENCH, metric: 'put_stream_vs_raw', value: round(putRatio), unit: 'ratio', target: '>= 0.70', pass: putRatio >= 0.7 });
  emit({ bench: BENCH, metric: 'get_stream_vs_raw', value: round(getRatio), unit: 'ratio', target: '>= 0.70', pass: getRatio >= 0.7 });
  // The bare node:http2 ceiling (issue 19): MB/s per mode and client, then ours over it per round.
  const bareRows: [string, BigKey, string][] = [
    ['bare_h2_put_discard', 'bareDiscardCurl', 'curl'], ['bare_h2_put_fsync', 'bareFsyncCurl', 'curl'],
    ['bare_h2_put_discard_grpc_js', 'bareDiscardJs', 'grpc-js'], ['bare_h2_put_fsync_grpc_js', 'bareFsyncJs', 'grpc-js'],
    ['bare_h2_get_memory', 'bareMemoryCurl', 'curl'], ['bare_h2_get_file_warm', 'bareFileCurl', 'curl'],
    ['bare_h2_get_memory_grpc_js', 'bareMemoryJs', 'grpc-js'], ['bare_h2_get_file_warm_grpc_js', 'bareFileJs', 'grpc-js'],
  ];
  for (const [metric, key, client] of bareRows) emit({ bench: BENCH, metric, value: mbps(key), unit: 'MB/s', ...bigCommon, message_bytes: 1024 * 1024, client });
  const ratios: [string, BigKey, BigKey, string][] = [
    ['put_stream_vs_bare_fsync', 'grpcPut', 'bareFsyncCurl', 'curl'], ['put_stream_vs_bare_discard', 'grpcPut', 'bareDiscardCurl', 'curl'],
    ['put_stream_vs_bare_fsync_grpc_js', 'grpcJsPut', 'bareFsyncJs', 'grpc-js'], ['put_stream_vs_bare_discard_grpc_js', 'grpcJsPut', 'bareDiscardJs', 'grpc-js'],
    ['get_stream_vs_bare_file', 'grpcGet', 'bareFileCurl', 'curl'], ['get_stream_vs_bare_memory', 'grpcGet', 'bareMemoryCurl', 'curl'],
    ['get_stream_vs_bare_file_grpc_js', 'grpcJsGet', 'bareFileJs', 'grpc-js'], ['get_stream_vs_bare_memory_grpc_js', 'grpcJsGet', 'bareMemoryJs', 'grpc-js'],
  ];
  for (const [metric, ours, ref, client] of ratios) {
    // Seconds: the bare server's time over ours is our throughput over its.
    const ratio = median(big.map((x) => x[ref] / x[ours]));
    emit({ bench: BENCH, metric, value: round(ratio), unit: 'ratio', client, target: '>= 0.80', pass: ratio >= 0.8, runs: big.map((x) => round(x[ref] / x[ours])) });
  }
}

await main();
