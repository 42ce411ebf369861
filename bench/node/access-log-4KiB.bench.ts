/**
 * What the access log costs the 4 KiB hot path: durable PUT/s, GET/s of a hot set (answered from
 * the read cache) and the node's CPU per GET, for nodes side by side in one run, rounds
 * interleaved so that load from elsewhere hits each alike; each figure is the median of REPEATS
 * runs of RUN_SECONDS.
 *
 *   off     the default: log level info, accessLogEvery 0 (no line, no request id)
 *   id      the default, every GET with an X-Request-Id (echoed: the response stand-in, no line)
 *   debug   --log-level debug: one access line per request, written to a file as a deployed
 *           node's stdout is
 *
 * BENCH_ACCESS_MODES=off picks modes (a build without the access log has `off` only: its `debug`
 * writes no lines, which the bench reports as access_lines 0).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CLI, CONNECTIONS, KiB, REPEATS, RUN_SECONDS, WRK_THREADS, emit, freePort, listIds, log, median, removeDir, round, runNonce, runWrk,
  settle, tempDir, waitHealthy, type WrkResult,
} from './lib.js';
import { withCpu } from './perf-profile.js';

const BENCH = 'access-log-4KiB';
const SIZE = 4 * KiB;
const HOT_SET = 4096;
const MODES: Record<string, string[]> = { off: [], id: [], debug: ['--log-level', 'debug'] };
/** The X-Request-Id each GET of a mode carries ('' none). */
const REQUEST_IDS: Record<string, string> = { off: '', id: 'bench-request-1', debug: '' };

interface LoggedNode {
  mode: string;
  child: ChildProcess;
  port: number;
  logFile: string;
  hotFile: string;
  stop: () => Promise<void>;
}

/** A node whose stdout and stderr go to `logFile`. */
async function startLogged(mode: string, dir: string): Promise<LoggedNode> {
  const port = await freePort();
  const logFile = join(dir, `${mode}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [
    CLI, 'serve', '--data-dir', join(dir, `data-${mode}`), '--listen', `127.0.0.1:${port}`, '--metrics-addr', '', '--grpc-addr', '',
    '--log-format', 'json', ...MODES[mode]!,
  ], { stdio: ['ignore', fd, fd], env: { ...process.env, BLOBSTORE_CONFIG: '/nonexistent/blobstore-bench.json' } });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitHealthy(port, 60_000, child);
  return {
    mode, child, port, logFile, hotFile: join(dir, `ids-${mode}.txt`),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Access lines in `file` (grep: the file may be larger than a string can hold). */
function accessLines(file: string): number {
  const r = spawnSync('grep', ['-c', '"access":"http"', file], { encoding: 'utf8' });
  return Number(r.stdout.trim() || 0);
}

async function main(): Promise<void> {
  const dir = tempDir('access');
  const nonce = runNonce();
  const modes = (process.env.BENCH_ACCESS_MODES ?? 'off,id,debug').split(',').filter((m) => m in MODES);
  const nodes: LoggedNode[] = [];
  try {
    for (const mode of modes) nodes.push(await startLogged(mode, dir));
    for (const n of nodes) {
      const url = `http://127.0.0.1:${n.port}`;
      await runWrk({ url, script: 'post-unique.lua', args: [String(SIZE), `${nonce}${n.mode}w`], seconds: 3 });
      writeFileSync(n.hotFile, (await listIds(n.port, HOT_SET)).join('\n') + '\n');
      await runWrk({ url, script: 'get-ids.lua', args: [n.hotFile], seconds: 2 });
    }
    await settle(BENCH);
    const put = new Map<string, WrkResult[]>(modes.map((m) => [m, []]));
    const get = new Map<string, WrkResult[]>(modes.map((m) => [m, []]));
    const cpu = new Map<string, number[]>(modes.map((m) => [m, []]));
    for (let i = 0; i < REPEATS; i++) {
      for (const n of nodes) {
        const url = `http://127.0.0.1:${n.port}`;
        put.get(n.mode)!.push(await runWrk({ url, script: 'post-unique.lua', args: [String(SIZE), `${nonce}${n.mode}${i}`] }));
        const g = await withCpu(n.child.pid!, () => runWrk({ url, script: 'get-ids.lua', args: [n.hotFile, '', REQUEST_IDS[n.mode]!] }));
        get.get(n.mode)!.push(g.result);
        cpu.get(n.mode)!.push(g.cpuUs / g.result.requests);
        log(`${BENCH} round ${i + 1}/${REPEATS} ${n.mode}: PUT ${put.get(n.mode)![i]!.rps.toFixed(0)}, GET ${g.result.rps.toFixed(0)} req/s, ` +
          `CPU ${cpu.get(n.mode)![i]!.toFixed(1)} us per GET`);
      }
    }
    const common = { connections: CONNECTIONS, wrk_threads: WRK_THREADS, seconds: RUN_SECONDS, repeats: REPEATS, body_bytes: SIZE };
    for (const n of nodes) {
      const p = put.get(n.mode)!;
      const g = get.get(n.mode)!;
      const errors = [...p, ...g].reduce((a, r) => a + r.errors, 0);
      emit({ bench: BENCH, metric: 'put_rps', mode: n.mode, value: round(median(p.map((r) => r.rps)), 0), unit: 'req/s', runs: p.map((r) => round(r.rps, 0)), errors, ...common });
      emit({ bench: BENCH, metric: 'get_rps', mode: n.mode, value: round(median(g.map((r) => r.rps)), 0), unit: 'req/s', runs: g.map((r) => round(r.rps, 0)), ...common });
      emit({ bench: BENCH, metric: 'cpu_us_per_get', mode: n.mode, value: round(median(cpu.get(n.mode)!), 1), unit: 'us', runs: cpu.get(n.mode)!.map((c) => round(c, 1)) });
      await n.stop();
      emit({ bench: BENCH, metric: 'access_lines', mode: n.mode, value: accessLines(n.logFile), unit: 'lines', log_bytes: statSync(n.logFile).size });
    }
  } finally {
    for (const n of nodes) await n.stop();
    removeDir(dir);
  }
}

await main();
