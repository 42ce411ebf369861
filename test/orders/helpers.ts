import { afterAll, beforeAll } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const BIN = join(ROOT, 'dist/src/main.js');

export interface OrdersProcess {
  readonly url: string;
  readonly dataDir: string;
  readonly proc: ChildProcess;
  /** SIGTERM (or the given signal) and wait for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `blobstore-${prefix}-`));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Starts `blobstore orders serve` on a free loopback port (port 0) and waits for its banner. */
export async function startOrders(options: { dataDir?: string; args?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<OrdersProcess> {
  const dataDir = options.dataDir ?? tempDir('orders');
  const home = tempDir('home');
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), BLOBSTORE_CONFIG: '', ...options.env };
  const proc = spawn(process.execPath, [BIN, 'orders', 'serve', '--orders-addr', '127.0.0.1:0', '--orders-data-dir', dataDir, ...(options.args ?? [])], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    exited.then(() => removeDir(home), () => undefined);
    let out = '';
    let err = '';
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    void exited.then((code) => reject(new Error(`orders exited (${code}) before listening: ${out}${err}`)));
    setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`orders did not start in time: ${out} ${err}`));
    }, 15_000).unref();
  });
  return {
    url,
    dataDir,
    proc,
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: any;
}

/** One request; `body` as a string is sent with the given content type (JSON by default). */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { body?: string | Uint8Array; contentType?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  let body: Uint8Array | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? Buffer.from(options.body) : options.body;
    const type = options.contentType === undefined ? 'application/json' : options.contentType;
    if (type !== null) headers['content-type'] = type;
  }
  const res = await fetch(base + path, { method, headers, body, redirect: 'manual' });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Starts one orders service for the file's tests (beforeAll) and stops it, data removed (afterAll). */
export function useOrdersService(): () => OrdersProcess {
  let svc: OrdersProcess | undefined;
  beforeAll(async () => {
    svc = await startOrders();
  });
  afterAll(async () => {
    await svc?.stop();
    if (svc) removeDir(svc.dataDir);
  });
  return () => svc!;
}
