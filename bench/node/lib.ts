/**
 * Shared pieces of the node benches: JSON-line output, starting and stopping a node process,
 * driving wrk (the one load client of every HTTP figure), and bulk loading through the
 * in-process engine. Benches print JSON lines on stdout and progress on stderr.
 */
import { type ChildProcess, spawn, execFile } from 'node:child_process';
import { existsSync, promises as fsp, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

export { freePort };

const execFileAsync = promisify(execFile);

/** Repository root (this file runs from dist/bench/node/). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = join(ROOT, 'dist/src/main.js');
export const LUA_DIR = join(ROOT, 'bench/node/lua');

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

/** Knobs shared by every bench; `make bench` sets none of them (the defaults are the figures). */
export const RUN_SECONDS = envInt('BENCH_RUN_SECONDS', 10);
export const REPEATS = envInt('BENCH_REPEATS', 3);
export const CONNECTIONS = envInt('BENCH_CONNECTIONS', 64);
export const WRK_THREADS = envInt('BENCH_WRK_THREADS', 2);

export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw.replaceAll('_', ''));
  if (!Number.isFinite(n)) throw new Error(`${name}=${raw}: not a number`);
  return Math.floor(n);
}

export interface Result {
  bench: string;
  metric: string;
  /** null when the figure could not be measured (the line says why). */
  value: number | null;
  unit: string;
  [extra: string]: unknown;
}

/** One figure as a JSON line on stdout (run.sh collects them into bench/results/). */
export function emit(result: Result): void {
  const v = result.value;
  const value = v === null || !Number.isFinite(v) ? null : Number.isInteger(v) ? v : Number(v.toPrecision(6));
  process.stdout.write(JSON.stringify({ ...result, value }) + '\n');
}

export function log(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function round(n: number, digits = 3): number {
  return Number(n.toFixed(digits));
}

export function tempDir(tag: string): string {
  const path = mkdtempSync(join(tmpdir(), `blobstore-bench-${tag}-`));
  temps.add(path);
  return path;
}

/**
 * A directory in memory (/dev/shm) for request bodies a client streams from a file: writing them
 * to the disk under test would leave writeback competing with the figure that follows.
 */
export function memoryDir(tag: string): string {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const path = mkdtempSync(join(base, `blobstore-bench-${tag}-`));
  temps.add(path);
  return path;
}

export function removeDir(path: string): void {
  rmSync(path, { recursive: true, force: true });
  temps.delete(path);
}


/** GET path over a fresh connection; resolves with the status (0 when nothing answers). */
export function probe(port: number, path: string, tls = false): Promise<number> {
  return new Promise((resolve) => {
    // A TLS listener's certificate is the bench's own: only the answer matters here.
    const sock = tls ? tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }) : connect({ host: '127.0.0.1', port });
    let data = '';
    const done = (status: number): void => {
      sock.destroy();
      resolve(status);
    };
    sock.setTimeout(1000, () => done(0));
    sock.once('error', () => done(0));
    sock.on('data', (d) => {
      data += d.toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      if (m) done(Number(m[1]));
    });
    sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

export async function waitHealthy(port: number, timeoutMs: number, child?: ChildProcess, pollMs = 2, tls = false): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} before it was healthy`);
    if ((await probe(port, '/healthz', tls)) === 200) return;
    await sleep(pollMs);
  }
  throw new Error(`port ${port}: /healthz not 200 within ${timeoutMs} ms`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Children still running; killed if the bench itself exits or is stopped. */
const children = new Set<ChildProcess>();
/** Temp dirs not yet removed; removed if the bench exits early. */
const temps = new Set<string>();
const killChildren = (): void => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const t of temps) rmSync(t, { recursive: true, force: true });
};
process.on('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    killChildren();
    process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
  });
}

export interface RunningProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  /** Milliseconds from spawn until /healthz answered 200. */
  readyMs: number;
  output: () => string;
  stop: () => Promise<number | null>;
}

/** Spawns a process that listens on `port`, waits for /healthz 200. */
export async function startProcess(argv: string[], port: number, opts: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv; readyTimeoutMs?: number; tls?: boolean } = {}): Promise<RunningProcess> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  const keep = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 64 * KiB) out = out.slice(-32 * KiB);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await waitHealthy(port, opts.readyTimeoutMs ?? 60_000, child, 2, opts.tls);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  const readyMs = performance.now() - t0;
  return {
    child,
    pid: child.pid!,
    port,
    readyMs,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Starts `blobstore serve` on a free port with the given data dir and extra flags. */
export async function startNode(dataDir: string, flags: string[] = [], nodeArgs: string[] = []): Promise<RunningProcess> {
  const port = await freePort();
  return startProcess([CLI, 'serve', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`, '--metrics-addr', '', '--grpc-addr', '', ...flags], port, {
    nodeArgs, tls: flags.includes('--tls-cert'),
    env: { BLOBSTORE_CONFIG: '/nonexistent/blobstore-bench.json' },
  });
}

/** The bare uWS echo server: the ceiling of every HTTP figure. */
export async function startEcho(): Promise<RunningProcess> {
  const port = await freePort();
  return startProcess([join(ROOT, 'bench/node/echo-server.mjs'), String(port)], port);
}

