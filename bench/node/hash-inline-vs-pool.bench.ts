/**
 * BLAKE3 inline on the event loop vs in a Piscina worker (@napi-rs/blake-hash both ways), at
 * 64 B (the pool's fixed cost), 4 KiB, 64 KiB and 1 MiB. The pool runs serially (one task, await)
 * and pipelined (64 in flight over POOL_THREADS workers), with the buffer copied to the worker
 * or shared (SharedArrayBuffer view, no copy). Break-even: the size where a line through the
 * 4 KiB and 1 MiB costs of the pipelined pool crosses the inline one.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { KiB, MiB, ROOT, emit, envInt, round } from './lib.js';
import { runMicro, type MicroTask } from './micro.js';

const BENCH = 'hash-blake3';
const { blake3 } = createRequire(import.meta.url)('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');
const THREADS = envInt('BENCH_POOL_THREADS', Math.min(2, availableParallelism()));
const IN_FLIGHT = 64;
const SIZES: [string, number][] = [['64B', 64], ['4KiB', 4 * KiB], ['64KiB', 64 * KiB], ['1MiB', MiB]];

function filled(size: number, shared: boolean): Buffer {
  const b = shared ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + 7) & 0xff;
  return b;
}

async function main(): Promise<void> {
  const pool = new Piscina({ filename: join(ROOT, 'bench/node/hash-worker.mjs'), minThreads: THREADS, maxThreads: THREADS, idleTimeout: 60_000 });
  const tasks: MicroTask[] = [];
  for (const [label, size] of SIZES) {
    const copied = filled(size, false);
    const shared = new Uint8Array(filled(size, true).buffer);
    tasks.push({ name: `inline ${label}`, fn: () => blake3(copied) });
    tasks.push({ name: `pool serial copy ${label}`, fn: () => pool.run(copied) });
    tasks.push({ name: `pool serial shared ${label}`, fn: () => pool.run(shared) });
    tasks.push({ name: `pool x${IN_FLIGHT} copy ${label}`, opsPerIteration: IN_FLIGHT, fn: () => Promise.all(Array.from({ length: IN_FLIGHT }, () => pool.run(copied))) });
    tasks.push({ name: `pool x${IN_FLIGHT} shared ${label}`, opsPerIteration: IN_FLIGHT, fn: () => Promise.all(Array.from({ length: IN_FLIGHT }, () => pool.run(shared))) });
  }
  const results = await runMicro(tasks);
  await pool.destroy();
  const byName = new Map(results.map((r) => [r.name, r]));
  for (const r of results) {
    const size = SIZES.find(([label]) => r.name.endsWith(` ${label}`))![1];
    emit({
      bench: BENCH, metric: r.name.replaceAll(' ', '_'), value: round(r.usPerOp, 2), unit: 'us/op', bytes: size,
      p50_us: round(r.usPerOpP50, 2), gbps: round((size / r.usPerOp) / 1e3, 3), rme_pct: round(r.rmePercent, 1), threads: THREADS,
    });
  }
  // Cost lines a + b*size through the 4 KiB and 1 MiB points; where they cross is the break-even.
  const line = (name: string): { a: number; b: number } => {
    const small = byName.get(`${name} 4KiB`)!.usPerOp;
    const large = byName.get(`${name} 1MiB`)!.usPerOp;
    const b = (large - small) / (MiB - 4 * KiB);
    return { a: small - b * 4 * KiB, b };
  };
  const inline = line('inline');
  for (const mode of [`pool x${IN_FLIGHT} copy`, `pool x${IN_FLIGHT} shared`, 'pool serial copy', 'pool serial shared']) {
    const pool = line(mode);
    const crossing = pool.b < inline.b ? (pool.a - inline.a) / (inline.b - pool.b) : Infinity;
    emit({
      bench: BENCH, metric: `break_even_${mode.replaceAll(' ', '_')}`, value: Number.isFinite(crossing) ? Math.max(0, Math.round(crossing)) : null,
      unit: 'bytes', pool_fixed_us: round(pool.a, 2), inline_fixed_us: round(inline.a, 2), threads: THREADS,
      note: Number.isFinite(crossing) ? 'pool is faster per op above this size' : 'pool never faster per op (no parallelism gain)',
    });
  }
}

await main();
