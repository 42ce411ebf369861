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
 * Rounds interleave HTTP and gRPC so load from elsewhere hits both alike; figures are medians,
 * ratios are per round. The unary load comes from a worker thread (unary-load.ts; more with
 * BENCH_GRPC_CLIENT_THREADS); the log says how much CPU it used: on two cores the client competes
 * with the node (a grpc-js call costs the client about as much CPU as the server).
 *
 * Knobs: BENCH_RUN_SECONDS, BENCH_REPEATS, BENCH_STREAM_BYTES (lib.ts); BENCH_GRPC_CHANNELS (4),
 * BENCH_GRPC_IN_FLIGHT (16 per channel), BENCH_GRPC_CLIENT_THREADS (1).
 */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from '../../src/grpc/proto.js';
import {
  CONNECTIONS, GiB, KiB, REPEATS, RUN_SECONDS, curlGetSeconds, emit, envInt, freePort, log, median, memoryDir, removeDir, round, runNonce, runWrk, settle, startNode, tempDir,
} from '../node/lib.js';
import { chunk, chunkCount, putChunked } from '../node/stream-client.js';
import type { UnaryLoadJob, UnaryLoadResult } from './unary-load.js';

const BENCH = 'grpc';
const SIZE = 4 * KiB;
const TOTAL = envInt('BENCH_STREAM_BYTES', GiB);
const CHANNELS = envInt('BENCH_GRPC_CHANNELS', 4);
const IN_FLIGHT = envInt('BENCH_GRPC_IN_FLIGHT', 16);
const THREADS = envInt('BENCH_GRPC_CLIENT_THREADS', 1);
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

async function putStream(c: Client, nonce: string): Promise<{ seconds: number; id: Buffer }> {
  const count = chunkCount(TOTAL);
  const t0 = performance.now();
  const response = await new Promise<{ id: { id: Buffer }; size: string }>((resolve, reject) => {
    const call = c.PutStream!((err: grpc.ServiceError | null, r: { id: { id: Buffer }; size: string }) => (err ? reject(err) : resolve(r))) as grpc.ClientWritableStream<unknown>;
    void (async () => {
      for (let i = 0; i < count; i++) {
        const message = { data: chunk(TOTAL, nonce, i), final: i === count - 1, policy: i === 0 ? 1 : 0 };
        if (!call.write(message)) await new Promise((r) => call.once('drain', r));
      }
      call.end();
    })().catch(reject);
  });
  if (Number(response.size) !== TOTAL) throw new Error(`PutStream: size ${response.size}, sent ${TOTAL}`);
  return { seconds: (performance.now() - t0) / 1000, id: response.id.id };
}

async function getStream(c: Client, id: Buffer): Promise<number> {
  const t0 = performance.now();
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    const call = c.GetStream!({ id: { id } }) as grpc.ClientReadableStream<{ data?: Buffer }>;
    call.on('data', (m: { data?: Buffer }) => (total += m.data?.length ?? 0));
    call.on('error', reject);
    call.on('end', resolve);
  });
  if (total !== TOTAL) throw new Error(`GetStream: ${total} of ${TOTAL} bytes`);
  return (performance.now() - t0) / 1000;
}

