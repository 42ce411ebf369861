/**
 * Bulk loading through the in-process engine (no HTTP): many small blobs with unique bytes,
 * `inflight` puts outstanding so that group commit batches them. Used to reach 1M / 10M blobs
 * before the start-up and scale figures.
 */
import { loadConfig } from '../../src/config/load.js';
import { Engine } from '../../src/engine/engine.js';
import { initHashing } from '../../src/hash/blake3.js';
import { log } from './lib.js';

export interface BulkLoadOptions {
  dataDir: string;
  count: number;
  sizeBytes: number;
  /** Distinguishes this load's bodies from every other load's. */
  nonce: string;
  inflight?: number;
  /** Stop early (keeping what was stored) once this much time has passed. */
  timeLimitMs?: number;
  flags?: Record<string, unknown>;
}

export interface BulkLoadResult {
  stored: number;
  seconds: number;
  ratePerS: number;
  timedOut: boolean;
}

/** Options for an engine opened by a bench: no config file, no env, bench data dir. */
export function benchConfig(dataDir: string, flags: Record<string, unknown> = {}): ReturnType<typeof loadConfig> {
  return loadConfig({ flags: { dataDir, ...flags }, env: {}, file: '/nonexistent/blobstore-bench.json' });
}

export async function openEngine(dataDir: string, flags: Record<string, unknown> = {}): Promise<Engine> {
  await initHashing();
  return Engine.open(benchConfig(dataDir, flags));
}

/** Fills `body` with a unique blob: "<nonce>:<n>" then a fixed filler. */
export function uniqueBody(size: number, nonce: string, n: number): Buffer {
  const body = Buffer.alloc(size, 0x62);
  body.write(`${nonce}:${n}:`, 0, 'latin1');
  return body;
}

export async function bulkLoad(opts: BulkLoadOptions): Promise<BulkLoadResult> {
  const engine = await openEngine(opts.dataDir, opts.flags);
  const inflight = opts.inflight ?? 512;
  const deadline = performance.now() + (opts.timeLimitMs ?? Infinity);
  const t0 = performance.now();
  let next = 0;
  let stored = 0;
  let timedOut = false;
  let lastLog = t0;
  const worker = async (): Promise<void> => {
    while (next < opts.count) {
      if (performance.now() > deadline) {
        timedOut = true;
        return;
      }
      const n = next++;
      const r = await engine.putInline(uniqueBody(opts.sizeBytes, opts.nonce, n), 1, Buffer.alloc(0));
      if (!r.created) throw new Error(`bulk load: blob ${n} already existed`);
      stored++;
      const now = performance.now();
      if (now - lastLog > 10_000) {
        lastLog = now;
        log(`bulk load: ${stored.toLocaleString('en')} / ${opts.count.toLocaleString('en')} (${((stored / (now - t0)) * 1000).toFixed(0)}/s)`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: inflight }, worker));
  } finally {
    await engine.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  return { stored, seconds, ratePerS: stored / seconds, timedOut };
}
