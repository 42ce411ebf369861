/**
 * Segment append + group commit through the in-process engine: putInline of unique 4 KiB blobs
 * with 1, 16 and 256 puts in flight (one iteration = that many puts, all awaited). Each put is
 * durable when it resolves (record fsynced, index committed and flushed), so concurrency 1 pays
 * a whole commit per blob and 256 shares one among many.
 */
import { join } from 'node:path';
import { openEngine, uniqueBody } from './bulk.js';
import { KiB, emit, removeDir, round, runNonce, tempDir } from './lib.js';
import { runMicro, type MicroTask } from './micro.js';

const BENCH = 'segment-append';
const SIZE = 4 * KiB;
const CONCURRENCY = [1, 16, 256];

async function main(): Promise<void> {
  const dir = tempDir('append');
  const engine = await openEngine(join(dir, 'data'));
  const nonce = runNonce();
  const noLabels = Buffer.alloc(0);
  let n = 0;
  try {
    const tasks: MicroTask[] = CONCURRENCY.map((c) => ({
      name: `putInline 4KiB x${c}`,
      opsPerIteration: c,
      fn: () => Promise.all(Array.from({ length: c }, () => engine.putInline(uniqueBody(SIZE, nonce, n++), 1, noLabels))),
    }));
    const results = await runMicro(tasks, Math.max(1000, Number(process.env.BENCH_MICRO_MS ?? 2000)));
    results.forEach((r, i) => {
      emit({
        bench: BENCH, metric: `put_inline_4KiB_c${CONCURRENCY[i]}`, value: round(r.opsPerS, 0), unit: 'ops/s', concurrency: CONCURRENCY[i],
        us_per_op: round(r.usPerOp, 2), p50_us_per_op: round(r.usPerOpP50, 2), rme_pct: round(r.rmePercent, 1), note: 'durable: fsync + flushed index commit',
      });
    });
  } finally {
    await engine.close();
    removeDir(dir);
  }
}

await main();
