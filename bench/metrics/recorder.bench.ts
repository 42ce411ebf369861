/**
 * What one Recorder call costs on the hot path: prom-client's own observe()/inc() (labels object,
 * label child, no labels) against NodeMetrics (typed arrays, published at scrape), in ns per call
 * (tinybench) and bytes allocated per call. Allocation is measured with a young generation large
 * enough that no scavenge runs during a measurement (the process re-runs itself with those V8
 * flags), so heap growth is what was allocated; a GC during one is detected and reported.
 *
 *   node dist/bench/metrics/recorder.bench.js     # JSON lines on stdout
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Counter, Histogram, Registry } from 'prom-client';
import { BlobstoreError } from '../../src/errors/errors.js';
import { NodeMetrics } from '../../src/metrics/node-metrics.js';
import { silentLogger } from '../../src/log/logger.js';
import { HistogramFamily, SPEC_BUCKETS } from '../../src/metrics/series.js';
import { emit, round } from '../node/lib.js';
import { runMicro, type MicroTask } from '../node/micro.js';
import { ticks } from '../../src/metrics/clock.js';

const BENCH = 'metrics-recorder';
const V8_FLAGS = ['--expose-gc', '--min-semi-space-size=128', '--max-semi-space-size=128'];

if (!process.execArgv.includes('--expose-gc')) {
  const r = spawnSync(process.execPath, [...V8_FLAGS, fileURLToPath(import.meta.url)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const ALLOC_CALLS = 100_000;
let gcs = 0;
new PerformanceObserver((list) => (gcs += list.getEntries().length)).observe({ entryTypes: ['gc'] });

/** Bytes allocated per call of `fn`, or null when a GC ran during the measurement. */
async function bytesPerCall(fn: () => unknown): Promise<number | null> {
  for (let i = 0; i < 20_000; i++) fn();
  (globalThis as unknown as { gc: () => void }).gc();
  // GC entries reach the observer after a timer turn, not an immediate.
  await new Promise((r) => setTimeout(r, 20));
  const gcsBefore = gcs;
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < ALLOC_CALLS; i++) fn();
  const grown = process.memoryUsage().heapUsed - before;
  await new Promise((r) => setTimeout(r, 20));
  return gcs === gcsBefore ? grown / ALLOC_CALLS : null;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'blobstore-bench-metrics-'));
  mkdirSync(join(dir, 'tmp'));
  const metrics = new NodeMetrics({ nodeId: 'bench', dataDir: dir, healthCheckTimeoutMs: 1000, log: silentLogger() });
  const registry = new Registry();
  const buckets = [...SPEC_BUCKETS];
  const promHist = new Histogram({ name: 'p_latency_seconds', help: 'x', labelNames: ['operation'], buckets, registers: [registry] });
  const promHistPlain = new Histogram({ name: 'q_latency_seconds', help: 'x', buckets, registers: [registry] });
  const promChild = promHist.labels('put');
  const promCounter = new Counter({ name: 'p_total', help: 'x', labelNames: ['operation'], registers: [registry] });
  const family = new HistogramFamily('f_latency_seconds', 'x', '', []);
  const err = new BlobstoreError('not_found', 'x');
  const labels = { operation: 'put' };
  const t0 = ticks();
  let sink = 0;

  const tasks: MicroTask[] = [
    { name: 'performance.now (a double: a heap number per reading)', fn: () => (sink += performance.now()) },
    { name: 'ticks() (the clock read every timing pays: a small integer)', fn: () => (sink += ticks()) },
    { name: 'prom-client Histogram.observe({operation}, v)', fn: () => promHist.observe(labels, 0.003) },
    { name: 'prom-client Histogram.labels(op).observe(v)', fn: () => promChild.observe(0.003) },
    { name: 'prom-client Histogram.observe(v), no labels', fn: () => promHistPlain.observe(0.003) },
    { name: 'prom-client Counter.inc({operation}, n)', fn: () => promCounter.inc(labels, 4096) },
    { name: 'HistogramFamily.observe(series, v)', fn: () => family.observe(0, 0.003) },
    { name: 'NodeMetrics.done(op, start, bytes)', fn: () => metrics.done('put', t0, 4096) },
    { name: 'NodeMetrics.stage(stage, start)', fn: () => metrics.stage('hash', t0) },
    { name: 'NodeMetrics.failed(op, err)', fn: () => metrics.failed('get', err) },
  ];
  const results = await runMicro(tasks);
  for (const [i, r] of results.entries()) {
    const bytes = await bytesPerCall(tasks[i]!.fn);
    emit({
      bench: BENCH, metric: r.name, value: round(r.usPerOp * 1000, 1), unit: 'ns/op',
      ns_p50: round(r.usPerOpP50 * 1000, 1), bytes_per_call: bytes === null ? null : round(bytes, 1), rme_percent: round(r.rmePercent, 2),
    });
  }
  // Scrape-time cost: the whole exposition and the JSON snapshot (statfs + a probe write/fsync).
  const scrape = await runMicro([
    { name: 'NodeMetrics.exposition() (text, every series)', fn: () => metrics.exposition() },
    { name: 'NodeMetrics.detail() (UI JSON)', fn: () => metrics.detail() },
  ]);
  for (const r of scrape) emit({ bench: BENCH, metric: r.name, value: round(r.usPerOp, 1), unit: 'us/op', rme_percent: round(r.rmePercent, 2) });
  metrics.close();
  rmSync(dir, { recursive: true, force: true });
  if (sink < 0) console.error(sink);
}

await main();
