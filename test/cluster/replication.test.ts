/**
 * The data path of a cluster with real processes: copies by policy on the ring's owners, reads
 * from any node (GET, HEAD, stat, ranges, streams), the replication queue surviving a SIGKILL of
 * the receiving node right after its 2xx, an owner that was down (or frozen) catching up, anti-entropy
 * restoring a node that lost its data, and a corrupt local copy served from a replica and
 * repaired. Each scenario ends with the invariant: every acknowledged blob reads back byte-exact
 * from every node.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flipByte, patternBytes, putRaw } from '../helpers/blobs.js';
import * as grpc from '@grpc/grpc-js';
import { copiesOf, expectReadableEverywhere, TestCluster } from '../helpers/cluster.js';
import { client, failure, unary } from '../grpc/helpers.js';
import { waitFor } from '../helpers/wait.js';
import { Ring } from '../../src/cluster/ring.js';

const acked = new Map<string, Buffer>();

async function store(c: TestCluster, at: number, bytes: Buffer, policy: number): Promise<string> {
  const res = await putRaw(c.url(at), bytes, { 'X-Blobstore-Policy': String(policy) });
  expect(res.status, await res.clone().text()).toBeOneOf([200, 201]);
  const { id } = (await res.json()) as { id: string };
  acked.set(id, bytes);
  return id;
}

describe('replication on a 4-node cluster', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 4, args: ['--repair-interval-ms', '1000', '--handoff-interval-ms', '1000'] });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('puts REPLICA3, REPLICA2 and NONE copies on 3, 2 and 1 nodes; small blobs and 3 MiB ones alike', async () => {
    const want = new Map<string, number>();
    for (let i = 0; i < 12; i++) {
      const size = i % 4 === 0 ? 3 * 1024 * 1024 + 17 : 3000 + i;
      const policy = [3, 2, 1][i % 3]!;
      const id = await store(c, i % 4, patternBytes(size, 100 + i), policy);
      want.set(id, [3, 2, 1][i % 3]!);
    }
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return [...want].every(([id, n]) => holders.get(id)?.length === n);
    }, { what: 'every blob on as many nodes as its policy asks' });
  });

  it('NONE keeps its one copy on the node that took it when that node is one of the three a read asks, else moves it to the owner', async () => {
    // The ring every member computes (128 virtual nodes each, no regions), built here from the ids.
    const ring = new Ring(c.ids.map((nodeId) => ({ nodeId, region: '' })), 128);
    const taker = c.ids[2]!;
    const want = new Map<string, string[]>();
    for (let i = 0; i < 24; i++) {
      const id = await store(c, 2, patternBytes(1200 + i, 4242 + i), 1);
      want.set(id, ring.holders(Buffer.from(id, 'hex'), 1, taker));
    }
    // Both kinds are there: most stay (3 of 4 nodes are among those a read asks), some move.
    const stays = [...want.values()].filter((h) => h[0] === taker).length;
    expect(stays).toBeGreaterThan(0);
    expect(stays).toBeLessThan(want.size);
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return [...want].every(([id, h]) => holders.get(id)?.join() === h.join());
    }, { what: 'each NONE blob on its one holder: the taker, or the owner it was moved to' });
    await expectReadableEverywhere(c, new Map([...want.keys()].map((id) => [id, acked.get(id)!])));
  });

  it('reads every blob from every node, including nodes that hold no copy (GET, HEAD, stat, range, stream)', async () => {
    await expectReadableEverywhere(c, acked);
    const holders = await copiesOf(c);
    const [id, nodes] = [...holders].find(([, n]) => n.length === 1)!;
    const bytes = acked.get(id)!;
    const elsewhere = c.ids.findIndex((n) => !nodes.includes(n));
    const url = `${c.url(elsewhere)}/v1/blobs/${id}`;
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-blobstore-blob-size')).toBe(String(bytes.length));
    const stat = (await (await fetch(`${url}/stat`)).json()) as { exists: boolean; meta: { size: number } };
    expect(stat).toMatchObject({ exists: true, meta: { size: bytes.length } });
    const range = await fetch(url, { headers: { Range: 'bytes=100-199' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(100, 200))).toBe(true);
    const lines = (await (await fetch(`${url}/stream`)).text()).trim().split('\n').map((l) => JSON.parse(l) as { result: { data: string } });
    expect(Buffer.concat(lines.map((l) => Buffer.from(l.result.data, 'base64'))).equals(bytes)).toBe(true);
  });

  it('copies and serves a 40 MiB blob byte-exact: streamed replicas and a streamed remote read', async () => {
    const bytes = patternBytes(40 * 1024 * 1024 + 5, 4040);
    const id = await store(c, 1, bytes, 3);
    await waitFor(async () => (await copiesOf(c)).get(id)?.length === 3, { what: 'three copies of the 40 MiB blob', timeoutMs: 60_000 });
    const holders = (await copiesOf(c)).get(id)!;
    const elsewhere = c.ids.findIndex((n) => !holders.includes(n));
    expect(elsewhere).toBeGreaterThanOrEqual(0);
    const res = await fetch(`${c.url(elsewhere)}/v1/blobs/${id}`);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('answers 404 only when no node has the blob', async () => {
    const missing = '0123456789abcdef0123456789abcdef';
    for (const i of c.live()) {
      expect((await fetch(`${c.url(i)}/v1/blobs/${missing}`)).status).toBe(404);
      expect((await fetch(`${c.url(i)}/v1/blobs/${missing}`, { method: 'HEAD' })).status).toBe(404);
      expect(await (await fetch(`${c.url(i)}/v1/blobs/${missing}/stat`)).json()).toEqual({ exists: false });
    }
  });

  it('answers 404, not 503, for a blob deleted on every node after a read found it on a peer', async () => {
    const bytes = patternBytes(5000, 6999);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '3' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    await waitFor(async () => ((await copiesOf(c)).get(id) ?? []).length === 3, { what: 'three copies' });
    // The node that took the store deletes its copy, then finds the blob on a peer (and remembers where).
    const reader = 0;
    expect((await fetch(`${c.url(reader)}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${c.url(reader)}/v1/blobs/${id}`)).status).toBe(200);
    for (const i of c.live()) expect((await fetch(`${c.url(i)}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBe(200);
    const again = await fetch(`${c.url(reader)}/v1/blobs/${id}`);
    expect(again.status, await again.text()).toBe(404);
    expect((await fetch(`${c.url(reader)}/v1/blobs/${id}/stream`)).status).toBe(404);
  });

  it('a REPLICA3 blob acknowledged just before the receiving node is SIGKILLed reaches three copies once it is back', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await store(c, 0, patternBytes(2000 + i, 7000 + i), 3));
    await c.kill(0);
    await c.startNode(0);
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return ids.every((id) => holders.get(id)?.length === 3);
    }, { what: 'three copies of every blob stored before the kill' });
    await expectReadableEverywhere(c, new Map(ids.map((id) => [id, acked.get(id)!])));
  });

  it('copies for an owner that is down wait in the queue and arrive when it is back', async () => {
    await c.stop(3);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await store(c, 1, patternBytes(1500 + i, 9000 + i), 3));
    await c.startNode(3);
    await c.converged({ members: c.ids });
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return ids.every((id) => holders.get(id)?.length === 3);
    }, { what: 'three copies of every blob stored while an owner was down' });
  });

  it('with an owner frozen (SIGSTOP), stores are answered without waiting for it, and its copies land once it runs again', async () => {
    // Node 1's index commits wait for its replicator's passes (indexCommitHoldMs), and a pass
    // waits for the frozen owner: stores must not.
    c.freeze(3);
    const ids: string[] = [];
    try {
      for (let i = 0; i < 40; i++) ids.push(await store(c, 1, patternBytes(1700 + i, 9500 + i), 3));
    } finally {
      c.thaw(3);
    }
    await c.converged({ members: c.ids });
    await waitFor(async () => {
      const holders = await copiesOf(c);
      return ids.every((id) => holders.get(id)?.length === 3);
    }, { what: 'three copies of every blob stored while an owner was frozen' });
  });

  it('a node that lost its data gets its copies back from the others (anti-entropy), reads never fail meanwhile', async () => {
    const before = await copiesOf(c);
    const lost = 2;
    const held = [...before].filter(([, nodes]) => nodes.length > 1 && nodes.includes(c.ids[lost]!)).map(([id]) => id);
    expect(held.length).toBeGreaterThan(0);
    // A NONE blob whose one copy was there goes with the disk: the policy promises no redundancy.
    const gone = [...before].filter(([, nodes]) => nodes.length === 1 && nodes[0] === c.ids[lost]).map(([id]) => id);
    expect(gone.length).toBeGreaterThan(0);
    for (const id of gone) acked.delete(id);
    await c.kill(lost);
    const { rmSync } = await import('node:fs');
    rmSync(c.dataDirs[lost]!, { recursive: true, force: true });
    await c.startNode(lost);
    await c.ready(lost); // admitted again: until then it answers 503, as a load balancer sees
    await expectReadableEverywhere(c, acked, [lost]);
    await waitFor(async () => {
      const holders = await copiesOf(c, [lost]);
      return held.every((id) => holders.has(id));
    }, { what: `node ${c.ids[lost]} holds again every copy it held`, timeoutMs: 30_000 });
    await c.converged({ members: c.ids });
  });

  it('serves a corrupt local copy from a replica instead, and repairs it', async () => {
    const bytes = patternBytes(5000, 4242);
    const id = await store(c, 0, bytes, 3);
    await waitFor(async () => (await copiesOf(c)).get(id)?.length === 3, { what: 'three copies' });
    const holder = (await copiesOf(c)).get(id)!.map((n) => c.ids.indexOf(n))[0]!;
    // Flip a byte of the record's data in its segment (the blob is small: a segment record).
    const segments = join(c.dataDirs[holder]!, 'segments');
    const { readFileSync } = await import('node:fs');
    let flipped = false;
    for (const name of readdirSync(segments)) {
      const at = readFileSync(join(segments, name)).indexOf(bytes.subarray(0, 64));
      if (at >= 0) {
        flipByte(join(segments, name), at + 10);
        flipped = true;
        break;
      }
    }
    expect(flipped).toBe(true);
    for (let round = 0; round < 2; round++) {
      const res = await fetch(`${c.url(holder)}/v1/blobs/${id}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
    }
    await waitFor(async () => c.node(holder).output().includes('corrupt local copy was replaced'), { what: 'the local copy repaired' });
  });

  it('after all of it: every acknowledged blob reads back byte-exact from every node', async () => {
    await expectReadableEverywhere(c, acked);
  });
});

describe('the cluster secret', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 2, args: ['--cluster-secret', 'correct horse battery staple'] });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('nodes with the secret form a cluster and replicate; calls without it are refused', async () => {
    await c.converged({ members: c.ids });
    const bytes = patternBytes(4096, 77);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '2' });
    const { id } = (await res.json()) as { id: string };
    await waitFor(async () => (await copiesOf(c)).get(id)?.length === 2, { what: 'two copies' });
    // InternalService without the secret (or with another) is refused; with it, it answers.
    const grpcAddress = (await c.state(0)).nodes.find((n) => n.node_id === 'node-1')!.grpc_address;
    const internal = client('InternalService', grpcAddress);
    try {
      const request = { id: { id: Buffer.from(id, 'hex') } };
      const withSecret = (secret: string): grpc.Metadata => {
        const md = new grpc.Metadata();
        md.set('x-blobstore-cluster-secret', secret);
        return md;
      };
      expect((await failure(unary(internal, 'StatBlob', request))).code).toBe(grpc.status.UNAUTHENTICATED);
      expect((await failure(unary(internal, 'StatBlob', request, { metadata: withSecret('wrong') }))).code).toBe(grpc.status.UNAUTHENTICATED);
      const answer = await unary<{ exists: boolean }>(internal, 'StatBlob', request, { metadata: withSecret('correct horse battery staple') });
      expect(answer.exists).toBe(true);
    } finally {
      internal.close();
    }
  });
});

describe('replicationAcks', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 3, args: ['--replication-acks', '2', '--replication-ack-timeout-ms', '1500'] });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('with 2, a REPLICA3 store answers once both other owners hold the blob', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await putRaw(c.url(i % 3), patternBytes(3000 + i, 8800 + i), { 'X-Blobstore-Policy': '3' });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      // No waiting: the copies are there when the answer comes.
      expect((await copiesOf(c)).get(id)).toHaveLength(3);
    }
  });

  it('answers 503 when the owners cannot confirm in time; the blob is stored here and reaches them later', async () => {
    await c.stop(2);
    const bytes = patternBytes(5000, 8899);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '3' });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { message: string }).message).toMatch(/did not confirm/);
    await c.startNode(2);
    await c.converged({ members: c.ids });
    // Retrying is safe, and the retry waits for the copies like the first store did.
    const retry = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '3' });
    expect(retry.status).toBe(200);
    const { id } = (await retry.json()) as { id: string };
    expect((await copiesOf(c)).get(id)).toHaveLength(3);
  });
});
