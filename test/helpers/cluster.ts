/**
 * Real clusters for tests: N `blobstore serve` processes, each with its own data dir and a fixed
 * API port (so a restarted node comes back at the same address): started together, each names the
 * others as SeedNodes; one by one, each names the first. Fast heartbeats and a short offline timeout keep scenarios short; every
 * node can be killed (SIGKILL), stopped (SIGTERM), frozen (SIGSTOP/SIGCONT) and restarted.
 * Invariant checks: every node agrees on the member list and ring version; every acknowledged
 * blob reads back byte-exact from every node.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { putRaw } from './blobs.js';
import { type NodeProcess, startNode, tempDir } from './node-process.js';
import { waitFor } from './wait.js';
import { freePort } from '../../bench/node/ports.js';

export { freePort };

export const HEARTBEAT_MS = 200;

/**
 * EC shards small enough that a test's blobs of a few MiB stream their columns as they arrive
 * (ecStreamMinBytes 2 MiB; shards of 256 KiB above 2 MiB, 64 KiB below), and blobs over 128 KiB
 * in files of their own.
 */
export const STREAMED_EC_ARGS: readonly string[] = [
  '--ec-shard-bytes', String(64 * 1024), '--ec-large-blob-bytes', String(2 << 20), '--ec-large-shard-bytes', String(256 * 1024), '--ec-stream-min-bytes', String(2 << 20),
  '--small-blob-max-bytes', String(128 * 1024),
];
export const OFFLINE_MS = 1500;

/**
 * How long converged() waits by default: past the bootstrap's wait for every seed (bootstrapWaitMs,
 * 30 s), after which a majority founds the cluster. Under a loaded machine a round's probes (500 ms
 * deadlines at these heartbeats) can miss some seed round after round, and nodes started together
 * then form their cluster only through that fallback.
 */
const CONVERGE_MS = 45_000;

export interface ClusterOptions {
  size: number;
  /** Extra arguments for every node. */
  args?: string[];
  /** Per node: the host it listens on (netns tests), its API port, and the command it runs under. */
  host?: (i: number) => string;
  port?: (i: number) => number;
  wrap?: (i: number) => string[];
  /** Node i's extra arguments (a region, say; a file of a node started before it). */
  nodeArgs?: (i: number, c: TestCluster) => string[];
  /** Start the nodes one by one (each joins the first), or all at once. */
  together?: boolean;
  /** How many of the nodes start now (the first ones; default all): the others are added later with startNode. */
  startNow?: number;
  /**
   * Node i's SeedNodes. `'peers'`: every node names the others, as a user following the spec
   * starts them (the default when the nodes start together); `'first'`: node 0 has none (it forms
   * the cluster) and the others name it, as nodes added one by one to a running cluster are (the
   * default otherwise).
   */
  seeds?: 'peers' | 'first' | ((i: number, c: TestCluster) => string[]);
  /** `https` for nodes started with a certificate (the test's fetch must trust their CA). */
  scheme?: 'http' | 'https';
  /** No GrpcAddr given, as a user starts a node (separate hosts: the default port 50051 on the node's host, no clash). */
  grpcDefault?: boolean;
}

export interface NodeState {
  ring_version: number;
  nodes: { node_id: string; address: string; state: string; used_bytes: number; blob_count: number; grpc_address: string }[];
}

const seedArgs = (seeds: string[]): string[] => (seeds.length === 0 ? [] : ['--seed-nodes', seeds.join(',')]);

export class TestCluster {
  readonly nodes: (NodeProcess | undefined)[] = [];
  readonly dataDirs: string[] = [];
  readonly ports: number[] = [];
  readonly ids: string[] = [];

  private constructor(private readonly options: ClusterOptions) {}

  static async start(options: ClusterOptions): Promise<TestCluster> {
    const c = new TestCluster(options);
    for (let i = 0; i < options.size; i++) {
      c.ports.push(options.port?.(i) ?? (await freePort(options.host?.(i) ?? '127.0.0.1')));
      c.dataDirs.push(tempDir('blobstore-cluster-'));
      c.ids.push(`node-${i + 1}`);
    }
    const now = options.startNow ?? options.size;
    if (options.together) await Promise.all(c.ids.slice(0, now).map((_, i) => c.startNode(i)));
    else for (let i = 0; i < now; i++) await c.startNode(i);
    return c;
  }

  host(i: number): string {
    return this.options.host?.(i) ?? '127.0.0.1';
  }

  url(i: number): string {
    return `${this.options.scheme ?? 'http'}://${this.host(i)}:${this.ports[i]}`;
  }

