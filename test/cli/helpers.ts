import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const BIN = join(ROOT, 'dist/src/main.js');

/** A throwaway HOME with its own XDG dirs, so the real bin never sees the user's files. */
export interface Sandbox {
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;
  readonly configFile: string;
  readonly stateHome: string;
}

export function sandbox(): Sandbox {
  const home = mkdtempSync(join(tmpdir(), 'blobstore-cli-'));
  const stateHome = join(home, 'state');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_STATE_HOME: stateHome,
    XDG_DATA_HOME: join(home, 'data'),
  };
  for (const key of Object.keys(env)) if (key.startsWith('BLOBSTORE_') || key.startsWith('ORDERS_API_')) delete env[key];
  mkdirSync(join(home, 'config'), { recursive: true });
  return { home, env, stateHome, configFile: join(home, 'config', 'blobstore', 'config.json') };
}

/** A fresh sandbox per call, all removed after the file's tests (call at the top of a test file). */
export function useSandboxes(): () => Sandbox {
  const boxes: Sandbox[] = [];
  afterAll(() => {
    for (const box of boxes) rmSync(box.home, { recursive: true, force: true });
  });
  return () => {
    const box = sandbox();
    boxes.push(box);
    return box;
  };
}

export function run(box: Sandbox, args: string[], extraEnv: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, ...args], { env: { ...box.env, ...extraEnv }, encoding: 'utf8', timeout: 60_000 });
}

/**
 * Runs the bin (or, with `node`, node itself with `args`) to its end; `input` is written to its
 * standard input, which is then closed.
 */
export function runAsync(
  box: Sandbox, args: string[], extraEnv: NodeJS.ProcessEnv = {}, input?: string, options: { node?: boolean; cwd?: string } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, options.node ? args : [BIN, ...args], { env: { ...box.env, ...extraEnv }, cwd: options.cwd });
    child.stdin.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** A free loopback port, never one this process handed out before (see test/helpers/cluster.ts). */
export { freePort } from '../helpers/cluster.js';

export async function portsFree(ports: readonly number[]): Promise<boolean> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (!free) return false;
  }
  return true;
}

/** Where the port blocks of deploy tests start. */
const BLOCKS_FROM = 10_000;

/** A base port whose block (base .. base+99) is free in us-east-1, for a stack of `nodes` nodes. */
export async function freeBasePort(nodes: number): Promise<number> {
  // Below the kernel's ephemeral range: a port found free there could be taken a moment later by
  // any test's listen(0) or outgoing connection (a deploy's node failed with EADDRINUSE so).
  const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  const blocks = Math.max(1, Math.floor((Math.min(ephemeralLow, 60_000) - 100 - BLOCKS_FROM) / 100));
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = BLOCKS_FROM + Math.floor(Math.random() * blocks) * 100;
    // API, metrics (block + 32 + i) and gRPC (block + 64 + i) of each node, and the orders service.
    const ports = [...Array.from({ length: nodes }, (_, i) => [base + i, base + 32 + i, base + 64 + i]).flat(), base + 99];
    if (await portsFree(ports)) return base;
  }
  throw new Error('no free port block found');
}

/** Running: exists and is not a zombie (init reaps orphans only after a while here). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
