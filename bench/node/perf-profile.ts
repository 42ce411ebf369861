/**
 * CPU accounting for the HTTP benches: a process's CPU time from /proc (per request, beside the
 * reference's), and a Linux `perf` profile of a node started with --perf-basic-prof (JS frames by
 * name, native frames of V8, uWS, LMDB, libc and the kernel too), summarised by self time.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
/** Linux reports CPU time in clock ticks of 1/100 s (USER_HZ). */
const TICK_US = 10_000;

/** User and system CPU time of a process (all its threads) so far, in microseconds. */
function cpuSplitUs(pid: number): { user: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * TICK_US, sys: Number(fields[12]) * TICK_US };
}

/** User + system CPU time of a process (all its threads) so far, in microseconds. */
export function cpuUs(pid: number): number {
  const { user, sys } = cpuSplitUs(pid);
  return user + sys;
}

/** CPU time of the whole machine so far, all CPUs, in microseconds: busy (user, nice, system, irq, softirq) and idle (with iowait). */
export function machineCpuUs(): { busy: number; idle: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { busy: (f[0]! + f[1]! + f[2]! + f[5]! + f[6]!) * TICK_US, idle: (f[3]! + f[4]!) * TICK_US };
}

/** TCP connections this machine has opened so far (`ActiveOpens` of /proc/net/snmp): every connect(), whichever process made it. */
export function tcpActiveOpens(): number {
  const [names, values] = readFileSync('/proc/net/snmp', 'utf8').split('\n').filter((l) => l.startsWith('Tcp:')).map((l) => l.trim().split(/\s+/));
  return Number(values![names!.indexOf('ActiveOpens')]);
}

/** CPU of the processes `pids` together so far (all their threads), in microseconds. */
function cpuSplitOf(pids: readonly number[]): { user: number; sys: number } {
  const all = pids.map(cpuSplitUs);
  return { user: all.reduce((a, c) => a + c.user, 0), sys: all.reduce((a, c) => a + c.sys, 0) };
}

/** Runs `load` and returns its result with the CPU microseconds of the process(es) meanwhile (`sysUs`: in the kernel). */
export async function withCpu<T>(pid: number | readonly number[], load: () => Promise<T>): Promise<{ result: T; cpuUs: number; sysUs: number }> {
  const pids = typeof pid === 'number' ? [pid] : pid;
  const before = cpuSplitOf(pids);
  const result = await load();
  const after = cpuSplitOf(pids);
  return { result, cpuUs: after.user + after.sys - before.user - before.sys, sysUs: after.sys - before.sys };
}

