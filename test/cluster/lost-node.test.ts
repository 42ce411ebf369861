/**
 * A node lost for good, and reads that cannot finish (docs/cluster.md, Repair; erasure-coding.md):
 *
 *   - 4 nodes (SeedNodes = the others), REPLICA3 blobs; one node SIGKILLed, its data dir deleted,
 *     an immediate leave: every blob has 3 copies again long before the next anti-entropy round
 *     (an hour here), and the repair shows in the metrics and in cluster/state;
 *   - 6 nodes, EC42 blobs; one node SIGKILLed and removed at once: every blob has its six
 *     columns again on the five left with no read of it (repair queued by the removal);
 *   - 6 nodes, EC42 blobs; 3 nodes killed: a read answers 503 in the error shape before any byte,
 *     never 200 and a cut body, right after the kill and once the nodes are seen offline;
 *   - 3 nodes, a NONE blob on a node that is killed: the others answer 503 (a retry), not 404.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { copiesOf, oneBigClusterAtATime, putWithNodesUp, TestCluster } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { columnHolders } from '../helpers/columns.js';

oneBigClusterAtATime();

const KiB = 1024;

async function metric(c: TestCluster, i: number, name: string): Promise<number> {
  const text = await (await fetch(`${c.url(i)}/metrics`)).text();
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

describe('a node lost for good: its copies are made again at once', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('every REPLICA3 blob has 3 copies again without waiting for anti-entropy, and the repair is counted', async () => {
    c = await TestCluster.start({
      size: 4, together: true, seeds: 'peers',
      args: ['--metrics-addr', 'same', '--repair-interval-ms', '3600000', '--replication-acks', '2'],
    });
    await c.converged({ members: c.ids });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await putRaw(c.url(i % 3), patternBytes(64 * KiB + i, 900 + i), { 'X-Blobstore-Policy': '3' });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { id: string }).id);
    }
    // Every copy made first (the replication queues drained), so what comes after the loss is repair's.
    await waitFor(async () => (await Promise.all([0, 1, 2, 3].map((i) => metric(c, i, 'blobstore_replication_queue_depth')))).every((d) => d === 0), { what: 'replication queues drained' });
    const lost = 3;
    // The copies repair must make: blobs the survivors hold only twice (a survivor that took a
    // store without owning it may still hold a third copy, which then stays).
    const survivors = await copiesOf(c, [0, 1, 2]);
    const held = ids.filter((id) => survivors.get(id)?.length === 2).length;
    expect(held).toBeGreaterThan(0);
    await c.kill(lost);
    rmSync(c.dataDirs[lost]!, { recursive: true, force: true });
    const leave = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', body: JSON.stringify({ node_id: c.ids[lost], graceful: false }) });
    expect(leave.status).toBe(200);
    await waitFor(async () => {
      const copies = await copiesOf(c, [0, 1, 2]);
      return ids.every((id) => copies.get(id)?.length === 3);
    }, { what: 'every blob back at 3 copies', timeoutMs: 60_000 });
    // Counted once each sender has its answer (a copy can be listed by its new owner a moment before).
    const sum = async (read: (i: number) => Promise<number>): Promise<number> => (await Promise.all([0, 1, 2].map(read))).reduce((a, b) => a + b, 0);
    const repairedBytes = (i: number): Promise<number> =>
      fetch(`${c.url(i)}/v1/cluster/state`).then(async (r) => ((await r.json()) as { repair: { bytes_repaired: number } }).repair.bytes_repaired);
    await waitFor(async () => (await sum((i) => metric(c, i, 'blobstore_repair_blobs_total'))) >= held, { what: `${held} replicas counted in blobstore_repair_blobs_total` });
    await waitFor(async () => (await sum(repairedBytes)) >= held * 64 * KiB, { what: 'the copies\' bytes counted in cluster/state repair.bytes_repaired' });
  });
});

describe('a node lost for good: its EC columns are rebuilt at once', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('six nodes down to five: every EC42 blob has its six columns again with no read, long before anti-entropy\'s round', { timeout: 180_000 }, async () => {
    c = await TestCluster.start({ size: 6, together: true, seeds: 'peers', args: ['--repair-interval-ms', '3600000'] });
    await c.converged({ members: c.ids });
    const ids: string[] = [];
    for (const size of [3 * 1024 * KiB + 7, 17 * 1024 * KiB]) {
      const res = await putWithNodesUp(c, 0, patternBytes(size, size % 89), { 'X-Blobstore-Policy': '4' });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { id: string }).id);
    }
    const lost = 5;
    await c.kill(lost);
    const leave = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', body: JSON.stringify({ node_id: c.ids[lost], graceful: false }) });
    expect(leave.status).toBe(200);
    // Every owner holds a column at five nodes, so anti-entropy finds none missing: the removal queues them.
    let seen = '';
    await waitFor(async () => {
      const held = await Promise.all(ids.map((id) => columnHolders(c, id)));
      seen = held.map((h) => [...h.keys()].sort().join(',')).join('; ');
      return held.every((h) => h.size === 6);
    }, { what: () => `six columns of every blob on five nodes (held: ${seen})`, timeoutMs: 90_000, pollMs: 500 });
  });
});

describe('an EC42 read that cannot finish never starts', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('with 3 of 6 nodes down a read answers 503 before any byte, at once and once they are seen offline', async () => {
    c = await TestCluster.start({ size: 6, together: true, seeds: 'peers', args: ['--ec-fetch-timeout-ms', '1000'] });
    await c.converged({ members: c.ids });
    const blobs: string[] = [];
    for (const size of [1024 * KiB, 4 * 1024 * KiB + 3]) {
      const res = await putWithNodesUp(c, 0, patternBytes(size, size % 97), { 'X-Blobstore-Policy': '4' });
      expect(res.status).toBe(201);
      blobs.push(((await res.json()) as { id: string }).id);
    }
    // Warm the holders cache of node 0: every column reachable.
    for (const id of blobs) expect((await fetch(`${c.url(0)}/v1/blobs/${id}`)).status).toBe(200);
    for (const i of [3, 4, 5]) await c.kill(i);
    const readFails = async (): Promise<void> => {
      for (const id of blobs) {
        const res = await fetch(`${c.url(0)}/v1/blobs/${id}`);
        const body = await res.text();
        expect(res.status, body.slice(0, 200)).toBe(503);
        expect(JSON.parse(body)).toMatchObject({ code: 503, error: 'Service Unavailable' });
      }
    };
    await readFails();
    await waitFor(async () => (await c.state(0)).nodes.filter((n) => n.state === 'offline').length === 3, { what: 'three nodes offline', timeoutMs: 30_000 });
    await readFails();
  });
});

describe('a blob whose only copy is on a node that is down', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('the other nodes answer 503 with Retry-After (the client retries), never 404; 200 once it is back', { timeout: 120_000 }, async () => {
    c = await TestCluster.start({ size: 3, together: true, seeds: 'peers' });
    await c.converged({ members: c.ids });
    // NONE keeps its one copy on the node that took it (on three nodes, always among those a read asks).
    const bytes = patternBytes(5000, 31);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '1' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    expect(Buffer.from(await (await fetch(`${c.url(2)}/v1/blobs/${id}`)).arrayBuffer()).equals(bytes)).toBe(true);
    await c.kill(0);
    const unreachable = async (): Promise<void> => {
      for (const i of [1, 2]) {
        for (const method of ['GET', 'HEAD']) {
          const r = await fetch(`${c.url(i)}/v1/blobs/${id}`, { method });
          expect(r.status, `${method} on node ${i}`).toBe(503);
          expect(r.headers.get('retry-after')).toBe('1');
          if (method === 'GET') expect(await r.json()).toMatchObject({ code: 503, error: 'Service Unavailable' });
        }
      }
    };
    await unreachable();
    await c.converged({ among: [1, 2], states: { [c.ids[0]!]: 'offline' }, timeoutMs: 30_000 });
    await unreachable();
    // A blob nobody has: the nodes that are up say so, the one that is down might hold it.
    expect((await fetch(`${c.url(1)}/v1/blobs/${'0'.repeat(32)}`)).status).toBe(503);
    await c.startNode(0);
    await waitFor(async () => (await fetch(`${c.url(2)}/v1/blobs/${id}`)).status === 200, { what: 'the blob readable again', timeoutMs: 30_000 });
    expect(Buffer.from(await (await fetch(`${c.url(1)}/v1/blobs/${id}`)).arrayBuffer()).equals(bytes)).toBe(true);
    expect((await fetch(`${c.url(1)}/v1/blobs/${'0'.repeat(32)}`)).status).toBe(404);
  });

  it('a holder frozen (SIGSTOP: its port takes connections, nothing answers) and seen offline costs a read 1 s, not the 5 s call deadline', async () => {
    await c.converged({ members: c.ids });
    const bytes = patternBytes(5000, 32);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '1' });
    const { id } = (await res.json()) as { id: string };
    c.freeze(0);
    try {
      await c.converged({ among: [1, 2], states: { [c.ids[0]!]: 'offline' }, timeoutMs: 30_000 });
      const started = performance.now();
      const r = await fetch(`${c.url(1)}/v1/blobs/${id}`);
      const ms = performance.now() - started;
      expect(r.status).toBe(503);
      // A fifth of peerCallTimeoutMs (5 s) for the frozen holder; the margin is for a slow machine.
      expect(ms).toBeLessThan(3500);
    } finally {
      c.thaw(0);
    }
  });
});
