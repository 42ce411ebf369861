/**
 * BLAKE3 inline on the event loop vs in a Piscina worker (@napi-rs/blake-hash both ways), at
 * 64 B (the pool's fixed cost), 1 KiB, 4 KiB, 64 KiB and 1 MiB. The pool runs serially (one task, await)
 * and pipelined (64 in flight over POOL_THREADS workers), with the buffer copied to the worker
 * or shared (SharedArrayBuffer view, no copy). Two break-evens:
 *   - wall time per op: where lines through the 4 KiB and 1 MiB costs of the pipelined pool and of
 *     inline hashing cross (on 2 cores the pool can only win by running beside the main thread);
 *   - main-thread time: the event loop's busy time per pipelined pool task (eventLoopUtilization)
 *     against inline hashing's cost per byte; above that size handing the hash to the pool frees
 *     the event loop, which is what a server saturating one core needs.
 * `node hash` rows: the node's own one-shot hash (src/hash/blake3.ts: our addon's BLAKE3, digest
 * in a pooled Buffer). `ours <path>` rows: our addon's BLAKE3 (native/src/blake3.c) on each path
 * the CPU has, digest into a reused buffer, beside `inline` (@napi-rs/blake-hash, a new Buffer
 * each) and `napi b64` (its digest as base64url decoded into a pooled Buffer, the node's way
 * before); `ours <path> chunk cv 1MiB` is what a large blob's PUT and GET now pay per 1 MiB chunk
 * (its chaining value at offset 1 MiB, src/hash/blake3-tree.ts); `ours <path> each x16 4KiB` is
 * per body of 16 hashed in one call, digest and CRC-32C, as a turn's small stores are
 * (src/hash/hash-each.ts).
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { KiB, MiB, ROOT, emit, envInt, round } from './lib.js';
import { runMicro, type MicroTask } from './micro.js';
import { blake3 as nodeHash, initHashing } from '../../src/hash/blake3.js';
import { optionalAddon } from '../../src/util/addon.js';
import { type HashParts, hashEachInto } from '../../src/hash/hash-each.js';

const BENCH = 'hash-blake3';
const { blake3, blake3UrlSafeBase64 } = createRequire(import.meta.url)('@napi-rs/blake-hash') as typeof import('@napi-rs/blake-hash');

/** Our addon's BLAKE3 (native/src/binding_blake3.c). */
interface Blake3Addon {
  blake3Hash(src: Uint8Array, dst: Uint8Array, dstOffset: number): number;
  blake3Subtree(src: Uint8Array, counter: number, cv: Uint8Array, cvOffset: number): number;
  setBlake3Path(name: string): number;
  blake3Paths(): { name: string; supported: boolean }[];
}
const THREADS = envInt('BENCH_POOL_THREADS', Math.min(2, availableParallelism()));
const IN_FLIGHT = 64;
/** Bodies per hashEachInto call in the `each` rows (a loaded turn holds ~18 small stores). */
const EACH = 16;
const SIZES: [string, number][] = [['64B', 64], ['1KiB', KiB], ['4KiB', 4 * KiB], ['64KiB', 64 * KiB], ['1MiB', MiB]];

function filled(size: number, shared: boolean): Buffer {
  const b = shared ? Buffer.from(new SharedArrayBuffer(size)) : Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + 7) & 0xff;
  return b;
}

/** Event-loop busy microseconds and wall microseconds per task, IN_FLIGHT tasks outstanding. */
async function mainThreadCost(pool: Piscina, data: Uint8Array, tasks: number): Promise<{ busyUs: number; wallUs: number }> {
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next++ < tasks) await pool.run(data);
  }));
  const elu = performance.eventLoopUtilization(elu0);
  return { busyUs: (elu.active * 1000) / tasks, wallUs: ((performance.now() - t0) * 1000) / tasks };
}