export async function perfAvailable(): Promise<boolean> {
  try {
    await execFileAsync('perf', ['--version'], { timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** `perf record` (self samples, no call graphs) of `pid` while `load` runs. */
export async function perfRecord<T>(pid: number, out: string, load: () => Promise<T>): Promise<T> {
  const rec = spawn('perf', ['record', '-F', '999', '-p', String(pid), '-o', out, '--quiet'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  rec.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => rec.once('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 300));
  try {
    return await load();
  } finally {
    rec.kill('SIGINT');
    const code = await exited;
    if (code !== 0 && code !== null) throw new Error(`perf record exited ${code}: ${err.slice(0, 400)}`);
  }
}

export interface PerfSymbol {
  pct: number;
  dso: string;
  symbol: string;
  kind: string;
}

/** Where a sampled symbol belongs. */
export function kindOf(dso: string, symbol: string, kernel: boolean): string {
  if (kernel) return 'kernel (sockets, syscalls, scheduling)';
  if (symbol.startsWith('JS:') || symbol.startsWith('LazyCompile:') || symbol.startsWith('Function:')) return 'JS (ours and Node/lmdb-js JS)';
  if (symbol.startsWith('RegExp:')) return 'JS (ours and Node/lmdb-js JS)';
  if (symbol.startsWith('Builtins_') || symbol.startsWith('Builtin:')) return 'V8 builtins (ICs, stubs)';
  if (/uws/i.test(dso)) return 'uWS (native)';
  // lmdb-js's prebuilt binary is named node.abi<N>.glibc.node.
  if (/lmdb|^node\.abi/i.test(dso)) return 'LMDB (native)';
  if (/blake/i.test(dso) || symbol.startsWith('blake3_')) return 'BLAKE3 (native)';
  if (/blobstore_ec/.test(dso)) return 'our addon (CRC-32C, base64, Reed-Solomon)';
  if (/Scaveng|MarkCompact|Heap::|GC|Sweep|Marking|Evacuat/.test(symbol)) return 'V8 GC';
  if (/libc|ld-linux/.test(dso)) return 'libc (memcpy, malloc)';
  if (/^(v8::|node::|uv_|uv__)/.test(symbol) || dso === 'node') return 'V8/Node runtime (API calls, libuv)';
  return 'other';
}

/** Self-time shares by symbol (largest first) from a perf.data file. */
export async function perfSymbols(file: string): Promise<PerfSymbol[]> {
  const { stdout } = await execFileAsync('perf', ['report', '-i', file, '--no-children', '--sort', 'dso,sym', '--stdio', '-q', '-g', 'none', '-t', '|'], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
  });
  const out: PerfSymbol[] = [];
  for (const line of stdout.split('\n')) {
    // " 12.34% |node        |[.] Builtins_LoadIC" (a JIT dso has spaces: "[JIT] tid 1388")
    const m = /^\s*([\d.]+)%\s*\|([^|]*)\|\[([.k])\]\s+(.*)$/.exec(line);
    if (!m) continue;
    const dso = m[2]!.trim();
    const symbol = m[4]!.trim();
    out.push({ pct: Number(m[1]), dso, symbol, kind: kindOf(dso, symbol, m[3] === 'k') });
  }
  return out;
}

/** Self-time shares summed by kind, largest first. */
export function byKind(symbols: readonly PerfSymbol[]): { kind: string; pct: number }[] {
  const sums = new Map<string, number>();
  for (const s of symbols) sums.set(s.kind, (sums.get(s.kind) ?? 0) + s.pct);
  return [...sums].map(([kind, pct]) => ({ kind, pct })).sort((a, b) => b.pct - a.pct);
}

export interface SyscallCount {
  /** Every system call the process (all its threads) entered while the load ran. */
  total: number;
  /** By name, largest first. */
  byName: { name: string; count: number }[];
}

/**
 * `perf stat` of every syscall tracepoint of `pid` (or of several processes, counted together)
 * while `load` runs: what a request costs in kernel entries, the figure a slower CPU (dearer
 * syscalls) punishes. Only outside the timed rounds: enabled tracepoints add their own cost.
 */
export async function withSyscalls<T>(pid: number | readonly number[], load: () => Promise<T>): Promise<{ result: T; syscalls: SyscallCount }> {
  const pids = typeof pid === 'number' ? String(pid) : pid.join(',');
  const stat = spawn('perf', ['stat', '-x', ',', '-e', 'syscalls:sys_enter_*', '-p', pids], { stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  stat.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => stat.once('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 300));
  let result: T;
  try {
    result = await load();
  } finally {
    stat.kill('SIGINT');
    await exited;
  }
  const byName: { name: string; count: number }[] = [];
  for (const line of out.split('\n')) {
    // "1234,,syscalls:sys_enter_read,..." (a count of "<not counted>" is skipped)
    const m = /^(\d+),[^,]*,syscalls:sys_enter_(\w+),/.exec(line);
    if (m && Number(m[1]) > 0) byName.push({ name: m[2]!, count: Number(m[1]) });
  }
  if (byName.length === 0) throw new Error(`perf stat counted no syscalls: ${out.slice(0, 400)}`);
  byName.sort((a, b) => b.count - a.count);
  return { result, syscalls: { total: byName.reduce((a, s) => a + s.count, 0), byName } };
}

/**
 * Waits until process `pid` spends less than `share` of one CPU over a 500 ms window (its own work
 * after a load, such as an index merge, would otherwise fall into the next load's figures), up to
 * `timeoutMs`; the milliseconds waited.
 */
export async function untilIdle(pid: number, timeoutMs = 20_000, share = 0.1): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const before = cpuUs(pid);
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (cpuUs(pid) - before < share * 500_000 || performance.now() - t0 > timeoutMs) return performance.now() - t0;
  }
}
