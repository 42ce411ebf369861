/**
 * Local clusters for the cluster benches: N `blobstore serve` processes on loopback, each with its
 * own data dir, started at once with the others as SeedNodes; waits until every node lists all N
 * as active. Shares bench/node/lib.ts's process handling (every child is stopped at exit).
 */
import { join } from 'node:path';
import { CLI, freePort, log, type RunningProcess, sleep, startProcess } from '../node/lib.js';

export interface BenchCluster {
  nodes: RunningProcess[];
  ports: number[];
  dirs: string[];
  url(i: number): string;
  stop(): Promise<void>;
}

export interface ClusterState {
  ring_version: number;
  nodes: { node_id: string; state: string }[];
}

export async function clusterState(port: number): Promise<ClusterState> {
  return (await (await fetch(`http://127.0.0.1:${port}/v1/cluster/state`)).json()) as ClusterState;
}

/** Resolves once the nodes on `ports` agree on `count` active members and one ring version. */
export async function waitAgreed(ports: readonly number[], count: number, timeoutMs = 60_000, pollMs = 20): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(ports.map((p) => clusterState(p).catch(() => undefined)));
    const views = states.map((s) => (s ? `${s.ring_version}:${s.nodes.filter((n) => n.state === 'active').map((n) => n.node_id).sort().join(',')}` : 'down'));
    if (views.every((v) => v === views[0]) && states[0]?.nodes.filter((n) => n.state === 'active').length === count) return;
    if (performance.now() > deadline) throw new Error(`cluster did not agree within ${timeoutMs} ms: ${views.join(' | ')}`);
    await sleep(pollMs);
  }
}

/** Starts a cluster node that names `seedPorts` (on loopback) as its SeedNodes; waits for /healthz 200 (admitted). */
export async function startClusterNode(dir: string, id: string, port: number, seedPorts: readonly number[], flags: string[] = []): Promise<RunningProcess> {
  const seeds = seedPorts.map((p) => `127.0.0.1:${p}`).join(',');
  return startProcess(
    [CLI, 'serve', '--data-dir', dir, '--listen', `127.0.0.1:${port}`, '--node-id', id, '--metrics-addr', '', '--grpc-addr', '127.0.0.1:0',
      ...(seeds === '' ? [] : ['--seed-nodes', seeds]), '--log-level', 'warn', ...flags],
    port,
    { env: { BLOBSTORE_CONFIG: '/nonexistent/blobstore-bench.json' } },
  );
}

/** Starts `n` nodes at once, each naming the others as its SeedNodes (as a user following the spec starts them). */
export async function startCluster(n: number, baseDir: string, flags: string[] = []): Promise<BenchCluster> {
  const ports: number[] = [];
  const dirs: string[] = [];
  for (let i = 0; i < n; i++) {
    ports.push(await freePort());
    dirs.push(join(baseDir, `n${i + 1}`));
  }
  const nodes = await Promise.all(ports.map((port, i) => startClusterNode(dirs[i]!, `node-${i + 1}`, port, ports.filter((p) => p !== port), flags)));
  await waitAgreed(ports, n);
  log(`cluster of ${n} nodes up on ports ${ports.join(', ')}`);
  return {
    nodes, ports, dirs,
    url: (i) => `http://127.0.0.1:${ports[i]}`,
    stop: async () => {
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
}

/** Which nodes list `id` locally (the list route answers from the local index only). */
export async function holders(c: BenchCluster, id: string): Promise<number> {
  let count = 0;
  for (const port of c.ports) {
    const page = (await (await fetch(`http://127.0.0.1:${port}/v1/blobs?prefix=${id}&limit=1`)).json()) as { ids: string[] };
    if (page.ids.includes(id)) count++;
  }
  return count;
}
