/**
 * What TLS costs: the same build with and without a certificate, same wrk, same run. 4 KiB
 * durable PUT/s and hot GET/s at 64 keep-alive connections (the handshake is paid once per
 * connection), and a streamed 1 GiB PUT and GET with curl. Rounds interleave plain and TLS so that
 * load from elsewhere hits both alike; each rate is the median of REPEATS runs. Both nodes store
 * the same bodies (same nonce), so their ids agree and one id list serves both.
 *
 *   openssl CA + certificate -> plain node, TLS node -> warm-up PUTs to both ->
 *   REPEATS x [plain PUT, TLS PUT, plain GET, TLS GET] -> 1 GiB PUT/GET plain, then TLS
 */
import { execFile, execFileSync } from 'node:child_process';
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { GiB, KiB, MiB, emit, listIds, log, removeDir, repeatWrk, round, runNonce, runWrk, settle, startNode, tempDir } from './lib.js';

const BENCH = 'tls';
const SIZE = 4 * KiB;
const HOT_SET = 4096;
const STREAM_BYTES = Number(process.env.BENCH_TLS_STREAM_BYTES ?? GiB);
const run = promisify(execFile);

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA and a certificate for 127.0.0.1 signed by it (P-256, as most deployments use). */
function makeCerts(dir: string): { ca: string; cert: string; key: string } {
  const f = (name: string): string => join(dir, name);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=bench-ca']);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('node.key'), '-out', f('node.csr'), '-subj', '/CN=node']);
  writeFileSync(f('node.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl(['x509', '-req', '-in', f('node.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('node.pem'), '-days', '2', '-extfile', f('node.ext')]);
  return { ca: f('ca.pem'), cert: f('node.pem'), key: f('node.key') };
}

/** A file of `bytes` pseudo-random bytes (distinct per run: no dedupe between the two nodes' runs). */
function makeFile(path: string, bytes: number, seed: string): void {
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(MiB);
  for (let off = 0; off < bytes; off += block.length) {
    for (let i = 0; i < block.length; i += 32) block.write(`${seed}:${off + i}`.padEnd(32, '.'), i, 'latin1');
    writeSync(fd, block, 0, Math.min(block.length, bytes - off));
  }
  closeSync(fd);
}

/**
 * curl's seconds for a streamed PUT of `file` (chunked: this uWS refuses a ten-digit
 * Content-Length) and for a GET of it back into /dev/null.
 */
