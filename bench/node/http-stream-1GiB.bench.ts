/**
 * 1 GiB streamed PUT (chunked) and GET against what the disk does for the bench itself: a plain
 * write of the same bytes in 1 MiB chunks plus one fsync, and a plain read of them (and, for
 * reference, dd's O_DIRECT write + fsync of as many bytes: the node writes large blobs that way). Also the node
 * process's peak RSS growth during the PUT (VmHWM reset through clear_refs, and VmRSS sampled).
 * Each round, on each side (plain file, node): the write, the file dropped from the page cache and
 * read back (plain read, GET with curl), again warm, then removed; the sides swap order every
 * round. Figures are medians, ratios are per round.
 * For reference, the same chunked POST into a bare uWS sink (/sink of the echo server): what the
 * client and loopback alone allow; and the plain file, dropped from the page cache again, sent by
 * the bare uWS server (/file) to the same curl: the HTTP ceiling of the cold GET (on a disk faster
 * than loopback TCP, the plain read is out of reach of any HTTP server). Two nodes run side by side: the default, and one with
 * `--chunk-digests pool` (the worker pool hashes chunks, and reads and checks them in one task).
 * The three sides take turns going first (BENCH_REPEATS a multiple of 3 gives each the same share).
 */
import { promises as fsp } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  GiB, REPEATS, blobFile, dropCache, emit, settle, startEcho, envInt, log, median, procStatus, removeDir, resetPeakRss, round, runNonce, startNode, tempDir,
  type RunningProcess,
} from './lib.js';
import { pageAligned } from '../../src/util/aligned-buffer.js';
import { CHUNK_BYTES as CHUNK, chunk as chunkOf, chunkCount as chunkCountOf, putChunked, responseText } from './stream-client.js';

const BENCH = 'http-stream-1GiB';
const TOTAL = envInt('BENCH_STREAM_BYTES', GiB);
const STALL_MS = 10_000;
const execFileAsync = promisify(execFile);
const chunkCount = chunkCountOf(TOTAL);
const chunk = (nonce: string, i: number): Buffer => chunkOf(TOTAL, nonce, i);

async function writeFsync(path: string, nonce: string): Promise<number> {
  const t0 = performance.now();
  const fh = await fsp.open(path, 'w');
  for (let i = 0; i < chunkCount; i++) {
    const b = chunk(nonce, i);
    await fh.write(b, 0, b.length);
  }
  await fh.sync();
  await fh.close();
  return (performance.now() - t0) / 1000;
}

/**
 * The same amount written past the page cache (dd oflag=direct, 1 MiB blocks of zeros) plus its
 * fsync: what the disk takes without the page cache, the way the node writes large blobs
 * (blobFileWrites=direct). A reference beside the buffered write the target is set against.
 */
async function writeDirectFsync(path: string): Promise<number> {
  const t0 = performance.now();
  await execFileAsync('dd', ['if=/dev/zero', `of=${path}`, 'bs=1M', `count=${Math.ceil(TOTAL / CHUNK)}`, 'oflag=direct', 'conv=fsync', 'status=none']);
  const seconds = (performance.now() - t0) / 1000;
  await fsp.rm(path, { force: true });
  return seconds;
}

async function readAll(path: string): Promise<number> {
  const t0 = performance.now();
  const fh = await fsp.open(path, 'r');
  // Page-aligned, as dd's: a buffer 16 bytes into a page takes the kernel's copy at a fifth of
  // its speed on Zen 3 (src/util/aligned-buffer.ts).
  const buf = pageAligned(CHUNK);
  let total = 0;
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, CHUNK, null);
    if (bytesRead === 0) break;
    total += bytesRead;
  }
  await fh.close();
  if (total !== TOTAL) throw new Error(`read ${total} of ${TOTAL} bytes`);
  return (performance.now() - t0) / 1000;
}

/** GET with Node's http client; a body that makes no progress for STALL_MS counts as stalled. */
async function getNode(port: number, id: string): Promise<{ seconds: number; stalledAt?: number }> {
  const t0 = performance.now();
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'GET', path: `/v1/blobs/${id}` }, resolve);
    req.on('error', reject);
    req.end();
  });
  if (res.statusCode !== 200) throw new Error(`GET: HTTP ${res.statusCode}: ${await responseText(res)}`);
  let total = 0;
  let last = Date.now();
  const stalled = await new Promise<boolean>((resolve, reject) => {
    const watch = setInterval(() => {
      if (Date.now() - last < STALL_MS) return;
      clearInterval(watch);
      res.destroy();
      resolve(true);
    }, 500);
    res.on('data', (d: Buffer) => {
      total += d.length;
      last = Date.now();
    });
    res.on('end', () => {
      clearInterval(watch);
      resolve(false);
    });
    res.on('error', (err) => {
      clearInterval(watch);
      reject(err);
    });
  });
  if (stalled) return { seconds: NaN, stalledAt: total };
  if (total !== TOTAL) throw new Error(`GET: ${total} of ${TOTAL} bytes`);
  return { seconds: (performance.now() - t0) / 1000 };
}

