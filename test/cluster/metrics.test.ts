/**
 * The cluster's series move for real: member counts, ring version, peer health, heartbeat
 * failures, connections to peers, replication latency and queue, in the text exposition and in
 * the JSON snapshot; a frozen peer shows as offline in both, a removed one in neither.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { OFFLINE_MS, TestCluster } from '../helpers/cluster.js';
import { parseExposition, sampleValue } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';

describe('cluster metrics on a 3-node cluster', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 3, args: ['--metrics-addr', 'same'] });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  const scrape = async (i: number) => parseExposition(await (await fetch(`${c.url(i)}/metrics`)).text());
  /** A sample by name; a histogram's _count and _sum belong to the histogram's family. */
  const value = (f: ReturnType<typeof parseExposition>, name: string, labels: Record<string, string> = {}): number | undefined =>
    sampleValue(f, `blobstore_${name.replace(/_(count|sum)$/, '')}`, `blobstore_${name}`, labels);

  it('counts the members, shows the ring version and every peer healthy', async () => {
    const state = await c.state(0);
    await waitFor(async () => {
      const f = await scrape(0);
      return value(f, 'nodes_total') === 3 && value(f, 'nodes_active') === 3 && value(f, 'nodes_offline') === 0
        && value(f, 'ring_version') === state.ring_version && value(f, 'peer_health', { peer: 'node-2' }) === 1
        && value(f, 'peer_health', { peer: 'node-3' }) === 1 && (value(f, 'grpc_connections_active') ?? 0) >= 1
        && (value(f, 'last_heartbeat_timestamp') ?? 0) > Date.now() / 1000 - 60;
    }, { what: 'cluster series at their values' });
    const json = (await (await fetch(`${c.url(0)}/api/v1/metrics`)).json()) as { cluster: Record<string, number>; health: { peerHealth: Record<string, boolean> } };
    expect(json.cluster).toMatchObject({ nodesTotal: 3, nodesActive: 3, nodesOffline: 0, ringVersion: state.ring_version });
    expect(json.health.peerHealth).toEqual({ 'node-2': true, 'node-3': true });
  });

  it('times replication and empties the queue after stores', async () => {
    for (let i = 0; i < 10; i++) await putRaw(c.url(0), patternBytes(2000 + i, 300 + i), { 'X-Blobstore-Policy': '3' });
    let seen = '';
    await waitFor(async () => {
      const f = await scrape(0);
      seen = ['replicate_latency_seconds_count', 'replication_queue_depth', 'replication_lag_seconds'].map((n) => `${n}=${value(f, n)}`).join(' ');
      return (value(f, 'replicate_latency_seconds_count') ?? 0) > 0 && value(f, 'replication_queue_depth') === 0 && value(f, 'replication_lag_seconds') === 0;
    }, { what: 'replication timed, queue empty' }).catch((err: Error) => {
      throw new Error(`${err.message}: ${seen}`);
    });
  });

  it('a frozen peer is offline: peer_health 0, nodes_offline 1, heartbeat failures move; a read it fails counts as a network error; and back', async () => {
    // A blob only node-3 holds (NONE stays where it was stored).
    const stored = await putRaw(c.url(2), patternBytes(3000, 399), { 'X-Blobstore-Policy': '1' });
    expect(stored.status).toBe(201);
    const { id } = (await stored.json()) as { id: string };
    const before = value(await scrape(0), 'heartbeat_failures_total') ?? 0;
    c.freeze(2);
    try {
      await waitFor(async () => {
        const f = await scrape(0);
        return value(f, 'peer_health', { peer: 'node-3' }) === 0 && value(f, 'nodes_offline') === 1 && value(f, 'nodes_active') === 2
          && (value(f, 'heartbeat_failures_total') ?? 0) > before;
      }, { what: 'node-3 offline in the metrics', timeoutMs: OFFLINE_MS + 15_000 });
      const errors = (f: ReturnType<typeof parseExposition>, type: string): number => value(f, 'errors_total', { type }) ?? 0;
      const f0 = await scrape(0);
      const read = await fetch(`${c.url(0)}/v1/blobs/${id}`);
      expect(read.status).toBe(503);
      const f1 = await scrape(0);
      expect(errors(f1, 'network')).toBeGreaterThan(errors(f0, 'network'));
      expect(errors(f1, 'overload')).toBe(errors(f0, 'overload'));
    } finally {
      c.thaw(2);
    }
    await waitFor(async () => value(await scrape(0), 'peer_health', { peer: 'node-3' }) === 1, { what: 'node-3 healthy again' });
  });

  it('a removed peer leaves peer_health (and the JSON snapshot), the others stay', async () => {
    const res = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"node_id":"node-3","graceful":false}' });
    expect(res.status).toBe(200);
    await c.kill(2);
    for (const i of [0, 1]) {
      await waitFor(async () => {
        const f = await scrape(i);
        return value(f, 'peer_health', { peer: 'node-3' }) === undefined && value(f, 'nodes_total') === 2;
      }, { what: `node-3 gone from node ${i + 1}'s peer_health`, timeoutMs: OFFLINE_MS + 15_000 });
    }
    expect(value(await scrape(0), 'peer_health', { peer: 'node-2' })).toBe(1);
    const json = (await (await fetch(`${c.url(0)}/api/v1/metrics`)).json()) as { health: { peerHealth: Record<string, boolean> } };
    expect(json.health.peerHealth).toEqual({ 'node-2': true });
    // The removal is logged naming the removed member; `node` stays the logging node's own id
    // (a second "node" key would credit the line to the other node in jq, Loki or Elasticsearch).
    const lines = c.node(0).output().split('\n');
    expect(lines.some((l) => l.includes('cluster: node removed') && l.includes('"peer":"node-3"'))).toBe(true);
    expect(lines.filter((l) => (l.match(/"node":/g) ?? []).length > 1)).toEqual([]);
  });
});
