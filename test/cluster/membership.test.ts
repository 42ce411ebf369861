/**
 * Membership with real node processes on loopback: nodes started with SeedNodes join by
 * themselves and agree on one member list and ring version; the states table (join, heartbeat of
 * an unknown node, offline and back, immediate leave); restarts keep the membership; a node that
 * has not joined yet is not ready and answers 503 rather than as a node alone.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { freePort, OFFLINE_MS, TestCluster } from '../helpers/cluster.js';
import { type LogLine, logLines } from '../helpers/log.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { grpcPortOf } from '../grpc/helpers.js';

/** A heartbeat a member answered (over gRPC, or the HTTP route a peer falls back to). */
const answeredHeartbeat = (l: LogLine): boolean =>
  (l.access === 'grpc' && l.method === 'ClusterService.Heartbeat' && l.status === 0) || (l.access === 'http' && l.route === '/v1/cluster/heartbeat' && l.status === 200);

describe('a 3-node cluster on loopback', () => {
  let c: TestCluster;
  beforeAll(async () => {
    // An access line for every request: the heartbeats a node answered count its peers' rounds.
    c = await TestCluster.start({ size: 3, args: ['--access-log-every', '1'] });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('nodes started with SeedNodes join by themselves: every node lists all three as active, one ring version', async () => {
    const state = await c.converged({ members: c.ids });
    expect(state.nodes.map((n) => n.state)).toEqual(['active', 'active', 'active']);
    expect(state.ring_version).toBeGreaterThan(0);
    // Each node announces where peers reach its gRPC services, and its own API address.
    for (const [i, id] of c.ids.entries()) {
      const n = state.nodes.find((x) => x.node_id === id)!;
      expect(n.address).toBe(`127.0.0.1:${c.ports[i]}`);
      expect(n.grpc_address).toMatch(/^127\.0\.0\.1:\d+$/);
    }
  });

  it('answers a heartbeat from an unknown node with 404, ok false and commands ["rejoin"]', async () => {
    const res = await fetch(`${c.url(1)}/v1/cluster/heartbeat`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ node_id: 'ghost', used_bytes: 0, blob_count: 0, ring_version: 1 }),
    });
    expect(res.status).toBe(404);
    const body = (await res.json()) as { ok: boolean; commands: string[]; code: number; message: string };
    expect(body).toMatchObject({ ok: false, commands: ['rejoin'], code: 404 });
    expect(body.message).toMatch(/ghost/);
  });

  it('a heartbeat from a member answers ok with the ring version, and the nodes when the caller is behind', async () => {
    const state = await c.state(0);
    const post = (ringVersion: number): Promise<Response> => fetch(`${c.url(0)}/v1/cluster/heartbeat`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ node_id: 'node-2', used_bytes: 10, blob_count: 1, ring_version: ringVersion }),
    });
    const current = (await (await post(state.ring_version)).json()) as { ok: boolean; ring_version: number; nodes: unknown[] };
    expect(current).toMatchObject({ ok: true, ring_version: state.ring_version, nodes: [] });
    const behind = (await (await post(0)).json()) as { ok: boolean; nodes: { node_id: string }[] };
    expect(behind.nodes.map((n) => n.node_id).sort()).toEqual(c.ids);
  });

  it('refuses a join or heartbeat with values out of their range: 400, nothing joins', async () => {
    const post = (path: string, body: object): Promise<Response> => fetch(`${c.url(0)}/v1/cluster/${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    for (const address of ['127.0.0.1:99999', '127.0.0.1:0']) {
      const res = await post('join', { node_id: 'bad-port', address, capacity_bytes: 1000 });
      expect(res.status, address).toBe(400);
      expect(((await res.json()) as { message: string }).message).toMatch(/port/);
    }
    expect((await post('join', { node_id: 'bad-capacity', address: '127.0.0.1:4000', capacity_bytes: -1 })).status).toBe(400);
    for (const field of ['used_bytes', 'blob_count']) {
      const res = await post('heartbeat', { node_id: 'node-2', used_bytes: 0, blob_count: 0, ring_version: 1, [field]: -1 });
      expect(res.status, field).toBe(400);
    }
    expect((await c.state(0)).nodes.map((n) => n.node_id)).toEqual(c.ids);
  });

  it('sync-ring answers the ring: version, node ids and vnodes per node', async () => {
    const res = await fetch(`${c.url(2)}/v1/cluster/sync-ring`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ring_version":0}' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ring_version: number; node_ids: string[]; vnodes_per_node: number };
    expect(body.node_ids).toEqual(c.ids);
    expect(body.vnodes_per_node).toBe(128);
    expect(body.ring_version).toBe((await c.state(2)).ring_version);
  });

  it('a frozen node (SIGSTOP) goes offline on the others, and active again when it runs (SIGCONT)', async () => {
    c.freeze(2);
    try {
      await c.converged({ among: [0, 1], states: { 'node-3': 'offline' }, timeoutMs: OFFLINE_MS + 10_000 });
    } finally {
      c.thaw(2);
    }
    const state = await c.converged({ states: { 'node-3': 'active' }, timeoutMs: 10_000 });
    expect(state.nodes.every((n) => n.state === 'active')).toBe(true);
  });

  it('restarting every node keeps the membership: same members, same ring version, all active', async () => {
    const before = await c.converged();
    for (let i = 0; i < 3; i++) {
      await c.stop(i);
      await c.startNode(i);
    }
    const after = await c.converged({ members: c.ids, states: { 'node-1': 'active', 'node-2': 'active', 'node-3': 'active' } });
    expect(after.ring_version).toBeGreaterThanOrEqual(before.ring_version);
    expect(after.nodes.map((n) => n.node_id).sort()).toEqual(c.ids);
  });

  it('a whole cluster stopped and started again finds itself, every gRPC listener on a new port', async () => {
    const grpcBefore = new Set((await c.converged()).nodes.map((n) => n.grpc_address));
    for (let i = 0; i < 3; i++) await c.stop(i);
    await Promise.all([0, 1, 2].map((i) => c.startNode(i)));
    // Members agree on the members and their states first; a node's new gRPC address reaches the
    // others with its next heartbeat.
    let kept: string[] = [];
    await waitFor(async () => {
      await c.converged({ members: c.ids, states: { 'node-1': 'active', 'node-2': 'active', 'node-3': 'active' } });
      const views = await Promise.all(c.live().map((i) => c.state(i)));
      kept = views.flatMap((v, i) => v.nodes.filter((n) => grpcBefore.has(n.grpc_address)).map((n) => `${c.ids[i]} knows ${n.node_id} at ${n.grpc_address}`));
      return kept.length === 0;
    }, { what: () => `every gRPC listener on a new port, known to every node (kept: ${kept.join(', ')})` });
  });

  it('an immediate leave removes the node everywhere; the removed node stays out and knows it', async () => {
    const before = await c.converged();
    const res = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"node_id":"node-3","graceful":false}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ acknowledged: true });
    const after = await c.converged({ among: [0, 1], members: ['node-1', 'node-2'] });
    expect(after.ring_version).toBeGreaterThan(before.ring_version);
    // node-3 heard of its removal and does not come back by itself: it says so, and five heartbeat
    // rounds later (node-1 and node-2 have each answered five more of the other's) it is still out.
    await waitFor(() => c.node(2).output().includes('this node is removed from the cluster'), { what: 'node-3 knows it was removed' });
    const answered = (i: number): number => logLines(c.node(i).output()).filter(answeredHeartbeat).length;
    const [first, second] = [answered(0), answered(1)];
    await waitFor(() => answered(0) >= first + 5 && answered(1) >= second + 5, { what: 'five more heartbeat rounds of node-1 and node-2' });
    const own = await c.state(2);
    expect(own.nodes.map((n) => n.node_id)).not.toContain('node-3');
    const still = await c.converged({ among: [0, 1], members: ['node-1', 'node-2'] });
    expect(still.ring_version).toBe(after.ring_version);
    // Out of the ring, it is not ready and takes no store (none would reach an owner), restarted or not.
    const refusesWork = async (): Promise<void> => {
      expect((await fetch(`${c.url(2)}/healthz`)).status).toBe(503);
      const put = await putRaw(c.url(2), patternBytes(1000, 3), { 'X-Blobstore-Policy': '3' });
      expect(put.status).toBe(503);
      expect(put.headers.get('retry-after')).toBe('1');
      expect(((await put.json()) as { message: string }).message).toMatch(/not a member of its cluster now/);
    };
    await refusesWork();
    await c.stop(2);
    await c.startNode(2, ['--metrics-addr', 'same']);
    await waitFor(() => c.node(2).output().includes('this node was removed from the cluster'), { what: 'node-3 restarted knows it is out' });
    await refusesWork();
    // Its metrics add up, also once it hears nobody (the members frozen): the members it last
    // knew, all offline to it, none active.
    type Counts = { nodesTotal: number; nodesActive: number; nodesOffline: number };
    const counts = async (): Promise<Counts> => ((await (await fetch(`${c.url(2)}/api/v1/metrics`)).json()) as { cluster: Counts }).cluster;
    c.freeze(0);
    c.freeze(1);
    try {
      await waitFor(async () => (await counts()).nodesOffline === 2, { what: 'node-3 sees the frozen members offline', timeoutMs: 30_000 });
      expect(await counts()).toEqual(expect.objectContaining({ nodesTotal: 2, nodesActive: 0, nodesOffline: 2 }));
    } finally {
      c.thaw(0);
      c.thaw(1);
    }
    await c.converged({ among: [0, 1], members: ['node-1', 'node-2'] });
  });

  it('a graceful leave of a member that is offline answers 412 (it could never hand its data over); a removal takes it out', async () => {
    const post = (path: string, body: object): Promise<Response> => fetch(`${c.url(0)}/v1/cluster/${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    // Admitted, but never started: never heard from (it shows active until offlineAfterMs passed).
    expect((await post('join', { node_id: 'ghost-member', address: '127.0.0.1:9', capacity_bytes: 1000 })).status).toBe(200);
    const refused = await post('leave', { node_id: 'ghost-member', graceful: true });
    expect(refused.status).toBe(412);
    expect(((await refused.json()) as { message: string }).message).toMatch(/offline.*graceful false/);
    // Not marked leaving: it stays a member until removed.
    expect((await c.state(0)).nodes.find((n) => n.node_id === 'ghost-member')?.state).not.toBe('leaving');
    expect(await (await post('leave', { node_id: 'ghost-member', graceful: false })).json()).toEqual({ acknowledged: true });
    await waitFor(async () => (await c.state(0)).nodes.every((n) => n.node_id !== 'ghost-member'), { what: 'ghost-member gone' });
  });

  it('a leave of a node that is not a member answers 404', async () => {
    const res = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"node_id":"nobody"}' });
    expect(res.status).toBe(404);
  });

  it('a join admits (or admits again) a node: accepted, the ring version, and every member in nodes', async () => {
    const res = await fetch(`${c.url(1)}/v1/cluster/join`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      // The gRPC address node-3 listens on now (it was restarted on a new one while removed).
      body: JSON.stringify({ node_id: 'node-3', address: `127.0.0.1:${c.ports[2]}`, grpc_address: `127.0.0.1:${grpcPortOf(c.node(2).output())}`, capacity_bytes: 1000 }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { accepted: boolean; ring_version: number; nodes: { node_id: string; state: string }[] };
    expect(body.accepted).toBe(true);
    expect(body.nodes.map((n) => n.node_id).sort()).toEqual(c.ids);
    // node-3 hears of its admission from the others' heartbeats and is a member again everywhere.
    await c.converged({ members: c.ids, states: { 'node-3': 'active' } });
    await waitFor(async () => (await fetch(`${c.url(2)}/healthz`)).status === 200, { what: 'node-3 ready again' });
  });
});

describe('cluster endpoints in variant A', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 2, args: ['--api-variant', 'a'] });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('writes int64 fields as strings and answers an unknown heartbeat with the gRPC code and rejoin', async () => {
    await c.converged({ members: c.ids });
    const state = (await (await fetch(`${c.url(0)}/v1/cluster/state`)).json()) as { ring_version: unknown; nodes: { capacity_bytes: unknown }[] };
    expect(typeof state.ring_version).toBe('string');
    expect(typeof state.nodes[0]!.capacity_bytes).toBe('string');
    const res = await fetch(`${c.url(1)}/v1/cluster/heartbeat`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ node_id: 'ghost', used_bytes: '0', blob_count: '0', ring_version: '1' }),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 5, ok: false, commands: ['rejoin'] });
  });
});

