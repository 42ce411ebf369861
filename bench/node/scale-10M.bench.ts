/**
 * Scale: PUT/s of tiny (100 B) blobs over HTTP on an empty node, and again after
 * BENCH_SCALE_BLOBS (default 10M) more are stored (bulk-loaded through the in-process engine,
 * bounded by BENCH_SCALE_TIME_LIMIT_S); then the latency of listing a 1000-id page for several
 * prefixes (and a second page through its cursor) at that count.
 *
 *   empty node: warm-up + REPEATS x wrk tiny PUT -> stop -> bulk load -> start (timed)
 *   -> warm-up + REPEATS x wrk tiny PUT -> list pages
 */
import { statfsSync } from 'node:fs';
import { join } from 'node:path';
import { bulkLoad } from './bulk.js';
import {
  CONNECTIONS, REPEATS, RUN_SECONDS, emit, envInt, listIds, log, median, percentile, removeDir, repeatWrk, round, runNonce, runWrk, settle, startNode, tempDir,
} from './lib.js';

const BENCH = 'scale';
const BLOBS = envInt('BENCH_SCALE_BLOBS', 10_000_000);
const TIME_LIMIT_S = envInt('BENCH_SCALE_TIME_LIMIT_S', 1800);
const TINY = 100;
const PREFIXES = ['', '0', '5a', 'c3', 'f', 'abc', '7e1', 'fffe'];
const LIST_REQUESTS = 50;
const WARMUP_SECONDS = RUN_SECONDS;

async function listLatency(port: number, prefix: string): Promise<{ firstMs: number[]; nextMs: number[]; ids: number }> {
  const base = `http://127.0.0.1:${port}/v1/blobs?limit=1000&prefix=${prefix}`;
  const firstMs: number[] = [];
  const nextMs: number[] = [];
  let ids = 0;
  let cursor: string | undefined;
  for (let i = 0; i < LIST_REQUESTS; i++) {
    const t0 = performance.now();
    const res = await fetch(base);
    const text = await res.text();
    firstMs.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`list prefix ${prefix}: HTTP ${res.status}: ${text}`);
    const page = JSON.parse(text) as { ids: string[]; next_cursor?: string };
    ids = page.ids.length;
    cursor = page.next_cursor;
    if (!cursor) continue;
    const t1 = performance.now();
    const res2 = await fetch(`${base}&cursor=${encodeURIComponent(cursor)}`);
    await res2.text();
    nextMs.push(performance.now() - t1);
    if (res2.status !== 200) throw new Error(`list prefix ${prefix} page 2: HTTP ${res2.status}`);
  }
  return { firstMs: firstMs.slice(5), nextMs: nextMs.slice(5), ids };
}

