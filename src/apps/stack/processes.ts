import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { processAlive } from '../../cli/atomic-file.js';
import type { ServiceState } from './deploy-state.js';
import type { ServiceSpec } from './stack.js';

/**
 * Starting and stopping a stack's processes. Each service runs detached (its own process group,
 * output to its log file), so it outlives the `deploy` command. A recorded pid counts as ours only
 * while the process' command line still names the service's data dir: a reused pid is never
 * signalled.
 */

export const STOP_TIMEOUT_MS = 15_000;
const STOP_POLL_MS = 25;

/** Alive and still the process deploy started (checked through /proc where there is one). */
export function isOurProcess(service: Pick<ServiceState, 'pid' | 'dataDir'>): boolean {
  if (!processAlive(service.pid)) return false;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${service.pid}/cmdline`, 'utf8');
  } catch {
    return process.platform !== 'linux';
  }
  // A zombie (exited, not yet reaped) has an empty command line, so it does not count either.
  return cmdline.split('\0').includes(service.dataDir);
}

export function startService(spec: ServiceSpec, env: NodeJS.ProcessEnv): number {
  mkdirSync(dirname(spec.logFile), { recursive: true, mode: 0o700 });
  mkdirSync(spec.dataDir, { recursive: true, mode: 0o700 });
  const log = openSync(spec.logFile, 'a', 0o600);
  try {
    const child = spawn(process.execPath, spec.argv as string[], { detached: true, stdio: ['ignore', log, log], env });
    if (child.pid === undefined) throw new Error(`could not start ${spec.name}`);
    child.unref();
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/** SIGTERM, then SIGKILL after the timeout; resolves once the process is gone. */
export async function stopService(service: Pick<ServiceState, 'pid' | 'dataDir'>, timeoutMs = STOP_TIMEOUT_MS): Promise<'stopped' | 'killed' | 'gone'> {
  if (!isOurProcess(service)) return 'gone';
  process.kill(service.pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isOurProcess(service)) return 'stopped';
    await sleep(STOP_POLL_MS);
  }
  if (isOurProcess(service)) process.kill(service.pid, 'SIGKILL');
  while (isOurProcess(service)) await sleep(STOP_POLL_MS);
  return 'killed';
}

/**
 * Waits (bounded) until a dead process is reaped. A killed process lingers as a zombie until its
 * parent, here init, reaps it (about 2 s in this VM); a node refuses a data dir whose lock names a
 * pid that still exists, so its replacement starts only after that.
 */
export async function waitReaped(pid: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid) && Date.now() < deadline) await sleep(STOP_POLL_MS);
}

/** True when nothing listens on the loopback port (checked by binding it for a moment). */
export function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
