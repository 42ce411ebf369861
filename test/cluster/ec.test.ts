/**
 * Erasure-coded blobs on real clusters: EC42 on 6 nodes, EC82 on 10. A store on any node puts one
 * column on each of the blob's k + m owners; every blob reads back byte-exact from every node
 * (GET, HEAD, stat, ranges, the stream); sizes straddle the shard and stripe boundaries; nodes
 * that are down are read around by reconstruction; more than m down fails cleanly, never with
 * wrong bytes; EC with too few nodes answers 412. Small shard sizes keep the tests quick (the
 * sizes are settings); one blob crosses into the large-shard layout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, postStream, putRaw } from '../helpers/blobs.js';
import { expectReadableEverywhere, oneBigClusterAtATime, putWithNodesUp, TestCluster } from '../helpers/cluster.js';
import { chunksOf, client, getStream, putStream, unary } from '../grpc/helpers.js';
import { waitFor } from '../helpers/wait.js';
import { expectColumnChecksums } from '../helpers/columns.js';

oneBigClusterAtATime();

const KiB = 1024;
const SHARD = 64 * KiB;
/** Small blobs stay in memory up to this; larger ones stream to the coordinator's transient file. */
const SMALL = 128 * KiB;
const EC_ARGS = [
  '--ec-shard-bytes', String(SHARD), '--ec-large-blob-bytes', String(2 * 1024 * KiB), '--ec-large-shard-bytes', String(256 * KiB),
  '--small-blob-max-bytes', String(SMALL), '--repair-interval-ms', '1000',
  // Killed nodes fail a fetch at once; the fetch timeout only rules out a node slow under load.
  '--ec-fetch-timeout-ms', '5000',
  // Reads trust the ring's placement even right after one found a column out of place (by default they ask for a minute then).
  '--ec-survey-after-miss-ms', '0',
];

/** Stores `bytes` at node `at` with every node up (past a 412 while a node's heartbeats lag: putWithNodesUp). */
async function store(c: TestCluster, at: number, bytes: Buffer, policy: number, acked?: Map<string, Buffer>): Promise<string> {
  const res = await putWithNodesUp(c, at, bytes, { 'X-Blobstore-Policy': String(policy) });
  expect(res.status, await res.clone().text()).toBeOneOf([200, 201]);
  const { id } = (await res.json()) as { id: string };
  acked?.set(id, bytes);
  return id;
}

/** Blob sizes around the boundaries of a k-shard stripe (and a few stripes plus 3 bytes). */
function boundarySizes(k: number): number[] {
  const stripe = k * SHARD;
  return [0, 1, 1000, stripe - 1, stripe, stripe + 1, 3 * stripe + 3, 2 * 1024 * KiB + 5];
}

/** blobstore_ec_read_holders_total summed over the live nodes, by how the reads found the holders. */
async function holderLookups(c: TestCluster): Promise<Record<string, number>> {
  const sum: Record<string, number> = { ring: 0, cached: 0, survey: 0 };
  for (const i of c.live()) {
    const text = await (await fetch(`${c.url(i)}/metrics`)).text();
    for (const [, how, n] of text.matchAll(/^blobstore_ec_read_holders_total\{[^}]*how="(\w+)"[^}]*\} (\d+)/gm)) sum[how!] = (sum[how!] ?? 0) + Number(n);
  }
  return sum;
}

async function shardCounts(c: TestCluster): Promise<number[]> {
  return Promise.all(c.live().map(async (i) => {
    const text = await (await fetch(`${c.url(i)}/metrics`)).text();
    return Number(/^blobstore_shard_count\{[^}]*\} (\d+)/m.exec(text)?.[1] ?? -1);
  }));
}