async function main(): Promise<void> {
  const dir = tempDir('scale');
  const dataDir = join(dir, 'data');
  const nonce = runNonce();
  const common = { blob_bytes: TINY, connections: CONNECTIONS, seconds: RUN_SECONDS, repeats: REPEATS };
  const freeGiB = (): number => {
    const s = statfsSync(dir);
    return (s.bavail * s.bsize) / 2 ** 30;
  };
  try {
    await settle(`${BENCH} at 0`);
    let node = await startNode(dataDir);
    // Both points get the same warm-up run first (JIT, page cache); its rate is reported apart.
    const warm0 = await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'post-unique.lua', args: [String(TINY), `${nonce}y`], seconds: WARMUP_SECONDS });
    log(`${BENCH} warm-up at 0: ${warm0.rps.toFixed(0)} req/s`);
    const empty = await repeatWrk(`${BENCH} tiny PUT at 0`, (i) => ({ url: `http://127.0.0.1:${node.port}`, script: 'post-unique.lua', args: [String(TINY), `${nonce}z${i}`] }));
    // Every PUT must have stored new bytes: the node holds at least as many ids as 2xx answers.
    const sent = warm0.requests + empty.runs.reduce((a, r) => a + r.requests, 0);
    const listed = (await listIds(node.port, 10 * sent)).length;
    log(`${BENCH}: ${sent} PUTs answered, ${listed} ids stored`);
    if (listed < sent) throw new Error(`${BENCH}: ${sent} PUTs answered but only ${listed} ids stored (bodies repeated?)`);
    await node.stop();
    emit({ bench: BENCH, metric: 'tiny_put_rps_at_0', value: round(empty.rps, 0), unit: 'req/s', ...common, runs: empty.runs.map((r) => round(r.rps, 0)), p99_ms: round(empty.p99Ms), errors: empty.errors, warmup_rps: round(warm0.rps, 0) });

    log(`${BENCH}: bulk-loading ${BLOBS.toLocaleString('en')} blobs of ${TINY} B in process (limit ${TIME_LIMIT_S} s, ${freeGiB().toFixed(0)} GiB free)`);
    const load = await bulkLoad({ dataDir, count: BLOBS, sizeBytes: TINY, nonce: `${nonce}b`, timeLimitMs: TIME_LIMIT_S * 1000 });
    const stored = load.stored + warm0.requests + empty.runs.reduce((a, r) => a + r.requests, 0);
    log(`${BENCH}: loaded ${load.stored.toLocaleString('en')} in ${load.seconds.toFixed(0)} s (${load.ratePerS.toFixed(0)}/s)${load.timedOut ? ' (time limit)' : ''}; ${freeGiB().toFixed(0)} GiB free`);
    emit({ bench: BENCH, metric: 'bulk_load_rate', value: round(load.ratePerS, 0), unit: 'blobs/s', blobs: load.stored, seconds: round(load.seconds, 1), timed_out: load.timedOut, note: 'in-process engine.putInline, 512 in flight' });

    await settle(`${BENCH} at ${stored.toLocaleString('en')}`, 120_000);
    node = await startNode(dataDir);
    emit({ bench: BENCH, metric: 'ready_ms_at_n', value: round(node.readyMs, 1), unit: 'ms', blobs: stored, note: 'one start, spawn to /healthz 200' });
    try {
      const warmN = await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'post-unique.lua', args: [String(TINY), `${nonce}x`], seconds: WARMUP_SECONDS });
      log(`${BENCH} warm-up at ${stored.toLocaleString('en')}: ${warmN.rps.toFixed(0)} req/s`);
      const full = await repeatWrk(`${BENCH} tiny PUT at ${stored.toLocaleString('en')}`, (i) => ({ url: `http://127.0.0.1:${node.port}`, script: 'post-unique.lua', args: [String(TINY), `${nonce}n${i}`] }));
      emit({ bench: BENCH, metric: 'tiny_put_rps_at_n', value: round(full.rps, 0), unit: 'req/s', ...common, blobs: stored, runs: full.runs.map((r) => round(r.rps, 0)), p99_ms: round(full.p99Ms), errors: full.errors, warmup_rps: round(warmN.rps, 0) });
      // Runs pair up by position (both series run the same schedule on a freshly started node).
      const paired = full.runs.map((r, i) => r.rps / empty.runs[i]!.rps);
      const ratio = median(paired);
      emit({
        bench: BENCH, metric: 'tiny_put_n_vs_0', value: round(ratio), unit: 'ratio', blobs: stored, target: '>= 0.90', pass: ratio >= 0.9,
        runs: paired.map((r) => round(r)), ratio_of_medians: round(full.rps / empty.rps), note: 'median of per-run ratios',
      });

      const medians: number[] = [];
      for (const prefix of PREFIXES) {
        const r = await listLatency(node.port, prefix);
        const first = median(r.firstMs);
        medians.push(first);
        if (r.nextMs.length) medians.push(median(r.nextMs));
        log(`${BENCH} list prefix '${prefix}': ${r.ids} ids, median ${first.toFixed(2)} ms (p99 ${percentile(r.firstMs, 99).toFixed(2)}), next page ${r.nextMs.length ? median(r.nextMs).toFixed(2) : '-'} ms`);
        emit({
          bench: BENCH, metric: 'list_1000_ms', value: round(first, 3), unit: 'ms', prefix, ids: r.ids, blobs: stored,
          p99_ms: round(percentile(r.firstMs, 99)), next_page_ms: r.nextMs.length ? round(median(r.nextMs)) : null,
        });
      }
      const worst = Math.max(...medians);
      emit({ bench: BENCH, metric: 'list_1000_ms_worst_prefix', value: round(worst, 3), unit: 'ms', blobs: stored, target: '<= 5', pass: worst <= 5, note: 'largest per-prefix median, first and cursor pages, HTTP round trip' });
    } finally {
      await node.stop();
    }
  } finally {
    removeDir(dir);
  }
}

await main();