/** GET with curl into /dev/null (the figure; curl reads as fast as the socket gives). */
async function getCurl(port: number, id: string, path = `/v1/blobs/${id}`): Promise<number> {
  const { stdout } = await execFileAsync('curl', [
    '-sS', '-o', '/dev/null', '--max-time', '120', '-w', '%{http_code} %{size_download} %{time_total}', `http://127.0.0.1:${port}${path}`,
  ]);
  const [code, size, seconds] = stdout.trim().split(' ');
  if (code !== '200' || Number(size) !== TOTAL) throw new Error(`curl GET: HTTP ${code}, ${size} of ${TOTAL} bytes`);
  return Number(seconds);
}

/** Writes and removes a file of TOTAL bytes: the pages it used are free and warm for the first measured write. */
async function scratchWriteAndRemove(path: string): Promise<void> {
  await writeFsync(path, 'scratch');
  await fsp.rm(path, { force: true });
}

async function del(port: number, id: string): Promise<void> {
  await fetch(`http://127.0.0.1:${port}/v1/blobs/${id}`, { method: 'DELETE' });
}

interface NodeRound {
  put: number; get: number; getWarm: number; getNode: number; stalledAt?: number; rssGrowthKiB: number; base: number;
}

/** One node's part of a round: the PUT (peak RSS sampled), GET cold, warm, with Node's client; then DELETE. */
async function nodeRound(node: RunningProcess, dataDir: string, nonce: string): Promise<NodeRound> {
  const before = procStatus(node.pid);
  const hwmReset = resetPeakRss(node.pid);
  const base = hwmReset ? procStatus(node.pid).VmRSS! : before.VmRSS!;
  let sampled = base;
  const sampler = setInterval(() => {
    try {
      sampled = Math.max(sampled, procStatus(node.pid).VmRSS!);
    } catch {
      /* the process may be gone; the PUT reports that */
    }
  }, 20);
  const { seconds: put, id } = await putChunked(node.port, TOTAL, nonce);
  clearInterval(sampler);
  const after = procStatus(node.pid);
  const rssGrowthKiB = Math.max(sampled, hwmReset ? after.VmHWM! : 0) - base;
  // Cold: dropped from the page cache, so the read comes from the disk.
  await dropCache(await blobFile(dataDir, id));
  const get = await getCurl(node.port, id);
  const getWarm = await getCurl(node.port, id);
  const viaNode = await getNode(node.port, id);
  if (viaNode.stalledAt !== undefined) log(`${BENCH}: GET with Node's http client stalled at ${viaNode.stalledAt} bytes (no progress for ${STALL_MS} ms)`);
  await del(node.port, id);
  return { put, get, getWarm, getNode: viaNode.seconds, stalledAt: viaNode.stalledAt, rssGrowthKiB, base };
}

/**
 * Two nodes: the default (chunk digests inline, file I/O on libuv's thread pool) and
 * `--chunk-digests pool` (digests, and reads with their checks, on the worker pool), so the
 * product card's "shard and file I/O in the worker pool" is measured against the libuv path.
 */
