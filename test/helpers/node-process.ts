/**
 * Starts real `blobstore serve` processes on free loopback ports, each with its own temp data dir
 * and XDG dirs, and stops them (SIGTERM) or kills them (SIGKILL).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REPO = new URL('../..', import.meta.url).pathname;
export const MAIN = join(REPO, 'dist/src/main.js');

export interface NodeProcess {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly child: ChildProcess;
  output(): string;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  /** Peak resident set size (VmHWM) in bytes. */
  peakRssBytes(): number;
  rssBytes(): number;
}

/**
 * Temp dirs made by this test file; removed after its last hook (test/setup.ts) and, should the
 * worker die first, when it exits. A node's data dir holds a 256 MiB reserve file and
 * preallocated segments: left behind, a few hundred fill a shared machine's disk.
 */
const temps = new Set<string>();
export function removeTempDirs(): void {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
  temps.clear();
}
process.once('exit', removeTempDirs);

export function tempDir(prefix = 'blobstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.add(dir);
  return dir;
}

export interface StartOptions {
  dataDir?: string;
  args?: string[];
  env?: Record<string, string>;
  /** The host the node is reached at (its --listen host; 127.0.0.1 by default). */
  host?: string;
  /** A command the node runs under, e.g. ['ip', 'netns', 'exec', 'ns1'] (it must exec the node). */
  wrap?: string[];
  /** Only --data-dir and `args`: no test defaults (node id, listeners off) added. */
  bare?: boolean;
  /** GrpcAddr left unset, as a user starts a node (the test defaults turn gRPC off). */
  grpcUnset?: boolean;
}

function statusField(pid: number, field: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

/** Runs `blobstore` with arguments to completion; for CLI checks. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export async function startNode(options: StartOptions = {}): Promise<NodeProcess> {
  const dataDir = options.dataDir ?? tempDir();
  const home = tempDir('blobstore-home-');
  const defaults = options.bare ? [] : ['--listen', '127.0.0.1:0', '--metrics-addr', '', ...(options.grpcUnset ? [] : ['--grpc-addr', '']), '--node-id', 'test-node'];
  const argv = [MAIN, 'serve', '--data-dir', dataDir, ...defaults, ...(options.args ?? [])];
  const wrap = options.wrap ?? [];
  const child = spawn(
    wrap.length > 0 ? wrap[0]! : process.execPath,
    wrap.length > 0 ? [...wrap.slice(1), process.execPath, ...argv] : argv,
    {
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_DATA_HOME: join(home, 'data'), ...options.env },
      // An IPC channel: a test worker that dies (a timeout, vitest ending a fork) takes its nodes
      // with it, instead of leaving them running and loading the machine for every later test.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  child.channel?.unref();
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let scheme = 'http';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start:\n${out}`)), 30_000);
    const check = (): void => {
      const m = /listening on (https?):\/\/[^:]+:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        scheme = m[1]!;
        resolve(Number(m[2]));
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`node exited with ${code} before listening:\n${out}`));
    });
  });
  const cleanup = (): void => rmSync(home, { recursive: true, force: true });
  return {
    url: `${scheme}://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    dataDir,
    child,
    output: () => out,
    stop: async () => {
      child.kill('SIGTERM');
      const code = await exited;
      cleanup();
      return code;
    },
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
      cleanup();
    },
    peakRssBytes: () => statusField(child.pid!, 'VmHWM'),
    rssBytes: () => statusField(child.pid!, 'VmRSS'),
  };
}