describe('EC42 on a 6-node cluster', () => {
  let c: TestCluster;
  const acked = new Map<string, Buffer>();
  beforeAll(async () => {
    c = await TestCluster.start({ size: 6, args: [...EC_ARGS, '--metrics-addr', 'same'] });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('stores blobs of sizes around stripe and shard boundaries from any node; every node reads each byte-exact, and every column keeps every column\'s checksum', async () => {
    for (const [i, size] of boundarySizes(4).entries()) await store(c, i % 6, patternBytes(size, 4200 + i), 4, acked);
    await expectReadableEverywhere(c, acked);
    for (const id of acked.keys()) await expectColumnChecksums(c, id, 6);
  });

  it('reads the columns from where the ring places them, asking no node which columns it holds', async () => {
    const before = await holderLookups(c);
    await expectReadableEverywhere(c, acked);
    const after = await holderLookups(c);
    const delta = (how: string): number => after[how]! - before[how]!;
    // Every read of a non-empty blob found its holders once, one way or another.
    const reads = [...acked.values()].filter((b) => b.length > 0).length * c.live().length;
    expect(delta('ring') + delta('cached') + delta('survey')).toBe(reads);
    // A node seen offline a moment (heartbeats lag under load) sends a read to ask; the others ask nobody.
    expect(delta('ring'), JSON.stringify({ before, after })).toBeGreaterThan(reads / 2);
  });

  it('puts one column on each of the six nodes: every node counts shards, none holds a whole copy', async () => {
    const counts = await shardCounts(c);
    expect(counts.every((n) => n > 0), `shard_count per node: ${counts}`).toBe(true);
    for (const i of c.live()) {
      const text = await (await fetch(`${c.url(i)}/metrics`)).text();
      expect(Number(/^blobstore_blob_count\{[^}]*\} (\d+)/m.exec(text)?.[1])).toBe(0);
    }
  });

  it('answers HEAD, stat and byte ranges of an EC blob on every node', async () => {
    const [id, bytes] = [...acked].find(([, b]) => b.length === 3 * 4 * SHARD + 3)!;
    for (const i of c.live()) {
      const head = await fetch(`${c.url(i)}/v1/blobs/${id}`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('x-blobstore-blob-size')).toBe(String(bytes.length));
      expect(head.headers.get('x-blobstore-policy')).toBe('4');
      const stat = (await (await fetch(`${c.url(i)}/v1/blobs/${id}/stat`)).json()) as { exists: boolean; meta: { size: number } };
      expect(stat).toMatchObject({ exists: true, meta: { size: bytes.length } });
      // A range across a shard boundary and a stripe boundary.
      const from = 4 * SHARD - 100;
      const to = 5 * SHARD + 50;
      const part = await fetch(`${c.url(i)}/v1/blobs/${id}`, { headers: { Range: `bytes=${from}-${to}` } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(from, to + 1))).toBe(true);
    }
    const stream = await fetch(`${c.url(2)}/v1/blobs/${id}/stream`);
    const lines = (await stream.text()).trim().split('\n').map((l) => JSON.parse(l) as { result: { data: string } });
    expect(Buffer.concat(lines.map((l) => Buffer.from(l.result.data, 'base64'))).equals(bytes)).toBe(true);
  });

  it('serves EC blobs over gRPC too: a PutStream with EC42 on one node, Get, GetStream and Stat on another', async () => {
    const state = await c.state(0);
    const target = (i: number): string => state.nodes.find((n) => n.node_id === c.ids[i])!.grpc_address;
    const a = client('BlobService', target(1));
    const b = client('BlobService', target(4));
    try {
      const bytes = patternBytes(3 * 4 * SHARD + 77, 4343);
      const put = await putStream<{ id: { id: Buffer } }>(a, chunksOf(bytes, 50_000, { policy: 4 }));
      acked.set(put.id.id.toString('hex'), bytes);
      const got = await unary<{ data: Buffer; meta: { size: string; policy: number } }>(b, 'Get', { id: put.id });
      expect(got.data.equals(bytes)).toBe(true);
      expect(got.meta).toMatchObject({ size: String(bytes.length), policy: 4 });
      expect((await getStream(b, put.id.id)).data.equals(bytes)).toBe(true);
      expect(await unary(b, 'Stat', { id: put.id })).toMatchObject({ exists: true, meta: { size: String(bytes.length) } });
    } finally {
      a.close();
      b.close();
    }
  });

  it('stores existing bytes again as a no-op (200 on every node), and lists the blob on the nodes that hold its columns', async () => {
    const [id, bytes] = [...acked].find(([, b]) => b.length === 1000)!;
    const res = await putRaw(c.url(5), bytes, { 'X-Blobstore-Policy': '4' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe(id);
    const listed = await Promise.all(c.live().map(async (i) => ((await (await fetch(`${c.url(i)}/v1/blobs?limit=1000`)).json()) as { ids: string[] }).ids.includes(id)));
    expect(listed.every(Boolean)).toBe(true);
  });

  it('reads every blob from every survivor with any two nodes down (reconstruction), and counts the reconstructions', async () => {
    await c.kill(1);
    await c.kill(4);
    await expectReadableEverywhere(c, acked);
    const text = await (await fetch(`${c.url(0)}/metrics`)).text();
    expect(Number(/^blobstore_ec_reconstruction_total\{[^}]*\} (\d+)/m.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it('with three nodes down, reads fail cleanly (503 in the error shape), never with wrong bytes', async () => {
    await c.kill(2);
    for (const [id, bytes] of acked) {
      if (bytes.length === 0) continue;
      const res = await fetch(`${c.url(0)}/v1/blobs/${id}`, { signal: AbortSignal.timeout(15_000) });
      if (res.status === 200) {
        // The answer may have begun before the missing shards were found: it must then be cut, never wrong.
        const got = await res.arrayBuffer().then((b) => Buffer.from(b), () => undefined);
        expect(got === undefined || !got.equals(bytes) ? 'cut' : 'whole', `GET ${id}`).toBe('cut');
      } else {
        expect(res.status, `GET ${id}`).toBe(503);
        expect(((await res.json()) as { code: number }).code).toBe(503);
      }
    }
  });

  it('refuses EC42 with 412 once fewer than six nodes are up (503 while the dead ones are not yet seen offline)', async () => {
    let last = { status: 0, message: '' };
    await waitFor(async () => {
      const res = await putRaw(c.url(0), patternBytes(5000, 1), { 'X-Blobstore-Policy': '4' });
      last = { status: res.status, message: ((await res.json()) as { message: string }).message };
      expect(last.status).toBeOneOf([412, 503]);
      return last.status === 412 && /have 3,/.test(last.message);
    }, { what: 'EC42 refused with 412 once all three are seen offline' });
    expect(last.message).toMatch(/not enough nodes for EC: have 3, need 6/);
    // Repair (queued by the reads above, a pass a second) waits for owners it cannot reach: no blob is called lost meanwhile.
    for (const i of c.live()) expect(c.node(i).output(), c.ids[i]).not.toContain('fewer than k columns are left');
  });

  it('reads everything again once the nodes are back', async () => {
    for (const i of [1, 2, 4]) await c.startNode(i);
    await c.converged({ members: c.ids });
    await waitFor(async () => (await fetch(`${c.url(3)}/v1/blobs/${[...acked.keys()][3]}`)).status === 200, { what: 'reads work again' });
    await expectReadableEverywhere(c, acked);
  });
});

describe('EC82 on a 10-node cluster', () => {
  let c: TestCluster;
  const acked = new Map<string, Buffer>();
  beforeAll(async () => {
    // Ten nodes on two cores busy with other files: a heartbeat may come 1.5 s late, and a node
    // seen offline would leave EC82 one short (412). Nothing here waits for a node to be seen offline.
    c = await TestCluster.start({ size: 10, args: [...EC_ARGS, '--metrics-addr', '', '--offline-after-ms', '10000'], together: true });
    await c.converged({ members: c.ids, timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  // Ten nodes on two cores: about 60 s where the machine is half as fast and busy with other files.
  it('round-trips sizes around the 8-shard stripe from any node, also with two nodes down', { timeout: 180_000 }, async () => {
    for (const [i, size] of boundarySizes(8).entries()) await store(c, (i * 3) % 10, patternBytes(size, 8200 + i), 5, acked);
    await expectReadableEverywhere(c, acked, [0, 5, 9]);
    await c.kill(3);
    await c.kill(7);
    await expectReadableEverywhere(c, acked, [0, 5, 9]);
  });
});

describe("EC42 with the spec's shard sizes (16 MiB shards above 64 MiB)", () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 6, args: ['--metrics-addr', '', '--ec-fetch-timeout-ms', '5000'], together: true });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('a blob over 64 MiB, streamed in, reads back byte-exact from other nodes, also with a node down', { timeout: 120_000 }, async () => {
    const MiB = 1024 * KiB;
    // Two stripes of 4 x 16 MiB: a whole one, and a short one of 4 x 1.5 MiB + a few bytes.
    const bytes = patternBytes(70 * MiB + 5, 6464);
    const parts = Array.from({ length: Math.ceil(bytes.length / MiB) }, (_, i) => bytes.subarray(i * MiB, (i + 1) * MiB));
    const res = await postStream(c.url(2), parts, { 'X-Blobstore-Policy': '4' });
    expect(res.status, await res.clone().text()).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const acked = new Map([[id, bytes]]);
    await expectReadableEverywhere(c, acked, [0, 4]);
    await c.kill(1);
    await expectReadableEverywhere(c, acked, [3]);
    // Five nodes up: EC42 is refused before its body is read.
    await waitFor(async () => {
      const res = await putRaw(c.url(0), patternBytes(1000, 5), { 'X-Blobstore-Policy': '4' });
      const body = (await res.json()) as { message: string };
      return res.status === 412 && /not enough nodes for EC: have 5, need 6/.test(body.message);
    }, { what: '412 with five nodes up' });
  });
});