async function main(): Promise<void> {
  const dir = tempDir('stream');
  const dataDirs = { inline: join(dir, 'data'), pool: join(dir, 'data-pool') };
  const nodes = { inline: await startNode(dataDirs.inline), pool: await startNode(dataDirs.pool, ['--chunk-digests', 'pool']) };
  const echo = await startEcho();
  const nonce = runNonce();
  const rounds: { write: number; sink: number; read: number; readWarm: number; uwsFile: number; inline: NodeRound; pool: NodeRound }[] = [];
  // The O_DIRECT reference runs after the rounds: the gigabyte it writes slowed the read of
  // whichever side came next (the host was still writing it back).
  const directWrites: number[] = [];
  try {
    // Writes land in the page cache, and on this VM a page the guest has not used lately costs a
    // fault in the host on its first write (a 1 GiB dd into fresh pages runs at ~1/3 of one into
    // pages just freed). So each measured write follows the removal of a 1 GiB file, the plain
    // side and the nodes alike, and the sides take turns going first.
    await scratchWriteAndRemove(join(dir, 'scratch.bin'));
    for (let r = 0; r < REPEATS; r++) {
      const plain = join(dir, 'plain.bin');
      await settle(`${BENCH} round ${r + 1}`);
      const { seconds: sink } = await putChunked(echo.port, TOTAL, `${nonce}k${r}`, '/sink', 200);
      const got: Partial<{ plain: { write: number; read: number; readWarm: number; uwsFile: number }; inline: NodeRound; pool: NodeRound }> = {};
      const sides = {
        plain: async () => {
          const write = await writeFsync(plain, `${nonce}w${r}`);
          await dropCache(plain);
          const read = await readAll(plain);
          await dropCache(plain);
          const uwsFile = await getCurl(echo.port, '', `/file?${encodeURIComponent(plain)}`);
          const readWarm = await readAll(plain);
          await fsp.rm(plain, { force: true });
          got.plain = { write, read, readWarm, uwsFile };
        },
        inline: async () => void (got.inline = await nodeRound(nodes.inline, dataDirs.inline, `${nonce}p${r}`)),
        pool: async () => void (got.pool = await nodeRound(nodes.pool, dataDirs.pool, `${nonce}q${r}`)),
      };
      const order = (['plain', 'inline', 'pool'] as const).map((_, i, all) => all[(i + r) % all.length]!);
      for (const side of order) await sides[side]();
      const { write, read, readWarm, uwsFile } = got.plain!;
      rounds.push({ write, sink, read, readWarm, uwsFile, inline: got.inline!, pool: got.pool! });
      const mb = (seconds: number): string => (TOTAL / seconds / 1e6).toFixed(0);
      const line = (n: NodeRound): string => `PUT ${mb(n.put)}, GET ${mb(n.get)} cold / ${mb(n.getWarm)} warm, RSS growth ${(n.rssGrowthKiB / 1024).toFixed(1)} MiB`;
      log(`${BENCH} round ${r + 1}/${REPEATS} (order ${order.join(', ')}): write+fsync ${mb(write)} MB/s, uWS sink ${mb(sink)}, read ${mb(read)} cold / ${mb(readWarm)} warm, uWS file GET ${mb(uwsFile)} cold; ` +
        `inline: ${line(got.inline!)}; pool: ${line(got.pool!)}`);
    }
    for (let r = 0; r < Math.min(REPEATS, 3); r++) {
      await settle(`${BENCH} direct write ${r + 1}`);
      directWrites.push(await writeDirectFsync(join(dir, 'direct.bin')));
    }
  } finally {
    await nodes.inline.stop();
    await nodes.pool.stop();
    await echo.stop();
    removeDir(dir);
  }
  const mbps = (of: (x: (typeof rounds)[number]) => number): number => median(rounds.map((x) => TOTAL / of(x) / 1e6));
  const runs = (of: (x: (typeof rounds)[number]) => number): number[] => rounds.map((x) => round(TOTAL / of(x) / 1e6, 1));
  const ratio = (of: (x: (typeof rounds)[number]) => number): number => round(median(rounds.map(of)));
  const common = { bytes: TOTAL, repeats: REPEATS };
  emit({ bench: BENCH, metric: 'plain_write_fsync', value: round(mbps((x) => x.write), 1), unit: 'MB/s', ...common, runs: runs((x) => x.write) });
  const direct = median(directWrites.map((s) => TOTAL / s / 1e6));
  emit({
    bench: BENCH, metric: 'plain_write_direct_fsync', value: round(direct, 1), unit: 'MB/s', ...common, runs: directWrites.map((s) => round(TOTAL / s / 1e6, 1)),
    note: 'dd oflag=direct conv=fsync of zeros after the rounds: the disk past the page cache, as the node writes large blobs (reference)',
  });
  emit({ bench: BENCH, metric: 'uws_sink_chunked', value: round(mbps((x) => x.sink), 1), unit: 'MB/s', ...common, note: 'same client into a bare uWS handler that drops the body' });
  emit({ bench: BENCH, metric: 'plain_read', value: round(mbps((x) => x.read), 1), unit: 'MB/s', ...common, page_cache: 'cold' });
  emit({ bench: BENCH, metric: 'plain_read_warm', value: round(mbps((x) => x.readWarm), 1), unit: 'MB/s', ...common, page_cache: 'warm' });
  emit({
    bench: BENCH, metric: 'uws_file_get', value: round(mbps((x) => x.uwsFile), 1), unit: 'MB/s', ...common, client: 'curl', page_cache: 'cold', runs: runs((x) => x.uwsFile),
    note: 'the plain file sent by a bare uWS server (1 MiB reads, nothing checked): the HTTP ceiling of the cold GET',
  });
  emit({ bench: BENCH, metric: 'uws_file_vs_read', value: ratio((x) => x.read / x.uwsFile), unit: 'ratio', page_cache: 'cold', note: 'how much of the plain read an HTTP server with nothing to do reaches here' });
  for (const variant of ['inline', 'pool'] as const) {
    // The default node's metrics keep their names; the pool node's carry _pool.
    const name = (m: string): string => (variant === 'inline' ? m : `${m}_pool`);
    const io = variant === 'inline' ? 'chunk digests inline, file I/O on libuv' : '--chunk-digests pool: digests and verified reads on the worker pool';
    const n = (x: (typeof rounds)[number]): NodeRound => x[variant];
    emit({ bench: BENCH, metric: name('put_chunked'), value: round(mbps((x) => n(x).put), 1), unit: 'MB/s', ...common, io, runs: runs((x) => n(x).put) });
    emit({ bench: BENCH, metric: name('get'), value: round(mbps((x) => n(x).get), 1), unit: 'MB/s', ...common, io, client: 'curl', page_cache: 'cold', runs: runs((x) => n(x).get) });
    emit({ bench: BENCH, metric: name('get_warm'), value: round(mbps((x) => n(x).getWarm), 1), unit: 'MB/s', ...common, io, client: 'curl', page_cache: 'warm', runs: runs((x) => n(x).getWarm) });
    const stalls = rounds.filter((x) => n(x).stalledAt !== undefined);
    emit({
      bench: BENCH, metric: name('get_node_client'), value: stalls.length ? NaN : round(mbps((x) => n(x).getNode), 1), unit: 'MB/s', ...common, io,
      client: 'node:http', stalled_rounds: stalls.length, stalled_at_bytes: stalls.map((x) => n(x).stalledAt),
    });
    emit({ bench: BENCH, metric: name('put_vs_uws_sink'), value: ratio((x) => x.sink / n(x).put), unit: 'ratio', io, note: 'reference: how much of the client+loopback ceiling the PUT reaches' });
    const putRatio = ratio((x) => x.write / n(x).put);
    emit({ bench: BENCH, metric: name('put_vs_write_direct_fsync'), value: round(mbps((x) => n(x).put) / direct), unit: 'ratio', io, note: 'reference: median PUT against the median O_DIRECT write (not the same minute)' });
    const getRatio = ratio((x) => x.read / n(x).get);
    emit({ bench: BENCH, metric: name('put_vs_write_fsync'), value: putRatio, unit: 'ratio', io, target: '>= 0.85', pass: putRatio >= 0.85 });
    emit({ bench: BENCH, metric: name('get_vs_read'), value: getRatio, unit: 'ratio', io, target: '>= 0.85', pass: getRatio >= 0.85, page_cache: 'cold' });
    emit({ bench: BENCH, metric: name('get_vs_uws_file'), value: ratio((x) => x.uwsFile / n(x).get), unit: 'ratio', io, page_cache: 'cold', note: 'reference: the bare uWS server sending the file cold (the HTTP ceiling)' });
    emit({ bench: BENCH, metric: name('get_vs_read_warm'), value: ratio((x) => x.readWarm / n(x).getWarm), unit: 'ratio', io, page_cache: 'warm', note: 'page-cache read is a memcpy; for reference only' });
  }
  // Pool against libuv, per round (same bytes, same minute).
  emit({ bench: BENCH, metric: 'pool_vs_inline_put', value: ratio((x) => x.inline.put / x.pool.put), unit: 'ratio', note: '> 1: the pool node is faster' });
  emit({ bench: BENCH, metric: 'pool_vs_inline_get_cold', value: ratio((x) => x.inline.get / x.pool.get), unit: 'ratio', note: '> 1: the pool node is faster' });
  emit({ bench: BENCH, metric: 'pool_vs_inline_get_warm', value: ratio((x) => x.inline.getWarm / x.pool.getWarm), unit: 'ratio', note: '> 1: the pool node is faster' });
  const rss = Math.max(...rounds.map((x) => x.inline.rssGrowthKiB)) / 1024;
  emit({ bench: BENCH, metric: 'put_peak_rss_growth', value: round(rss, 1), unit: 'MiB', target: '<= 64', pass: rss <= 64, runs: rounds.map((x) => round(x.inline.rssGrowthKiB / 1024, 1)), note: 'max over rounds' });
}

await main();