  /**
   * Starts (or restarts) node i on its data dir and port; node 0 is the seed of the others. A
   * first start whose port another process took meanwhile (a node's gRPC listener on port 0, say)
   * tries a new free port.
   */
  async startNode(i: number, extraArgs: string[] = []): Promise<NodeProcess> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.startOnce(i, extraArgs);
      } catch (err) {
        const taken = /cannot listen on/.test((err as Error).message);
        if (!taken || i === 0 || this.options.port || this.started.has(i) || attempt === 2) throw err;
        this.ports[i] = await freePort(this.host(i));
      }
    }
  }

  /** Nodes started at least once (their port is theirs from then on: a restart keeps it). */
  private readonly started = new Set<number>();

  private async startOnce(i: number, extraArgs: string[]): Promise<NodeProcess> {
    const seeds = seedArgs(this.seedsOf(i));
    const node = await startNode({
      dataDir: this.dataDirs[i],
      host: this.host(i),
      wrap: this.options.wrap?.(i),
      grpcUnset: this.options.grpcDefault,
      args: [
        '--listen', `${this.host(i)}:${this.ports[i]}`, ...(this.options.grpcDefault ? [] : ['--grpc-addr', `${this.host(i)}:0`]), '--node-id', this.ids[i]!,
        '--heartbeat-interval-ms', String(HEARTBEAT_MS), '--offline-after-ms', String(OFFLINE_MS),
        ...seeds, ...(this.options.args ?? []), ...(this.options.nodeArgs?.(i, this) ?? []), ...extraArgs,
      ],
    });
    this.nodes[i] = node;
    this.started.add(i);
    return node;
  }

  /** Node i's SeedNodes (see ClusterOptions.seeds). */
  seedsOf(i: number): string[] {
    const seeds = this.options.seeds ?? (this.options.together ? 'peers' : 'first');
    if (seeds === 'peers') return this.ids.flatMap((_, j) => (j === i ? [] : [`${this.host(j)}:${this.ports[j]}`]));
    if (seeds !== 'first') return seeds(i, this);
    return i === 0 ? [] : [`${this.host(0)}:${this.ports[0]}`];
  }

  node(i: number): NodeProcess {
    const n = this.nodes[i];
    if (!n) throw new Error(`node ${i} is not running`);
    return n;
  }

  live(): number[] {
    return this.nodes.flatMap((n, i) => (n ? [i] : []));
  }

  /** Waits until node i is ready (/healthz 200): a node with a fresh data dir once admitted. */
  async ready(i: number): Promise<void> {
    await waitFor(async () => (await fetch(`${this.url(i)}/healthz`).catch(() => undefined))?.status === 200, { what: `${this.ids[i]} ready` });
  }

  async kill(i: number): Promise<void> {
    await this.nodes[i]?.kill();
    this.nodes[i] = undefined;
  }

  async stop(i: number): Promise<void> {
    await this.nodes[i]?.stop();
    this.nodes[i] = undefined;
  }

  freeze(i: number): void {
    this.node(i).child.kill('SIGSTOP');
  }

  thaw(i: number): void {
    this.node(i).child.kill('SIGCONT');
  }

  async state(i: number): Promise<NodeState> {
    const res = await fetch(`${this.url(i)}/v1/cluster/state`, { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(200);
    return (await res.json()) as NodeState;
  }

  /**
   * Waits until every live node (or `among`) reports the same ring version and the same members
   * in the same states, with `expect` (node ids) as the members when given; returns that state.
   */
  async converged(options: { among?: number[]; members?: string[]; timeoutMs?: number; pollMs?: number; states?: Record<string, string> } = {}): Promise<NodeState> {
    const among = options.among ?? this.live();
    let agreed: NodeState | undefined;
    let last = '';
    await waitFor(async () => {
      const states = await Promise.all(among.map((i) => this.state(i).catch((err: Error) => ({ error: err.message }) as unknown as NodeState)));
      // A node that did not answer shows why (its view then differs from every other).
      const views = states.map((s) => JSON.stringify('error' in s ? s : { v: s.ring_version, n: (s.nodes ?? []).map((n) => `${n.node_id}:${n.state}`).sort() }));
      const same = views.every((v) => v === views[0]);
      const members = (states[0]?.nodes ?? []).map((n) => n.node_id).sort();
      const wantMembers = !options.members || JSON.stringify(members) === JSON.stringify([...options.members].sort());
      const wantStates = !options.states || Object.entries(options.states).every(([id, st]) => states[0]?.nodes?.find((n) => n.node_id === id)?.state === st);
      last = views.join('\n  ');
      if (same && wantMembers && wantStates) agreed = states[0]!;
      return agreed !== undefined;
    }, { what: () => `agreement:\n  ${last}`, timeoutMs: options.timeoutMs ?? CONVERGE_MS, pollMs: options.pollMs ?? 100 });
    return agreed!;
  }

  /** Stops every node and removes the data dirs (a shared machine's /tmp fills up otherwise). */
  async stopAll(): Promise<void> {
    for (const i of this.live()) {
      try {
        this.thaw(i);
      } catch {
        // not frozen
      }
    }
    await Promise.all(this.live().map((i) => this.stop(i)));
    for (const dir of this.dataDirs) rmSync(dir, { recursive: true, force: true });
  }
}

/** How `got` differs from `want`: lengths, framing, and the first byte that differs. */
function differs(got: Buffer, want: Buffer, headers: Headers): string {
  let at = 0;
  while (at < Math.min(got.length, want.length) && got[at] === want[at]) at++;
  const framing = headers.get('content-length') !== null ? `content-length ${headers.get('content-length')}` : `transfer-encoding ${headers.get('transfer-encoding')}`;
  return `${got.length} bytes of ${want.length} (${framing}), the first to differ at ${at}`;
}

/** Every blob reads back byte-exact from every node in `among` (default: all live nodes). */
export async function expectReadableEverywhere(c: TestCluster, blobs: ReadonlyMap<string, Buffer>, among = c.live()): Promise<void> {
  for (const i of among) {
    for (const [id, bytes] of blobs) {
      const res = await fetch(`${c.url(i)}/v1/blobs/${id}`, { signal: AbortSignal.timeout(15_000) });
      const got = Buffer.from(await res.arrayBuffer());
      expect(res.status, `GET ${id} from ${c.ids[i]}: ${res.status === 200 ? '' : got.toString('utf8', 0, 300)}`).toBe(200);
      if (!got.equals(bytes)) expect.fail(`bytes of ${id} from ${c.ids[i]}: ${differs(got, bytes, res.headers)}`);
    }
  }
}

/** The nodes that hold a local copy of each blob (by listing each node's ids). */
export async function copiesOf(c: TestCluster, among = c.live()): Promise<Map<string, string[]>> {
  const holders = new Map<string, string[]>();
  for (const i of among) {
    let cursor = '';
    for (;;) {
      const page = (await (await fetch(`${c.url(i)}/v1/blobs?limit=10000${cursor ? `&cursor=${cursor}` : ''}`)).json()) as { ids: string[]; has_more: boolean; next_cursor?: string };
      for (const id of page.ids) holders.set(id, [...(holders.get(id) ?? []), c.ids[i]!]);
      if (!page.has_more) break;
      cursor = page.next_cursor!;
    }
  }
  return holders;
}

const BIG_CLUSTER_LOCK = join(tmpdir(), 'blobstore-test-big-cluster.lock');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * For a test file that starts clusters of six or more nodes: it runs while no other such file
 * does (a lock file beside the others' temp dirs), so that two of them never share the machine.
 * Two of them at once on a machine half as fast (17 nodes on one core's worth of CPU) made EC
 * reads and repairs miss their deadlines; with one at a time they pass. Call at the top of the file.
 */
export function oneBigClusterAtATime(): void {
  let held = false;
  const release = (): void => {
    if (held) rmSync(BIG_CLUSTER_LOCK, { force: true });
    held = false;
  };
  beforeAll(async () => {
    const take = (): boolean => {
      try {
        writeFileSync(BIG_CLUSTER_LOCK, String(process.pid), { flag: 'wx' });
        held = true;
        process.once('exit', release);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      // A holder that died (a killed worker, an earlier run) leaves its lock behind.
      const holder = Number(readFileSync(BIG_CLUSTER_LOCK, 'utf8').trim() || 0);
      if (holder > 0 && !alive(holder)) rmSync(BIG_CLUSTER_LOCK, { force: true });
      return false;
    };
    await waitFor(take, { what: `the big-cluster lock ${BIG_CLUSTER_LOCK}`, timeoutMs: 30 * 60_000, pollMs: 250 });
  }, 30 * 60_000);
  afterAll(release);
}

/**
 * Stores `bytes` at node `at` of a cluster whose nodes are all up. A 412 (too few nodes online for
 * the policy) is asked again until the node sees them all: on a loaded machine a node's heartbeats
 * can lag past the offline timeout for a moment, and the node refuses then, as it must; a client
 * retries.
 */
export async function putWithNodesUp(c: TestCluster, at: number, bytes: Buffer, headers: Record<string, string>): Promise<Response> {
  let res = await putRaw(c.url(at), bytes, headers);
  if (res.status === 412) {
    await waitFor(async () => {
      res = await putRaw(c.url(at), bytes, headers);
      return res.status !== 412;
    }, { what: () => `a store at ${c.ids[at]} past its 412 (too few nodes online)`, timeoutMs: 20_000, pollMs: 200 });
  }
  return res;
}
