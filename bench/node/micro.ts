/**
 * tinybench glue for the micro-benchmarks: every task reports microseconds per operation, where
 * one iteration may cover `opsPerIteration` operations (a batch, or N requests in flight).
 */
import { Bench } from 'tinybench';
import { envInt } from './lib.js';

/** Milliseconds each task runs (after warm-up); BENCH_MICRO_MS shortens a quick run. */
export const MICRO_MS = envInt('BENCH_MICRO_MS', 1000);

export interface MicroTask {
  name: string;
  opsPerIteration?: number;
  fn: () => unknown;
  /** Runs before the task's warm-up and its run (a kernel path to pin, say). */
  beforeAll?: () => void;
}

export interface MicroResult {
  name: string;
  /** Mean microseconds per operation. */
  usPerOp: number;
  /** Median microseconds per operation (per-iteration median / ops). */
  usPerOpP50: number;
  opsPerS: number;
  iterations: number;
  rmePercent: number;
}

export async function runMicro(tasks: MicroTask[], timeMs = MICRO_MS): Promise<MicroResult[]> {
  const bench = new Bench({ time: timeMs, warmupTime: Math.min(200, timeMs / 4) });
  for (const t of tasks) bench.add(t.name, t.fn, t.beforeAll ? { beforeAll: t.beforeAll } : {});
  await bench.run();
  return bench.tasks.map((task, i) => {
    const ops = tasks[i]!.opsPerIteration ?? 1;
    const r = task.result;
    if (r.state !== 'completed') throw new Error(`${task.name}: ${r.state}${'error' in r ? `: ${r.error.message}` : ''}`);
    const usPerOp = (r.period * 1000) / ops;
    return {
      name: task.name,
      usPerOp,
      usPerOpP50: (r.latency.p50 * 1000) / ops,
      opsPerS: 1e6 / usPerOp,
      iterations: r.latency.samplesCount,
      rmePercent: r.latency.rme,
    };
  });
}
