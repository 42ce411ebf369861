/** Shared by the deploy-target tests: loopback cluster descriptions, processes, health polling. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../helpers/cluster.js';
import { MAIN, tempDir } from '../helpers/node-process.js';

export { MAIN, REPO, tempDir } from '../helpers/node-process.js';

/** A description of `n` nodes on 127.0.0.1, each with its own free ports and temp data dir. */
export async function loopbackDescription(n: number, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const dir = tempDir('blobstore-hosts-');
  const nodes = [];
  for (let i = 0; i < n; i++) {
    nodes.push({
      id: `node-${i + 1}`, host: '127.0.0.1', bind: '127.0.0.1', region: 'us-east-1', dataDir: join(dir, `node-${i + 1}`),
      ports: { api: await freePort(), grpc: await freePort(), metrics: await freePort() },
    });
  }
  return { name: 'local', command: [process.execPath, MAIN], settings: { heartbeatIntervalMs: '200ms' }, nodes, ...extra };
}

export function writeDescription(description: unknown): string {
  const file = join(tempDir('blobstore-cluster-file-'), 'cluster.json');
  writeFileSync(file, JSON.stringify(description, null, 2));
  return file;
}

/** `blobstore` with arguments, to its end, with no BLOBSTORE_* settings of ours leaking in. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BLOBSTORE_')));
  const home = tempDir('blobstore-home-');
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    env: { ...clean, HOME: home, XDG_CONFIG_HOME: join(home, 'config'), XDG_STATE_HOME: join(home, 'state'), ...env }, encoding: 'utf8', timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The status of GET url, or 0 when nothing answers. */
export async function statusOf(url: string): Promise<number> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** Every URL's /healthz answers 200. */
export const allHealthy = async (urls: readonly string[]): Promise<boolean> =>
  (await Promise.all(urls.map((u) => statusOf(`${u}/healthz`)))).every((s) => s === 200);

/** The active members a node reports (GET /v1/cluster/state), sorted; [] while it cannot say. */
export async function membersSeenBy(url: string): Promise<string[]> {
  try {
    const res = await fetch(`${url}/v1/cluster/state`, { signal: AbortSignal.timeout(2000) });
    const state = (await res.json()) as { nodes?: { node_id: string; state: string }[] };
    return (state.nodes ?? []).filter((n) => n.state === 'active').map((n) => n.node_id).sort();
  } catch {
    return [];
  }
}

/** Every node reports exactly `ids` as its active members: one cluster. */
export async function oneCluster(urls: readonly string[], ids: readonly string[]): Promise<boolean> {
  const views = await Promise.all(urls.map(membersSeenBy));
  return views.every((v) => v.join(',') === [...ids].sort().join(','));
}

/** A process started as a unit would start it; its output kept for failure messages. */
export interface Started {
  readonly child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export function startProcess(argv: readonly string[], env: Record<string, string>): Started {
  const child = spawn(argv[0]!, argv.slice(1), { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  child.channel?.unref();
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
