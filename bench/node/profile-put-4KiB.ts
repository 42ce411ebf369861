/**
 * Where a 4 KiB PUT run spends the node's main thread: `node --cpu-prof` on the server during one
 * wrk run (64 connections), then the top functions by self time. "(idle)" is the event loop
 * waiting (for fsync, LMDB, sockets), "(garbage collector)" is GC. The .cpuprofile is kept in
 * bench/results/ for Chrome DevTools / speedscope.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KiB, ROOT, RUN_SECONDS, emit, envInt, log, removeDir, round, runNonce, runWrk, startNode, tempDir } from './lib.js';

const BENCH = 'profile-put-4KiB';
const TOP = envInt('BENCH_PROFILE_TOP', 15);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
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
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^file:\/\//, '').replace(ROOT, '');
    const where = file ? `${file}:${lineNumber + 1}` : '';
    const key = `${functionName}@${where}`;
    const t = totals.get(key) ?? { fn: functionName || '(anonymous)', where, us: 0 };
    t.us += profile.timeDeltas[i] ?? 0;
    totals.set(key, t);
  });
  return [...totals.values()].sort((a, b) => b.us - a.us);
}

async function main(): Promise<void> {
  const dir = tempDir('profile');
  const profDir = join(dir, 'prof');
  const node = await startNode(join(dir, 'data'), [], ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
  try {
    const run = await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'post-unique.lua', args: [String(4 * KiB), runNonce()] });
    log(`${BENCH}: ${run.rps.toFixed(0)} req/s under the profiler (p50 ${run.p50Ms.toFixed(1)} ms, errors ${run.errors})`);
    emit({ bench: BENCH, metric: 'put_rps_profiled', value: round(run.rps, 0), unit: 'req/s', seconds: RUN_SECONDS });
  } finally {
    await node.stop();
  }
  try {
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no .cpuprofile written (did the node exit cleanly?)');
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile;
    const results = join(ROOT, 'bench/results');
    mkdirSync(results, { recursive: true });
    copyFileSync(join(profDir, file), join(results, 'put-4KiB.cpuprofile'));
    const times = selfTimes(profile);
    const total = times.reduce((a, t) => a + t.us, 0);
    times.slice(0, TOP).forEach((t, rank) => {
      emit({ bench: BENCH, metric: 'self_time', value: round((100 * t.us) / total, 2), unit: '%', rank: rank + 1, fn: t.fn, where: t.where, ms: round(t.us / 1000, 1) });
    });
  } finally {
    removeDir(dir);
  }
}

await main();
