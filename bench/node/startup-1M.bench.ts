/**
 * Start-up time with 1M blobs indexed: bulk-load BENCH_STARTUP_BLOBS (default 1M) small blobs
 * through the in-process engine, close it, then time `blobstore serve` from spawn until /healthz
 * answers 200 (median of REPEATS starts, clean stop between). The same for an empty data dir
 * shows how much of it is Node and module loading.
 */
import { join } from 'node:path';
import { bulkLoad } from './bulk.js';
import { REPEATS, emit, envInt, log, median, removeDir, round, runNonce, startNode, tempDir } from './lib.js';

const BENCH = 'startup';
const BLOBS = envInt('BENCH_STARTUP_BLOBS', 1_000_000);
const BLOB_BYTES = 100;

/** Median ready time (ms) of `REPEATS` starts on one data dir. */
export async function timeStarts(dataDir: string, label: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const node = await startNode(dataDir);
    times.push(node.readyMs);
    const code = await node.stop();
    if (code !== 0) throw new Error(`node exited with ${code} after start ${i + 1}:\n${node.output()}`);
    log(`${BENCH} ${label}: start ${i + 1}/${REPEATS} ready in ${node.readyMs.toFixed(0)} ms`);
  }
  return times;
}

async function main(): Promise<void> {
  const dir = tempDir('startup');
  try {
    const empty = await timeStarts(join(dir, 'empty'), 'empty');
    emit({ bench: BENCH, metric: 'ready_ms_empty', value: round(median(empty), 1), unit: 'ms', runs: empty.map((t) => round(t, 1)) });

    const dataDir = join(dir, 'data');
    log(`${BENCH}: bulk-loading ${BLOBS.toLocaleString('en')} blobs of ${BLOB_BYTES} B in process`);
    const load = await bulkLoad({ dataDir, count: BLOBS, sizeBytes: BLOB_BYTES, nonce: runNonce() });
    log(`${BENCH}: loaded ${load.stored.toLocaleString('en')} in ${load.seconds.toFixed(1)} s (${load.ratePerS.toFixed(0)}/s)`);
    emit({ bench: BENCH, metric: 'bulk_load_rate', value: round(load.ratePerS, 0), unit: 'blobs/s', blobs: load.stored, blob_bytes: BLOB_BYTES, inflight: 512, note: 'in-process engine.putInline' });

    const full = await timeStarts(dataDir, `${BLOBS.toLocaleString('en')} blobs`);
    const ms = median(full);
    emit({
      bench: BENCH, metric: 'ready_ms', value: round(ms, 1), unit: 'ms', blobs: load.stored, runs: full.map((t) => round(t, 1)),
      target: '<= 1000', pass: ms <= 1000, note: 'spawn to /healthz 200',
    });
  } finally {
    removeDir(dir);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
