/**
 * `blobstore put --jobs 64` of 10,000 files of 4 KiB against wrk's 4 KiB POSTs (64 connections)
 * to the same node, rounds interleaved (issue: a client for ingest; target >= 70% of wrk):
 *
 *   cli_put_4KiB   files stored per second by the command (its start included), and the ratio to
 *                  wrk's PUT/s in the same round
 *
 * BENCH_CLIENT_FILES (10,000) files; REPEATS rounds.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuUs } from '../node/perf-profile.js';
import { CLI, KiB, REPEATS, emit, envInt, log, median, removeDir, round, runNonce, runWrk, startNode, tempDir } from '../node/lib.js';

const BENCH = 'client-put';
const FILES = envInt('BENCH_CLIENT_FILES', 10_000);
const JOBS = envInt('BENCH_CLIENT_JOBS', 64);

function makeFiles(dir: string, nonce: string): string[] {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  const body = Buffer.alloc(4 * KiB, 0x61);
  for (let i = 0; i < FILES; i++) {
    body.write(`${nonce}:${String(i).padStart(10, '0')}:`);
    const f = join(dir, `f${i}`);
    writeFileSync(f, body);
    files.push(f);
  }
  return files;
}

/** CPU microseconds of this process's waited-for children so far (cutime + cstime, 1/100 s ticks). */
function childrenCpuUs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10_000;
}

/** Seconds `blobstore put --jobs JOBS` takes for `files` (the command's own start included). */
function putSeconds(url: string, files: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [CLI, 'put', '--jobs', String(JOBS), '--url', url, ...files], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve((performance.now() - t0) / 1000) : reject(new Error(`put exited ${code}: ${stderr.slice(0, 500)}`))));
  });
}

async function main(): Promise<void> {
  const dir = tempDir(BENCH);
  const node = await startNode(join(dir, 'data'));
  const url = `http://127.0.0.1:${node.port}`;
  const nonce = runNonce();
  const wrkRps: number[] = [];
  const cliRps: number[] = [];
  const nodeUsPerWrkPut: number[] = [];
  const nodeUsPerFile: number[] = [];
  const clientUsPerFile: number[] = [];
  try {
    for (let r = 0; r < REPEATS; r++) {
      const files = makeFiles(join(dir, `round${r}`), `${nonce}c${r}`);
      // Each client starts on a quiet disk: the files' writeback, the last round's unlinks and the
      // node's own dirty pages would otherwise land during the next measurement.
      execFileSync('sync');
      let nodeBefore = cpuUs(node.pid);
      const wrk = await runWrk({ url, script: 'post-unique.lua', args: [String(4 * KiB), `${nonce}w${r}`] });
      wrkRps.push(wrk.rps);
      nodeUsPerWrkPut.push((cpuUs(node.pid) - nodeBefore) / wrk.requests);
      execFileSync('sync');
      nodeBefore = cpuUs(node.pid);
      const clientBefore = childrenCpuUs();
      const seconds = await putSeconds(url, files);
      nodeUsPerFile.push((cpuUs(node.pid) - nodeBefore) / FILES);
      clientUsPerFile.push((childrenCpuUs() - clientBefore) / FILES);
      cliRps.push(FILES / seconds);
      log(`${BENCH} round ${r + 1}: wrk ${wrkRps[r]!.toFixed(0)} PUT/s, blobstore put --jobs ${JOBS} ${cliRps[r]!.toFixed(0)} files/s (${FILES} in ${seconds.toFixed(2)} s); node CPU ${nodeUsPerWrkPut[r]!.toFixed(0)} us per wrk PUT, ${nodeUsPerFile[r]!.toFixed(0)} us per file; command ${clientUsPerFile[r]!.toFixed(0)} us per file`);
      removeDir(join(dir, `round${r}`));
    }
    const ratios = cliRps.map((c, i) => c / wrkRps[i]!);
    emit({
      bench: BENCH, metric: 'cli_put_4KiB', value: round(median(cliRps), 0), unit: 'files/s', files: FILES, jobs: JOBS,
      wrk_put_per_s: round(median(wrkRps), 0), ratio_to_wrk: round(median(ratios), 3), target: 0.7, met: median(ratios) >= 0.7,
      node_cpu_us_per_file: round(median(nodeUsPerFile), 1), client_cpu_us_per_file: round(median(clientUsPerFile), 1), node_cpu_us_per_wrk_put: round(median(nodeUsPerWrkPut), 1),
    });
  } finally {
    await node.stop();
    removeDir(dir);
  }
}

await main();
