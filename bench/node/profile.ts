/**
 * Where the node's main thread spends a load run: `node --cpu-prof` on the server during
 *   put-4KiB: one wrk run of unique 4 KiB PUTs (64 connections),
 *   get-4KiB: one wrk run of 4 KiB GETs over the ids just stored (a second node process, same data dir),
 *   put-1GiB: one chunked 1 GiB PUT (BENCH_STREAM_BYTES),
 * then the top functions by self time. "(idle)" is the event loop waiting (fsync, LMDB, sockets),
 * "(garbage collector)" GC, "(program)" native work outside JS frames. Each .cpuprofile is kept
 * in bench/results/ for Chrome DevTools or speedscope.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  GiB, KiB, ROOT, RUN_SECONDS, emit, envInt, listIds, log, removeDir, round, runNonce, runWrk, settle, startNode, tempDir, type RunningProcess,
} from './lib.js';
import { putChunked } from './stream-client.js';

const TOP = envInt('BENCH_PROFILE_TOP', 15);
const STREAM_BYTES = envInt('BENCH_STREAM_BYTES', GiB);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (name + file:line), in microseconds, largest first. */
export function selfTimes(profile: Profile): { fn: string; where: string; us: number }[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, { fn: string; where: string; us: number }>();
  profile.samples.forEach((id, i) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const file = url.replace(/^file:\/\//, '').replace(ROOT, '');
    const where = file ? `${file}:${lineNumber + 1}` : '';
    const key = `${functionName}@${where}`;
    const t = totals.get(key) ?? { fn: functionName || '(anonymous)', where, us: 0 };
    t.us += profile.timeDeltas[i] ?? 0;
    totals.set(key, t);
  });
  return [...totals.values()].sort((a, b) => b.us - a.us);
}

/** Runs `load` against a node started under --cpu-prof, stops it, reports the top self times. */
async function profiled(name: string, dataDir: string, profDir: string, load: (node: RunningProcess) => Promise<Record<string, unknown>>): Promise<void> {
  const bench = `profile-${name}`;
  rmSync(profDir, { recursive: true, force: true });
  await settle(bench);
  const node = await startNode(dataDir, [], ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
  try {
    const info = await load(node);
    emit({ bench, metric: 'load_under_profiler', value: null, unit: '', ...info });
  } finally {
    await node.stop();
  }
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`${name}: no .cpuprofile written (did the node exit cleanly?)`);
  const results = join(ROOT, 'bench/results');
  mkdirSync(results, { recursive: true });
  copyFileSync(join(profDir, file), join(results, `${name}.cpuprofile`));
  const times = selfTimes(JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile);
  const total = times.reduce((a, t) => a + t.us, 0);
  times.slice(0, TOP).forEach((t, rank) => {
    emit({ bench, metric: 'self_time', value: round((100 * t.us) / total, 2), unit: '%', rank: rank + 1, fn: t.fn, where: t.where, ms: round(t.us / 1000, 1) });
  });
}

async function main(): Promise<void> {
  const dir = tempDir('profile');
  const dataDir = join(dir, 'data');
  const profDir = join(dir, 'prof');
  const idsFile = join(dir, 'ids.txt');
  const nonce = runNonce();
  try {
    await profiled('put-4KiB', dataDir, profDir, async (node) => {
      const run = await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'post-unique.lua', args: [String(4 * KiB), nonce] });
      log(`profile put-4KiB: ${run.rps.toFixed(0)} req/s under the profiler (p50 ${run.p50Ms.toFixed(1)} ms, errors ${run.errors})`);
      writeFileSync(idsFile, (await listIds(node.port, 100_000)).join('\n') + '\n');
      return { rps: round(run.rps, 0), seconds: RUN_SECONDS, errors: run.errors };
    });
    await profiled('get-4KiB', dataDir, profDir, async (node) => {
      const run = await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'get-ids.lua', args: [idsFile] });
      log(`profile get-4KiB: ${run.rps.toFixed(0)} req/s under the profiler (p50 ${run.p50Ms.toFixed(1)} ms, errors ${run.errors})`);
      return { rps: round(run.rps, 0), seconds: RUN_SECONDS, errors: run.errors };
    });
    await profiled('put-1GiB', dataDir, profDir, async (node) => {
      const put = await putChunked(node.port, STREAM_BYTES, `${nonce}s`);
      log(`profile put-1GiB: ${(STREAM_BYTES / put.seconds / 1e6).toFixed(0)} MB/s under the profiler`);
      return { mbps: round(STREAM_BYTES / put.seconds / 1e6, 1), bytes: STREAM_BYTES };
    });
  } finally {
    removeDir(dir);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
