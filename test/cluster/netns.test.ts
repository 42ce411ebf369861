/**
 * Three nodes as separate hosts: each in its own network namespace with its own address from
 * 198.18.0.0/15 on a bridge the test creates (and removes), all on the default API and gRPC
 * ports. A partition is a node's link taken down: the others see it offline and keep taking
 * stores, whose copies for it wait; once the link is back it is active again, catches up, and
 * every acknowledged blob reads back byte-exact from every node. Reachable beyond loopback, the
 * nodes share a cluster secret, and nobody without it changes their membership. Skipped (with the reason) where
 * namespaces cannot be made.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, failure, unary } from '../grpc/helpers.js';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { copiesOf, expectReadableEverywhere, OFFLINE_MS, TestCluster } from '../helpers/cluster.js';
import { type Hosts, makeHosts } from '../helpers/netns.js';
import { startNode } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';

const hosts = makeHosts(3);
const skip = typeof hosts === 'string' ? hosts : '';

describe.skipIf(skip !== '')(`a 3-node cluster of separate hosts (network namespaces)${skip ? ` - skipped: ${skip}` : ''}`, () => {
  const h = hosts as Hosts;
  let c: TestCluster;
  const acked = new Map<string, Buffer>();
  beforeAll(async () => {
    // Nodes reachable beyond loopback take a cluster secret (src/auth/cluster-secret.ts).
    c = await TestCluster.start({
      size: 3, host: (i) => h.address(i), port: () => 8080, grpcDefault: true, wrap: (i) => ['ip', 'netns', 'exec', h.ns(i)],
      args: ['--cluster-secret', 'netns-test-cluster-secret-0123456789'],
    });
  });
  afterAll(async () => {
    for (let i = 0; i < 3; i++) h.heal?.(i);
    await c?.stopAll();
    h.teardown?.();
  });

  it('forms one cluster: each node at its own address on the default ports', async () => {
    const state = await c.converged({ members: c.ids });
    for (const [i, id] of c.ids.entries()) {
      const n = state.nodes.find((x) => x.node_id === id)!;
      expect(n.address).toBe(`${h.address(i)}:8080`);
      expect(n.grpc_address).toBe(`${h.address(i)}:50051`);
    }
  });

  it('a second node on a host takes a free gRPC port when the default is taken, and says so in its JSON log alone', async () => {
    const node = await startNode({
      host: h.address(0), wrap: ['ip', 'netns', 'exec', h.ns(0)], grpcUnset: true,
      args: ['--listen', `${h.address(0)}:8081`, '--node-id', 'second-on-host', '--cluster-secret', 'netns-test-cluster-secret-0123456789'],
    });
    try {
      await waitFor(() => /default gRPC port is taken/.test(node.output()), { what: 'the free-port line', timeoutMs: 10_000 });
      const lines = node.output().split('\n').filter((l) => l.trim() !== '');
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    } finally {
      await node.stop();
    }
  });

  it('without the cluster secret nobody changes the membership, over HTTP or gRPC; the state reads', async () => {
    const secret = 'netns-test-cluster-secret-0123456789';
    const join = { node_id: 'intruder', address: '198.18.0.200:8080', capacity_bytes: 1e12, grpc_address: '198.18.0.200:50051' };
    const posts: [string, unknown][] = [
      ['join', join], ['leave', { node_id: 'node-3', graceful: false }], ['heartbeat', { node_id: 'intruder', ring_version: 1 }],
      ['sync-ring', { ring_version: 1 }], ['repair', { bytes_per_second: 1, seconds: 1 }], ['bootstrap', { node_id: 'intruder', address: join.address }],
    ];
    for (const [route, body] of posts) {
      for (const headers of [{}, { 'x-blobstore-cluster-secret': 'not-the-cluster-secret-0123456789' }] as Record<string, string>[]) {
        const res = await fetch(`${c.url(0)}/v1/cluster/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
        expect(res.status, route).toBe(401);
        expect(await res.json()).toMatchObject({ code: 401 });
      }
    }
    const cluster = client('ClusterService', `${h.address(0)}:50051`);
    try {
      for (const [method, request] of [['Join', join], ['Leave', { node_id: 'node-3' }], ['Heartbeat', { node_id: 'intruder' }]] as const) {
        expect((await failure(unary(cluster, method, request))).code, method).toBe(grpc.status.UNAUTHENTICATED);
      }
      // The state is as open as the blob API (no tokens here); a peer's secret opens the rest.
      expect((await unary<{ nodes: unknown[] }>(cluster, 'GetState', {})).nodes).toHaveLength(3);
      const md = new grpc.Metadata();
      md.set('x-blobstore-cluster-secret', secret);
      // Past the gate with it: this heartbeat is only refused for what it lacks (a node id).
      expect(await failure(unary(cluster, 'Heartbeat', { used_bytes: 1 }, { metadata: md }))).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    } finally {
      cluster.close();
    }
    expect((await fetch(`${c.url(1)}/v1/cluster/state`)).status).toBe(200);
    const state = await c.converged({ members: c.ids });
    expect(state.nodes.map((n) => n.node_id)).not.toContain('intruder');
  });

  it('a partitioned node is offline on the others; stores go on; once healed it catches up and all agree', async () => {
    for (let i = 0; i < 10; i++) {
      const bytes = patternBytes(3000 + i, 600 + i);
      const res = await putRaw(c.url(i % 3), bytes, { 'X-Blobstore-Policy': '3' });
      acked.set(((await res.json()) as { id: string }).id, bytes);
    }
    // A store is acknowledged once durable on the node that took it; its copies follow. Cut only
    // once they are everywhere: a blob whose only copy is behind the cut is unreadable until the heal.
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return [...acked.keys()].every((id) => holders.get(id)?.length === 3);
    }, { what: 'three copies of every blob before the cut', timeoutMs: 30_000 });
    h.cut(2);
    try {
      await c.converged({ among: [0, 1], states: { 'node-3': 'offline' }, timeoutMs: OFFLINE_MS + 15_000 });
      for (let i = 0; i < 20; i++) {
        const bytes = patternBytes(4000 + i, 700 + i);
        const res = await putRaw(c.url(i % 2), bytes, { 'X-Blobstore-Policy': '3' });
        expect(res.status).toBe(201);
        acked.set(((await res.json()) as { id: string }).id, bytes);
      }
      await expectReadableEverywhere(c, acked, [0, 1]);
    } finally {
      h.heal(2);
    }
    await c.converged({ members: c.ids, states: { 'node-1': 'active', 'node-2': 'active', 'node-3': 'active' }, timeoutMs: 20_000 });
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return [...acked.keys()].every((id) => holders.get(id)?.length === 3);
    }, { what: 'three copies of every blob, the partitioned node included', timeoutMs: 30_000 });
    await expectReadableEverywhere(c, acked);
  });
});