async function streamSeconds(base: string, file: string, ca: string | undefined): Promise<{ put: number; get: number }> {
  const tls = ca ? ['--cacert', ca] : [];
  const put = await run('curl', ['-sS', ...tls, '--max-time', '900', '-H', 'Content-Type: application/octet-stream', '-X', 'POST', '-T', file, '-H', 'Transfer-Encoding: chunked',
    '-w', '\n%{http_code} %{time_total}', `${base}/v1/blobs`], { maxBuffer: 4 * MiB });
  const lines = put.stdout.trim().split('\n');
  const [code, putSeconds] = lines.at(-1)!.split(' ');
  if (code !== '200' && code !== '201') throw new Error(`PUT ${base}: HTTP ${code}: ${lines.slice(0, -1).join(' ')}`);
  const id = (JSON.parse(lines.slice(0, -1).join('')) as { id: string }).id;
  const get = await run('curl', ['-sS', ...tls, '--max-time', '900', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{time_total}', `${base}/v1/blobs/${id}`]);
  const [getCode, size, getSeconds] = get.stdout.trim().split(' ');
  if (getCode !== '200' || Number(size) !== STREAM_BYTES) throw new Error(`GET ${base}: HTTP ${getCode}, ${size} bytes`);
  return { put: Number(putSeconds), get: Number(getSeconds) };
}

/** Copies the blobs `ids` from the plain node to the TLS node (so the same GET set hits both). */
async function storeEach(tlsUrl: string, plainPort: number, ids: readonly string[]): Promise<void> {
  const { Agent, fetch: tlsFetch } = await import('undici');
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  for (const id of ids) {
    const bytes = Buffer.from(await (await fetch(`http://127.0.0.1:${plainPort}/v1/blobs/${id}`)).arrayBuffer());
    const res = await tlsFetch(`${tlsUrl}/v1/blobs`, { method: 'POST', body: bytes, headers: { 'content-type': 'application/octet-stream' }, dispatcher });
    if (res.status !== 201 && res.status !== 200) throw new Error(`copy ${id}: HTTP ${res.status}`);
    await res.arrayBuffer();
  }
  await dispatcher.close();
}

async function main(): Promise<void> {
  const dir = tempDir('tls');
  const certs = makeCerts(dir);
  const nonce = runNonce();
  const plain = await startNode(join(dir, 'plain'));
  const tls = await startNode(join(dir, 'tls'), ['--tls-cert', certs.cert, '--tls-key', certs.key]);
  const url = { plain: `http://127.0.0.1:${plain.port}`, tls: `https://127.0.0.1:${tls.port}` };
  const hotFile = join(dir, 'ids-hot.txt');
  try {
    log(`${BENCH}: warm-up PUTs to both nodes (the same bodies)`);
    await runWrk({ url: url.plain, script: 'post-unique.lua', args: [String(SIZE), `${nonce}w`], seconds: 3, threads: 1, connections: 1 });
    const ids = await listIds(plain.port, HOT_SET);
    writeFileSync(hotFile, ids.join('\n') + '\n');
    // The TLS node gets the very blobs the GETs ask for (one body each, in order).
    await storeEach(url.tls, plain.port, ids);
    await settle(BENCH);
    const rates: Record<string, number[]> = { putPlain: [], putTls: [], getPlain: [], getTls: [] };
    const one = async (key: string, target: string, script: string, args: string[]): Promise<void> => {
      const r = await repeatWrk(`${BENCH} ${key}`, () => ({ url: target, script, args }), 1);
      if (r.errors > 0) throw new Error(`${key}: ${r.errors} errors`);
      rates[key]!.push(r.rps);
    };
    const repeats = Number(process.env.BENCH_REPEATS ?? 3);
    for (let i = 0; i < repeats; i++) {
      await one('putPlain', url.plain, 'post-unique.lua', [String(SIZE), `${nonce}p${i}`]);
      await one('putTls', url.tls, 'post-unique.lua', [String(SIZE), `${nonce}t${i}`]);
      await one('getPlain', url.plain, 'get-ids.lua', [hotFile]);
      await one('getTls', url.tls, 'get-ids.lua', [hotFile]);
    }
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const [op, plainKey, tlsKey] of [['put', 'putPlain', 'putTls'], ['get', 'getPlain', 'getTls']] as const) {
      const p = med(rates[plainKey]!);
      const t = med(rates[tlsKey]!);
      emit({ bench: BENCH, metric: `4KiB-${op}-plain`, value: round(p, 0), unit: 'req/s' });
      emit({ bench: BENCH, metric: `4KiB-${op}-tls`, value: round(t, 0), unit: 'req/s', ratio_to_plain: round(t / p) });
      log(`${BENCH}: 4 KiB ${op.toUpperCase()} plain ${p.toFixed(0)}/s, TLS ${t.toFixed(0)}/s (${(t / p).toFixed(3)})`);
    }
    const file = join(dir, 'stream.bin');
    for (const [name, base, ca] of [['plain', url.plain, undefined], ['tls', url.tls, certs.ca]] as const) {
      makeFile(file, STREAM_BYTES, `${nonce}${name}`);
      await settle(`${BENCH} ${name} stream`);
      const s = await streamSeconds(base, file, ca);
      const mb = STREAM_BYTES / 1e6;
      emit({ bench: BENCH, metric: `stream-put-${name}`, value: round(mb / s.put, 1), unit: 'MB/s', bytes: STREAM_BYTES });
      emit({ bench: BENCH, metric: `stream-get-${name}`, value: round(mb / s.get, 1), unit: 'MB/s', bytes: STREAM_BYTES });
      log(`${BENCH}: ${STREAM_BYTES} B ${name}: PUT ${(mb / s.put).toFixed(0)} MB/s, GET ${(mb / s.get).toFixed(0)} MB/s`);
    }
  } finally {
    await plain.stop();
    await tls.stop();
    removeDir(dir);
  }
}

await main();