/** GetStream read by curl over h2c; resolves with the seconds, after checking grpc-status 0. */
async function curlGetStream(grpcPort: number, id: Buffer, dir: string): Promise<number> {
  const request = join(dir, 'get-stream-request.bin');
  const headers = join(dir, 'get-stream-headers.txt');
  // GetStreamRequest {id: BlobID {id}} = 0a 12 0a 10 <16 bytes>, framed: 00 <u32 length>.
  await fsp.writeFile(request, Buffer.concat([Buffer.from([0, 0, 0, 0, 20, 0x0a, 18, 0x0a, 16]), id]));
  const { stdout } = await execFileAsync('curl', [
    '-sS', '--http2-prior-knowledge', '--max-time', '300', '-H', 'content-type: application/grpc', '-H', 'te: trailers',
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

/** PutStream sent by curl over h2c from `body`; resolves with the seconds after grpc-status 0. */
async function curlPutStream(grpcPort: number, body: string, dir: string): Promise<number> {
  const headers = join(dir, 'put-stream-headers.txt');
  const { stdout } = await execFileAsync('curl', [
    '-sS', '--http2-prior-knowledge', '--max-time', '300', '-X', 'POST', '-H', 'content-type: application/grpc', '-H', 'te: trailers',
    '-T', body, '-o', '/dev/null', '-D', headers, '-w', '%{time_total}', `http://127.0.0.1:${grpcPort}/blobstore.v1.BlobService/PutStream`,
  ]);
  const status = /grpc-status: *(\d+)/.exec(await fsp.readFile(headers, 'utf8'))?.[1];
  if (status !== '0') throw new Error(`curl PutStream: grpc-status ${status}: ${await fsp.readFile(headers, 'utf8')}`);
  return Number(stdout.trim());
}

async function main(): Promise<void> {
  const dir = tempDir('grpc');
  const bodies = memoryDir('grpc-bodies');
  const grpcPort = await freePort();
  const node = await startNode(join(dir, 'data'), ['--grpc-addr', `127.0.0.1:${grpcPort}`]);
  const target = `127.0.0.1:${grpcPort}`;
  const client = blobClient(target);
  const nonce = runNonce();
  const url = `http://127.0.0.1:${node.port}`;
  const small: { http: number; grpc: number; httpErrors: number; grpcErrors: number; clientCpu: number }[] = [];
  const big: { rawPut: number; grpcPut: number; grpcJsPut: number; rawGet: number; grpcGet: number; grpcJsGet: number }[] = [];
  try {
    log(`${BENCH}: warm-up (2 s each)`);
    await runWrk({ url, script: 'post-unique.lua', args: [String(SIZE), `${nonce}w`], seconds: 2 });
    await unaryPuts(target, 2, `${nonce}gw`);
    await settle(BENCH);
    for (let r = 0; r < REPEATS; r++) {
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
      await settle(`${BENCH} 1 GiB round ${r + 1} (gRPC)`);
      const grpcPutCurl = await curlPutStream(grpcPort, body, dir);
      await fsp.rm(body);
      await settle(`${BENCH} 1 GiB round ${r + 1} (gRPC, grpc-js)`);
      const gp = await putStream(client, `${nonce}G${r}`);
      await curlGetSeconds(`${url}/v1/blobs/${raw.id}`, TOTAL); // warm the page cache for both reads
      const rawGet = await curlGetSeconds(`${url}/v1/blobs/${raw.id}`, TOTAL);
      const grpcGet = await curlGetStream(grpcPort, Buffer.from(raw.id, 'hex'), dir);
      const grpcJsGet = await getStream(client, Buffer.from(raw.id, 'hex'));
      big.push({ rawPut: raw.seconds, grpcPut: grpcPutCurl, grpcJsPut: gp.seconds, rawGet, grpcGet, grpcJsGet });
      const mbs = (s: number): string => (TOTAL / s / 1e6).toFixed(0);
      log(`${BENCH} 1 GiB round ${r + 1}/${REPEATS}: PUT raw ${mbs(raw.seconds)} MB/s, PutStream ${mbs(grpcPutCurl)} MB/s (curl), ${mbs(gp.seconds)} MB/s (grpc-js); ` +
        `GET raw ${mbs(rawGet)} MB/s, GetStream ${mbs(grpcGet)} MB/s (curl), ${mbs(grpcJsGet)} MB/s (grpc-js)`);
      for (const id of [raw.id, gp.id.toString('hex')]) await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
    }
  } finally {
    client.close();
    await node.stop();
    removeDir(dir);
    removeDir(bodies);
  }
  const smallCommon = { body_bytes: SIZE, seconds: RUN_SECONDS, repeats: REPEATS };
  emit({ bench: BENCH, metric: 'http_raw_put_4KiB', value: round(median(small.map((s) => s.http)), 0), unit: 'req/s', ...smallCommon, connections: CONNECTIONS, runs: small.map((s) => round(s.http, 0)), errors: small.reduce((a, s) => a + s.httpErrors, 0) });
  emit({ bench: BENCH, metric: 'grpc_unary_put_4KiB', value: round(median(small.map((s) => s.grpc)), 0), unit: 'req/s', ...smallCommon, channels: CHANNELS, client_threads: THREADS, in_flight: CHANNELS * IN_FLIGHT, runs: small.map((s) => round(s.grpc, 0)), errors: small.reduce((a, s) => a + s.grpcErrors, 0), client_cpu: round(median(small.map((s) => s.clientCpu)), 2) });
  const unaryRatio = median(small.map((s) => s.grpc / s.http));
  emit({ bench: BENCH, metric: 'grpc_unary_vs_http_raw', value: round(unaryRatio), unit: 'ratio', target: '>= 0.60', pass: unaryRatio >= 0.6 });
  const bigCommon = { bytes: TOTAL, repeats: REPEATS };
  const mbps = (k: keyof (typeof big)[number]): number => round(median(big.map((x) => TOTAL / x[k] / 1e6)), 1);
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
}

await main();
