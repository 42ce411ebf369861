/**
 * Node-level bench: our codec through its TypeScript API (each kernel path, synchronous, on the
 * calling thread) beside @ronomon/reed-solomon (built by bench/ec/run.sh; it runs each call on
 * libuv's threadpool, one call at a time here), and our async form (Piscina, one task at a time,
 * shards over a SharedArrayBuffer): the gap to the synchronous call is the worker round trip. Encode, and reconstruct of two lost data shards,
 * for 4+2 and 8+2 at 64 KiB, 1 MiB and 16 MiB shards. GB/s counts data bytes (k * shard) per
 * second on one core; the median of the repetitions is printed as one JSON line per measurement.
 *
 *   node dist/bench/ec/node.bench.js [ronomon-addon-path] [reps] [minMs]
 */
import { createRequire } from 'node:module';

import {
  allocSharedStripe,
  closeEcPool,
  ecKernelPaths,
  encode,
  encodeAsync,
  reconstruct,
  reconstructAsync,
  setEcKernelPath,
  type EcKernelPathName,
} from '../../src/ec/index.js';

interface Ronomon {
  create(k: number, m: number): unknown;
  encode(ctx: unknown, sources: number, targets: number, buffer: Buffer, bufferOffset: number, bufferSize: number,
    parity: Buffer, parityOffset: number, paritySize: number, callback: (error?: Error) => void): void;
}

const SHAPES: readonly [number, number][] = [[4, 2], [8, 2]];
const SIZES = [64 << 10, 1 << 20, 16 << 20];
const LOST = [1, 3]; // the two data shards lost in the reconstruct runs

const [ronomonPath, repsArg, minMsArg] = process.argv.slice(2);
const reps = Number(repsArg ?? 5);
const minMs = Number(minMsArg ?? 40);

/** Runs op repeatedly for at least minMs; returns the data rate in GB/s. Sync ops are not awaited. */
async function rate(dataBytes: number, op: () => void | Promise<void>): Promise<number> {
  const start = process.hrtime.bigint();
  let n = 0;
  let elapsedNs = 0;
  do {
    for (let i = 0; i < 4; i++) {
      const pending = op();
      if (pending !== undefined) await pending;
    }
    n += 4;
    elapsedNs = Number(process.hrtime.bigint() - start);
  } while (elapsedNs < minMs * 1e6);
  return (dataBytes * n) / elapsedNs;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

interface Candidate {
  readonly impl: string;
  /** Runs before each timed repetition (pins the kernel path), outside the timing. */
  readonly prepare: () => void;
  readonly encode: () => void | Promise<void>;
  readonly reconstruct: () => void | Promise<void>;
}

function ours(path: EcKernelPathName, k: number, m: number, shards: Buffer[]): Candidate {
  const data = shards.slice(0, k);
  const parity = shards.slice(k);
  const present = shards.map((_, i) => !LOST.includes(i));
  return {
    impl: `blobstore-${path}`,
    prepare: () => setEcKernelPath(path),
    encode: () => encode(k, m, data, parity),
    reconstruct: () => reconstruct(k, m, shards, present),
  };
}

/** The async form on the auto path: one task at a time through the Piscina pool, SAB shards. */
function oursAsync(k: number, m: number, len: number): Candidate {
  const shards = allocSharedStripe(k, m, len);
  // Fresh pages all map the kernel's one zero page until written: fill them, or reads cost nothing.
  for (const shard of shards) shard.fill(7);
  const present = shards.map((_, i) => !LOST.includes(i));
  return {
    impl: 'blobstore-async',
    prepare: () => setEcKernelPath('auto'),
    encode: () => encodeAsync(k, m, shards.slice(0, k), shards.slice(k)),
    reconstruct: () => reconstructAsync(k, m, shards, present),
  };
}

function ronomon(rs: Ronomon, k: number, m: number, len: number): Candidate {
  const ctx = rs.create(k, m);
  const buffer = Buffer.alloc(k * len, 7);
  const parity = Buffer.alloc(m * len);
  const all = (1 << (k + m)) - 1;
  const dataMask = (1 << k) - 1;
  const lostMask = LOST.reduce((acc, i) => acc | (1 << i), 0);
  const call = (sources: number, targets: number) =>
    new Promise<void>((resolve, reject) => {
      rs.encode(ctx, sources, targets, buffer, 0, k * len, parity, 0, m * len, (err) => (err ? reject(err) : resolve()));
    });
  return {
    impl: 'ronomon',
    prepare: () => undefined,
    encode: () => call(dataMask, all & ~dataMask),
    reconstruct: () => call(all & ~lostMask, lostMask),
  };
}

async function main(): Promise<void> {
  const rs = ronomonPath ? (createRequire(import.meta.url)(ronomonPath) as Ronomon) : undefined;
  const paths = ecKernelPaths().filter((p) => p.supported).map((p) => p.name as EcKernelPathName);
  for (const [k, m] of SHAPES) {
    for (const len of SIZES) {
      const stripe = Buffer.alloc((k + m) * len, 7);
      const shards = Array.from({ length: k + m }, (_, i) => stripe.subarray(i * len, (i + 1) * len));
      const candidates = [...paths.map((p) => ours(p, k, m, shards)), oursAsync(k, m, len)];
      if (rs) candidates.push(ronomon(rs, k, m, len));
      for (const op of ['encode', 'reconstruct'] as const) {
        const samples = new Map<string, number[]>(candidates.map((c) => [c.impl, []]));
        for (let r = 0; r < reps; r++) {
          for (const c of candidates) {
            c.prepare();
            samples.get(c.impl)!.push(await rate(k * len, c[op]));
          }
        }
        const ron = samples.get('ronomon');
        for (const [impl, xs] of samples) {
          // Per-repetition ratios pair samples taken moments apart, under the same load.
          const ratioRonomon = ron && impl !== 'ronomon' ? +median(xs.map((x, r) => x / ron[r])).toFixed(3) : undefined;
          const line = { bench: 'ec-node', impl, op, k, m, shardBytes: len, gbps: +median(xs).toFixed(3), gbpsMin: +Math.min(...xs).toFixed(3), gbpsMax: +Math.max(...xs).toFixed(3), ratioRonomon, reps };
          console.log(JSON.stringify(line));
        }
      }
    }
  }
  setEcKernelPath('auto');
  await closeEcPool();
}

await main();
