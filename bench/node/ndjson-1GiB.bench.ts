/**
 * The HTTP streams against the raw body path, 1 GiB each way, in the same run (issue target:
 * streams >= 70% of raw). Per round: raw chunked PUT, NDJSON PutChunk stream PUT (1 MiB of data
 * per message), then warm GETs of the stored blob: raw with curl and the NDJSON GetChunk stream
 * with curl, both into /dev/null. The client pre-encodes base64 cheaply (the stamped prefix of
 * each chunk is 48 bytes, a multiple of 3, so only it is encoded per chunk), so the figure is the
 * node's cost, not the client's.
 */
import { execFile } from 'node:child_process';
import { request, type IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import { GiB, REPEATS, emit, envInt, log, median, removeDir, round, runNonce, settle, startNode, tempDir } from './lib.js';
import { CHUNK_BYTES, chunk, chunkCount, putChunked, responseText } from './stream-client.js';

const BENCH = 'http-ndjson-1GiB';
const TOTAL = envInt('BENCH_STREAM_BYTES', GiB);
const STAMP = 48;
const execFileAsync = promisify(execFile);

/** The NDJSON line of chunk i: `{"data":"<base64>","final":<bool>}\n`. */
function line(nonce: string, i: number, restB64: string, tailB64: string): Buffer {
  const c = chunk(TOTAL, nonce, i);
  const last = i === chunkCount(TOTAL) - 1;
  const rest = c.length === CHUNK_BYTES ? restB64 : last ? tailB64 : c.subarray(STAMP).toString('base64');
  return Buffer.from(`{"data":"${c.subarray(0, STAMP).toString('base64')}${rest}","final":${last}}\n`, 'latin1');
}

async function putNdjson(port: number, nonce: string): Promise<{ seconds: number; id: string }> {
  const sample = chunk(TOTAL, nonce, 0);
  const restB64 = sample.subarray(STAMP).toString('base64');
  const lastIndex = chunkCount(TOTAL) - 1;
  const tailB64 = chunk(TOTAL, nonce, lastIndex).subarray(STAMP).toString('base64');
  const t0 = performance.now();
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/blobs/stream', headers: { 'Content-Type': 'application/x-ndjson', 'Transfer-Encoding': 'chunked' } }, resolve);
    req.on('error', reject);
    void (async () => {
      for (let i = 0; i <= lastIndex; i++) {
        if (!req.write(line(nonce, i, restB64, tailB64))) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })().catch(reject);
  });
  const text = await responseText(res);
  const seconds = (performance.now() - t0) / 1000;
  if (res.statusCode !== 201) throw new Error(`NDJSON PUT: HTTP ${res.statusCode}: ${text}`);
  const body = JSON.parse(text) as { id: string; size: number };
  if (body.size !== TOTAL) throw new Error(`NDJSON PUT: size ${body.size}, sent ${TOTAL}`);
  return { seconds, id: body.id };
}

async function curlSeconds(url: string, minBytes: number): Promise<number> {
  const { stdout } = await execFileAsync('curl', ['-sS', '-o', '/dev/null', '--max-time', '300', '-w', '%{http_code} %{size_download} %{time_total}', url]);
  const [code, size, seconds] = stdout.trim().split(' ');
  if (code !== '200' || Number(size) < minBytes) throw new Error(`curl ${url}: HTTP ${code}, ${size} bytes`);
  return Number(seconds);
}

async function main(): Promise<void> {
  const dir = tempDir('ndjson');
  const node = await startNode(`${dir}/data`);
  const nonce = runNonce();
  const rounds: { rawPut: number; ndPut: number; rawGet: number; ndGet: number }[] = [];
  try {
    for (let r = 0; r < REPEATS; r++) {
      await settle(`${BENCH} round ${r + 1}`);
      const raw = await putChunked(node.port, TOTAL, `${nonce}r${r}`);
      await settle(`${BENCH} round ${r + 1} (ndjson)`);
      const nd = await putNdjson(node.port, `${nonce}n${r}`);
      const base = `http://127.0.0.1:${node.port}/v1/blobs/${raw.id}`;
      await curlSeconds(base, TOTAL); // warm the page cache for both reads
      const rawGet = await curlSeconds(base, TOTAL);
      const ndGet = await curlSeconds(`${base}/stream`, TOTAL);
      rounds.push({ rawPut: raw.seconds, ndPut: nd.seconds, rawGet, ndGet });
      log(`${BENCH} round ${r + 1}/${REPEATS}: PUT raw ${(TOTAL / raw.seconds / 1e6).toFixed(0)} MB/s, NDJSON ${(TOTAL / nd.seconds / 1e6).toFixed(0)} MB/s; ` +
        `GET raw ${(TOTAL / rawGet / 1e6).toFixed(0)} MB/s, NDJSON ${(TOTAL / ndGet / 1e6).toFixed(0)} MB/s (MB of blob data per second)`);
      for (const id of [raw.id, nd.id]) await fetch(`http://127.0.0.1:${node.port}/v1/blobs/${id}`, { method: 'DELETE' });
    }
  } finally {
    await node.stop();
    removeDir(dir);
  }
  const common = { bytes: TOTAL, repeats: REPEATS };
  const mbps = (k: keyof (typeof rounds)[number]): number => round(median(rounds.map((x) => TOTAL / x[k] / 1e6)), 1);
  emit({ bench: BENCH, metric: 'put_raw', value: mbps('rawPut'), unit: 'MB/s', ...common });
  emit({ bench: BENCH, metric: 'put_ndjson', value: mbps('ndPut'), unit: 'MB/s', ...common });
  emit({ bench: BENCH, metric: 'get_raw_warm', value: mbps('rawGet'), unit: 'MB/s', ...common, client: 'curl' });
  emit({ bench: BENCH, metric: 'get_ndjson_warm', value: mbps('ndGet'), unit: 'MB/s', ...common, client: 'curl' });
  const putRatio = median(rounds.map((x) => x.rawPut / x.ndPut));
  const getRatio = median(rounds.map((x) => x.rawGet / x.ndGet));
  emit({ bench: BENCH, metric: 'put_ndjson_vs_raw', value: round(putRatio), unit: 'ratio', target: '>= 0.70', pass: putRatio >= 0.7 });
  emit({ bench: BENCH, metric: 'get_ndjson_vs_raw', value: round(getRatio), unit: 'ratio', target: '>= 0.70', pass: getRatio >= 0.7 });
}

await main();