/** /proc/<pid>/status fields in KiB (VmRSS, VmHWM, ...). */
export function procStatus(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** Resets VmHWM to the current RSS (Linux clear_refs 5). */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export interface WrkResult {
  requests: number;
  durationS: number;
  rps: number;
  /** Non-2xx/3xx responses plus socket errors. */
  errors: number;
  p50Ms: number;
  p99Ms: number;
}

/** Runs wrk with one of bench/node/lua/*.lua; the script's done() prints one WRKJSON line. */
/** GET `url` with curl into /dev/null; the seconds, after checking 200 and at least `minBytes`. */
export async function curlGetSeconds(url: string, minBytes: number): Promise<number> {
  const { stdout } = await execFileAsync('curl', ['-sS', '-o', '/dev/null', '--max-time', '300', '-w', '%{http_code} %{size_download} %{time_total}', url]);
  const [code, size, seconds] = stdout.trim().split(' ');
  if (code !== '200' || Number(size) < minBytes) throw new Error(`curl ${url}: HTTP ${code}, ${size} bytes`);
  return Number(seconds);
}

export async function runWrk(opts: { url: string; script: string; args?: string[]; seconds?: number; connections?: number; threads?: number }): Promise<WrkResult> {
  const seconds = opts.seconds ?? RUN_SECONDS;
  const argv = [
    '-t', String(opts.threads ?? WRK_THREADS), '-c', String(opts.connections ?? CONNECTIONS), '-d', `${seconds}s`,
    '--timeout', '10s', '-s', join(LUA_DIR, opts.script), opts.url, '--', ...(opts.args ?? []),
  ];
  const { stdout } = await execFileAsync('wrk', argv, { maxBuffer: 16 * MiB, timeout: (seconds + 60) * 1000 });
  const line = stdout.split('\n').find((l) => l.startsWith('WRKJSON '));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const s = JSON.parse(line.slice(8)) as Record<string, number>;
  const durationS = s.duration_us! / 1e6;
  return {
    requests: s.requests!,
    durationS,
    rps: s.requests! / durationS,
    errors: s.status! + s.connect! + s.read! + s.write! + s.timeout!,
    p50Ms: s.p50_us! / 1000,
    p99Ms: s.p99_us! / 1000,
  };
}

/**
 * Runs `repeats` wrk runs and returns each run plus the median rate. `optsFor(i)` gives run i's
 * options: PUT runs must pass a different nonce each time, or later runs resend earlier bodies
 * (content addressing answers those 200 without writing, and the rate looks better than it is).
 */
export async function repeatWrk(label: string, optsFor: (run: number) => Parameters<typeof runWrk>[0], repeats = REPEATS): Promise<{ runs: WrkResult[]; rps: number; p50Ms: number; p99Ms: number; errors: number }> {
  const runs: WrkResult[] = [];
  for (let i = 0; i < repeats; i++) {
    const r = await runWrk(optsFor(i));
    log(`${label} run ${i + 1}/${repeats}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, errors ${r.errors}`);
    runs.push(r);
  }
  return {
    runs,
    rps: median(runs.map((r) => r.rps)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
  };
}

/** Dirty + Writeback page-cache bytes (KiB) from /proc/meminfo. */
function dirtyKiB(): number {
  const info = readFileSync('/proc/meminfo', 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? 0);
  return field('Dirty') + field('Writeback');
}

/**
 * Lets the disk settle before a measured series: `sync`, then wait (at most `timeoutMs`) until
 * less than 64 MiB is dirty or under writeback. Without it, writeback of an earlier step (a bulk
 * load, a 1 GiB blob) competes with the first runs' fsyncs and skews them.
 */
export async function settle(label: string, timeoutMs = 30_000): Promise<void> {
  const t0 = performance.now();
  await execFileAsync('sync', [], { timeout: timeoutMs });
  while (dirtyKiB() > 64 * 1024 && performance.now() - t0 < timeoutMs) await sleep(200);
  log(`${label}: disk settled in ${((performance.now() - t0) / 1000).toFixed(1)} s (${(dirtyKiB() / 1024).toFixed(0)} MiB dirty)`);
}

/** A nonce that makes this process's bodies differ from every earlier run's. */
export function runNonce(): string {
  return `${Date.now().toString(36)}${process.pid.toString(36)}`;
}

/** Every id in the node, page by page (up to `max`); with a bearer token when given. */
export async function listIds(port: number, max: number, token?: string): Promise<string[]> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const ids: string[] = [];
  let cursor: string | undefined;
  while (ids.length < max) {
    const url = `http://127.0.0.1:${port}/v1/blobs?limit=10000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await fetch(url, { headers });
    if (res.status !== 200) throw new Error(`list: HTTP ${res.status}: ${await res.text()}`);
    const page = (await res.json()) as { ids: string[]; next_cursor?: string; has_more: boolean };
    ids.push(...page.ids);
    if (!page.has_more || !page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return ids.slice(0, max);
}

/** Drops one file's pages from the page cache (dd's fadvise DONTNEED), leaving others' alone. */
export async function dropCache(path: string): Promise<void> {
  await execFileAsync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none']);
}

/** The node's file for a large blob (data/blobs/<2 hex>/<id>), found by name if the layout moved. */
export async function blobFile(dataDir: string, id: string): Promise<string> {
  const guess = join(dataDir, 'blobs', id.slice(0, 2), id);
  if (await fsp.stat(guess).then(() => true, () => false)) return guess;
  for await (const entry of await fsp.opendir(dataDir, { recursive: true })) {
    if (entry.name === id) return join(entry.parentPath ?? entry.path, entry.name);
  }
  throw new Error(`no file for blob ${id} under ${dataDir}`);
}
