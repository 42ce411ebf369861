/**
 * The HTTP streams against the raw body path, 1 GiB each way, in the same run (issue target:
 * streams >= 70% of raw). Per round: raw chunked PUT, NDJSON PutChunk stream PUT (1 MiB of data
 * per message), then warm GETs of the stored blob: raw with curl and the NDJSON GetChunk stream
 * with curl, both into /dev/null. Both PUT bodies are written to files in memory (/dev/shm) first
 * and streamed by curl (-T, chunked), so the client costs the node's 2 cores little and the same
 * either way, and no writeback of those files competes with the stores.
 */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { promisify } from 'node:util';
import { base64Length, base64Paths, encodeBase64Into, setBase64Path } from '../../src/http/base64-encoder.js';
import { GiB, MiB, REPEATS, curlGetSeconds, emit, envInt, log, median, memoryDir, removeDir, round, runNonce, settle, startNode, tempDir } from './lib.js';
import { runMicro, type MicroTask } from './micro.js';
import { chunk, chunkCount } from './stream-client.js';

const BENCH = 'http-ndjson-1GiB';
const TOTAL = envInt('BENCH_STREAM_BYTES', GiB);
const execFileAsync = promisify(execFile);

/** The NDJSON line of chunk i: `{"data":"<base64>","final":<bool>}\n`. */
function line(nonce: string, i: number): Buffer {
  const c = chunk(TOTAL, nonce, i);
  const last = i === chunkCount(TOTAL) - 1;
  return Buffer.from(`{"data":"${c.toString('base64')}","final":${last}}\n`, 'latin1');
}

/** The request bodies, written to files that curl streams: raw bytes, and the same as NDJSON. */
async function writeBodies(rawPath: string, ndjsonPath: string, nonce: string): Promise<void> {
  const raw = await fsp.open(rawPath, 'w');
  const nd = await fsp.open(ndjsonPath, 'w');
  for (let i = 0; i < chunkCount(TOTAL); i++) {
    await raw.write(chunk(TOTAL, nonce, i));
    await nd.write(line(nonce, i));
  }
  await raw.close();
  await nd.close();
}

/** POST of a file with curl (chunked, streamed from the file); the seconds and the id. */
async function curlPost(url: string, file: string): Promise<{ seconds: number; id: string }> {
  const { stdout } = await execFileAsync('curl', [
    '-sS', '--max-time', '300', '-X', 'POST', '-H', 'Transfer-Encoding: chunked', '-H', 'Content-Type: application/octet-stream',
    '-T', file, '-w', '\n%{http_code} %{time_total}', url,
  ]);
  const [body, tail] = stdout.trim().split('\n');
  const [code, seconds] = tail!.split(' ');
  if (code !== '201') throw new Error(`curl POST ${url}: HTTP ${code}: ${body}`);
  const parsed = JSON.parse(body!) as { id: string; size: number };
  if (parsed.size !== TOTAL) throw new Error(`POST ${url}: size ${parsed.size}, sent ${TOTAL}`);
  return { seconds: Number(seconds), id: parsed.id };
}

async function main(): Promise<void> {
  const dir = tempDir('ndjson');
  const bodies = memoryDir('ndjson-bodies');
  const node = await startNode(`${dir}/data`);
  const nonce = runNonce();
  const rounds: { rawPut: number; ndPut: number; rawGet: number; ndGet: number }[] = [];
  try {
    // Warm-up (not counted): the node's first large upload after start runs at a fraction of the
    // speed of the next ones, whichever path takes it.
    await writeBodies(`${bodies}/warm.bin`, `${bodies}/warm.ndjson`, `${nonce}warm`);
    const warm = await curlPost(`http://127.0.0.1:${node.port}/v1/blobs`, `${bodies}/warm.bin`);
    await fetch(`http://127.0.0.1:${node.port}/v1/blobs/${warm.id}`, { method: 'DELETE' });
    await fsp.rm(`${bodies}/warm.bin`);
    await fsp.rm(`${bodies}/warm.ndjson`);
    for (let r = 0; r < REPEATS; r++) {
      const rawFile = `${bodies}/raw.bin`;
      const ndFile = `${bodies}/body.ndjson`;
      await writeBodies(rawFile, ndFile, `${nonce}r${r}`);
      await settle(`${BENCH} round ${r + 1}`);
      const raw = await curlPost(`http://127.0.0.1:${node.port}/v1/blobs`, rawFile);
      // Same bytes, same id: the raw copy goes, so the stream stores them for real.
      await fetch(`http://127.0.0.1:${node.port}/v1/blobs/${raw.id}`, { method: 'DELETE' });
      await settle(`${BENCH} round ${r + 1} (ndjson)`);
      const nd = await curlPost(`http://127.0.0.1:${node.port}/v1/blobs/stream`, ndFile);
      if (nd.id !== raw.id) throw new Error(`NDJSON stream stored ${nd.id}, the raw body ${raw.id}`);
      await fsp.rm(rawFile);
      await fsp.rm(ndFile);
      const base = `http://127.0.0.1:${node.port}/v1/blobs/${raw.id}`;
      await curlGetSeconds(base, TOTAL); // warm the page cache for both reads
      const rawGet = await curlGetSeconds(base, TOTAL);
      const ndGet = await curlGetSeconds(`${base}/stream`, TOTAL);
      rounds.push({ rawPut: raw.seconds, ndPut: nd.seconds, rawGet, ndGet });
      log(`${BENCH} round ${r + 1}/${REPEATS}: PUT raw ${(TOTAL / raw.seconds / 1e6).toFixed(0)} MB/s, NDJSON ${(TOTAL / nd.seconds / 1e6).toFixed(0)} MB/s; ` +
        `GET raw ${(TOTAL / rawGet / 1e6).toFixed(0)} MB/s, NDJSON ${(TOTAL / ndGet / 1e6).toFixed(0)} MB/s (MB of blob data per second)`);
      await fetch(`http://127.0.0.1:${node.port}/v1/blobs/${nd.id}`, { method: 'DELETE' });
    }
  } finally {
    await node.stop();
    removeDir(dir);
    removeDir(bodies);
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

/** Microseconds to encode 1 MiB into a line buffer: each native path, and Buffer's string + write. */
async function encodeMicro(): Promise<void> {
  const src = Buffer.allocUnsafe(MiB);
  for (let i = 0; i < MiB; i++) src[i] = (i * 131 + (i >>> 11)) & 0xff;
  const dst = Buffer.allocUnsafe(base64Length(MiB) + 64);
  const tasks: MicroTask[] = [{ name: 'buffer_toString_write', fn: () => dst.write(src.toString('base64'), 19, 'latin1') }];
  const native = base64Paths().filter((p) => p.supported && p.name !== 'js').map((p) => p.name);
  for (const path of native) {
    tasks.push({ name: `native_${path}`, fn: () => {
      setBase64Path(path);
      return encodeBase64Into(src, dst, 19);
    } });
  }
  const results = await runMicro(tasks);
  setBase64Path('auto');
  // Speeds and the ratio from the medians: on a shared machine the means carry the preemptions.
  const baseline = results[0]!.usPerOpP50;
  for (const r of results) {
    emit({
      bench: BENCH, metric: `base64_1MiB_${r.name}`, value: round(r.usPerOp, 1), unit: 'us/MiB', p50_us: round(r.usPerOpP50, 1),
      gbps_in_p50: round(MiB / r.usPerOpP50 / 1e3, 2), vs_buffer_p50: round(baseline / r.usPerOpP50, 2), rme_pct: round(r.rmePercent, 1),
    });
  }
}

await main();
await encodeMicro();