describe('nodes sharing a host, started with only --listen, --data-dir and SeedNodes', () => {
  const nodes: NodeProcess[] = [];
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    for (const n of nodes) rmSync(n.dataDir, { recursive: true, force: true });
  });

  it('form one cluster: distinct node ids, gRPC and metrics ports of their own, no port picked by hand', async () => {
    const ports = [await freePort(), await freePort(), await freePort()];
    const seeds = ports.map((p) => `127.0.0.1:${p}`).join(',');
    for (const port of ports) nodes.push(await startNode({ bare: true, args: ['--listen', `127.0.0.1:${port}`, '--seed-nodes', seeds, '--heartbeat-interval-ms', '200'] }));
    let state: { ring_version: number; nodes: { node_id: string; state: string; grpc_address: string }[] } | undefined;
    let views: string[] = [];
    await waitFor(async () => {
      const states = await Promise.all(nodes.map(async (n) => (await (await fetch(`${n.url}/v1/cluster/state`)).json()) as NonNullable<typeof state>));
      views = states.map((st) => JSON.stringify([st.ring_version, st.nodes.map((x) => `${x.node_id}:${x.state}`).sort()]));
      if (views.every((v) => v === views[0]) && states[0]!.nodes.length === 3 && states[0]!.nodes.every((x) => x.state === 'active')) state = states[0];
      return state !== undefined;
    }, { what: () => `agreement: ${views.join(' | ')}`, timeoutMs: 30_000, pollMs: 100 });
    expect(new Set(state!.nodes.map((n) => n.node_id)).size).toBe(3);
    expect(new Set(state!.nodes.map((n) => n.grpc_address)).size).toBe(3);
    // Each has a metrics listener: the first may hold the default port, the others a free one.
    const metricsPorts = nodes.map((n) => /metrics on http:\/\/[^\s"]*:(\d+)/.exec(n.output())?.[1]);
    expect(metricsPorts.every((p) => p !== undefined)).toBe(true);
    expect(new Set(metricsPorts).size).toBe(3);
  });
});