async function main(): Promise<void> {
  await initHashing();
  const pool = new Piscina({ filename: join(ROOT, 'bench/node/hash-worker.mjs'), minThreads: THREADS, maxThreads: THREADS, idleTimeout: 60_000 });
  const tasks: MicroTask[] = [];
  const ours = optionalAddon<Blake3Addon>('blake3Hash');
  const ourPaths = ours?.blake3Paths().filter((p) => p.supported).map((p) => p.name) ?? [];
  const digest = Buffer.alloc(32);
  for (const [label, size] of SIZES) {
    const copied = filled(size, false);
    const shared = new Uint8Array(filled(size, true).buffer);
    tasks.push({ name: `inline ${label}`, fn: () => blake3(copied) });
    tasks.push({ name: `napi b64 ${label}`, fn: () => Buffer.from(blake3UrlSafeBase64(copied), 'base64url') });
    // The node's one-shot hash (src/hash/blake3.ts).
    tasks.push({ name: `node hash ${label}`, beforeAll: () => void ours?.setBlake3Path('auto'), fn: () => nodeHash(copied) });
    for (const path of ourPaths) {
      tasks.push({ name: `ours ${path} ${label}`, beforeAll: () => void ours!.setBlake3Path(path), fn: () => ours!.blake3Hash(copied, digest, 0) });
      if (size === MiB) tasks.push({ name: `ours ${path} chunk cv ${label}`, beforeAll: () => void ours!.setBlake3Path(path), fn: () => ours!.blake3Subtree(copied, 1024, digest, 0) });
      if (size === 4 * KiB) {
        // A turn's small stores hashed together (hash-each.ts): 16 bodies per call, per body.
        const parts: HashParts = [];
        for (let i = 0; i < EACH; i++) parts.push(filled(size, false), 0, size, Buffer.alloc(32));
        const crcs = new Uint32Array(EACH);
        tasks.push({ name: `ours ${path} each x${EACH} ${label}`, opsPerIteration: EACH, beforeAll: () => void ours!.setBlake3Path(path), fn: () => hashEachInto(parts, EACH, crcs) });
      }
    }
    tasks.push({ name: `pool serial copy ${label}`, fn: () => pool.run(copied) });
    tasks.push({ name: `pool serial shared ${label}`, fn: () => pool.run(shared) });
    tasks.push({ name: `pool x${IN_FLIGHT} copy ${label}`, opsPerIteration: IN_FLIGHT, fn: () => Promise.all(Array.from({ length: IN_FLIGHT }, () => pool.run(copied))) });
    tasks.push({ name: `pool x${IN_FLIGHT} shared ${label}`, opsPerIteration: IN_FLIGHT, fn: () => Promise.all(Array.from({ length: IN_FLIGHT }, () => pool.run(shared))) });
  }
  const results = await runMicro(tasks);
  const busy = new Map<string, number>();
  for (const [label, size] of SIZES) {
    for (const mode of ['copy', 'shared'] as const) {
      const data = mode === 'copy' ? filled(size, false) : new Uint8Array(filled(size, true).buffer);
      await mainThreadCost(pool, data, 500);
      const cost = await mainThreadCost(pool, data, size >= MiB ? 2000 : 10_000);
      busy.set(`${mode} ${label}`, cost.busyUs);
      emit({ bench: BENCH, metric: `pool_x${IN_FLIGHT}_${mode}_${label}_main_thread`, value: round(cost.busyUs, 2), unit: 'us/task', bytes: size, wall_us: round(cost.wallUs, 2), threads: THREADS, note: 'event-loop busy time per task' });
    }
  }
  await pool.destroy();
  ours?.setBlake3Path('auto');
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
  // Main-thread break-even: busy(size) = a + b*size per pool task against inline c*size.
  const inlineUsPerByte = byName.get('inline 1MiB')!.usPerOp / MiB;
  for (const mode of ['copy', 'shared']) {
    const small = busy.get(`${mode} 4KiB`)!;
    const large = busy.get(`${mode} 1MiB`)!;
    const b = Math.max(0, (large - small) / (MiB - 4 * KiB));
    const a = small - b * 4 * KiB;
    const crossing = b < inlineUsPerByte ? a / (inlineUsPerByte - b) : Infinity;
    emit({
      bench: BENCH, metric: `break_even_main_thread_${mode}`, value: Number.isFinite(crossing) ? Math.max(0, Math.round(crossing)) : null, unit: 'bytes',
      pool_task_main_thread_us: round(a, 2), inline_ns_per_byte: round(inlineUsPerByte * 1000, 4), threads: THREADS,
      note: 'above this size a pool task costs the event loop less than hashing inline',
    });
  }
}

await main();