describe('a node that has not joined yet (fresh data dir, its seed down)', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 2 });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('is not ready and answers 503 (Retry-After), never 404 or a lone store, until it is admitted', async () => {
    const bytes = patternBytes(5000, 77);
    const put = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '1' });
    expect(put.status).toBe(201);
    const { id } = (await put.json()) as { id: string };
    await c.stop(0);
    await c.kill(1);
    rmSync(c.dataDirs[1]!, { recursive: true, force: true });
    await c.startNode(1);

    const healthz = await fetch(`${c.url(1)}/healthz`);
    expect(healthz.status).toBe(503);
    const get = await fetch(`${c.url(1)}/v1/blobs/${id}`);
    expect(get.status).toBe(503);
    expect(get.headers.get('retry-after')).toBe('1');
    expect(await get.json()).toMatchObject({ code: 503, message: expect.stringMatching(/not a member of its cluster now \(joining it/) });
    expect((await fetch(`${c.url(1)}/v1/blobs/${id}/stat`)).status).toBe(503);
    const lone = await putRaw(c.url(1), patternBytes(3000, 78), { 'X-Blobstore-Policy': '3' });
    expect(lone.status).toBe(503);
    expect((await (await fetch(`${c.url(1)}/v1/blobs`)).json()) as { ids: string[] }).toMatchObject({ ids: [] });

    await c.startNode(0);
    await c.ready(1);
    const after = await fetch(`${c.url(1)}/v1/blobs/${id}`);
    expect(after.status).toBe(200);
    expect(Buffer.from(await after.arrayBuffer()).equals(bytes)).toBe(true);
  });
});
