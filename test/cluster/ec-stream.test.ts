/**
 * Erasure-coded stores that stream (docs/erasure-coding.md): a store of known length of at least
 * ecStreamMinBytes sends its columns as the body arrives, placed by a key chosen before the id is
 * known, and the id's owners keep a manifest that says where the columns are. Tested on a real
 * 8-node cluster, where 2 nodes hold no column of a blob: the blob reads back from every node (the
 * manifest on the id's owners is found, or a column), also with two nodes
 * down; a node down during the store leaves a column that repair rebuilds with the same placement;
 * a client that goes away mid-body, or a coordinator killed mid-body, leaves nothing visible and no
 * temp file anywhere.
 */
import { readdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blake3 } from '../../src/hash/blake3.js';
import { patternBytes, postStream, putRaw } from '../helpers/blobs.js';
import { expectReadableEverywhere, oneBigClusterAtATime, putWithNodesUp, STREAMED_EC_ARGS, TestCluster } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { expectColumnChecksums, internalStat } from '../helpers/columns.js';

oneBigClusterAtATime();

const KiB = 1024;
const MiB = 1024 * KiB;
const EC_ARGS = [
  ...STREAMED_EC_ARGS, '--repair-interval-ms', '1000', '--ec-fetch-timeout-ms', '5000', '--ec-column-idle-timeout-ms', '3000', '--metrics-addr', 'same',
];

async function metric(c: TestCluster, i: number, name: string): Promise<number> {
  const text = await (await fetch(`${c.url(i)}/metrics`)).text();
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? -1);
}

const idOf = (bytes: Buffer): string => blake3(bytes).subarray(0, 16).toString('hex');

/** Temp files of uploads and columns under way on node i. */
function partFiles(c: TestCluster, i: number): string[] {
  return readdirSync(join(c.dataDirs[i]!, 'tmp')).filter((f) => f.endsWith('.part'));
}

describe('EC42 stores that stream their columns (a known length of at least ecStreamMinBytes)', () => {
  let c: TestCluster;
  const acked = new Map<string, Buffer>();
  beforeAll(async () => {
    c = await TestCluster.start({ size: 8, args: EC_ARGS });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('streams a store (counted on its node, its seal and manifest timed), and every node reads it byte-exact through the manifest', async () => {
    // Stripes of 4 x 256 KiB: whole ones and a short last one; a last stripe of one byte (three
    // data shards of padding only); whole stripes only; a last stripe shorter than a cell.
    for (const [at, size] of [[0, 2 * MiB + 5], [3, 3 * MiB + 1], [6, 3 * MiB], [7, 5 * MiB + 3 * KiB + 1]] as const) {
      const counts = ['blobstore_ec_streamed_stores_total', 'blobstore_ec_seal_latency_seconds_count', 'blobstore_ec_manifest_latency_seconds_count'];
      const before = await Promise.all(counts.map((name) => metric(c, at, name)));
      const bytes = patternBytes(size, size);
      const res = await putWithNodesUp(c, at, bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(201);
      const { id } = (await res.json()) as { id: string };
      expect(id).toBe(idOf(bytes));
      acked.set(id, bytes);
      expect(await Promise.all(counts.map((name) => metric(c, at, name)))).toEqual(before.map((n) => n + 1));
    }
    await expectReadableEverywhere(c, acked);
    for (const id of acked.keys()) await expectColumnChecksums(c, id, 6);
    // Six of the eight nodes hold a column of each (one each); the other two read it all the same.
    for (const id of acked.keys()) {
      const listed = await Promise.all(c.live().map(async (i) => ((await (await fetch(`${c.url(i)}/v1/blobs?limit=1000`)).json()) as { ids: string[] }).ids.includes(id)));
      expect(listed.filter(Boolean).length, `nodes holding a column of ${id}`).toBe(6);
    }
    // A range and HEAD on a node that may hold only the manifest, or nothing.
    const [id, bytes] = [...acked][3]!;
    const range = await fetch(`${c.url(5)}/v1/blobs/${id}`, { headers: { Range: 'bytes=1048570-3145735' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(1048570, 3145736))).toBe(true);
    const head = await fetch(`${c.url(1)}/v1/blobs/${id}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
  });

  it('a chunked store that says its length in X-Blobstore-Size streams too; one whose body does not match it stores nothing', async () => {
    const bytes = patternBytes(4 * MiB + 99, 808);
    const parts = Array.from({ length: 5 }, (_, i) => bytes.subarray(i * MiB, (i + 1) * MiB));
    const before = await metric(c, 5, 'blobstore_ec_streamed_stores_total');
    const res = await postStream(c.url(5), parts, { 'X-Blobstore-Policy': '4', 'X-Blobstore-Size': String(bytes.length) });
    expect(res.status, await res.clone().text()).toBe(201);
    expect(((await res.json()) as { id: string }).id).toBe(idOf(bytes));
    expect(await metric(c, 5, 'blobstore_ec_streamed_stores_total')).toBe(before + 1);
    acked.set(idOf(bytes), bytes);
    await expectReadableEverywhere(c, new Map([[idOf(bytes), bytes]]), [0, 2]);
    const short = await postStream(c.url(5), parts.slice(0, 4), { 'X-Blobstore-Policy': '4', 'X-Blobstore-Size': String(bytes.length) });
    expect(short.status).toBe(400);
    await waitFor(() => c.live().every((i) => partFiles(c, i).length === 0), { what: 'no temp file left' });
    expect((await fetch(`${c.url(1)}/v1/blobs/${idOf(bytes.subarray(0, 4 * MiB))}`)).status).toBe(404);
  });

  it('a second store of the same bytes, from any node, answers 200 and leaves one column per holder', async () => {
    const [id, bytes] = [...acked][0]!;
    for (const at of [2, 1]) {
      const res = await putWithNodesUp(c, at, bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as { id: string }).id).toBe(id);
    }
    // Chunked with no length said: taken whole, then placed by its id, where the cluster holds it
    // by another key already. Neither store adds a column.
    for (const at of [3, 7]) {
      const res = await postStream(c.url(at), [bytes.subarray(0, MiB), bytes.subarray(MiB)], { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as { id: string }).id).toBe(id);
    }
    await expectColumnChecksums(c, id, 6);
    const copies = await Promise.all(c.live().map(async (i) => (await internalStat(c, i, id)).indices?.length ?? 0));
    expect(copies.reduce((a, b) => a + b, 0), `columns of ${id} on nodes: ${copies.join(' ')}`).toBe(6);
    const listed = await Promise.all(c.live().map(async (i) => ((await (await fetch(`${c.url(i)}/v1/blobs?limit=1000`)).json()) as { ids: string[] }).ids.includes(id)));
    expect(listed.filter(Boolean).length).toBe(6);
    await waitFor(() => c.live().every((i) => partFiles(c, i).length === 0), { what: 'the dropped columns\' temp files gone' });
    await expectReadableEverywhere(c, new Map([[id, bytes]]), [0, 4]);
  });

  it('a client gone mid-body leaves nothing: no blob on any node, no temp file once the columns are dropped', async () => {
    const bytes = patternBytes(6 * MiB, 77);
    const url = new URL(c.url(1));
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(`PUT /v1/blobs HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/octet-stream\r\nX-Blobstore-Policy: 4\r\nContent-Length: ${bytes.length}\r\n\r\n`);
        socket.write(bytes.subarray(0, 4 * MiB), () => setTimeout(() => {
          socket.destroy();
          resolve();
        }, 200));
      });
      socket.on('error', reject);
    });
    await waitFor(() => c.live().every((i) => partFiles(c, i).length === 0), { what: () => `temp files left: ${c.live().map((i) => partFiles(c, i).length).join(',')}` });
    for (const i of c.live()) expect((await fetch(`${c.url(i)}/v1/blobs/${idOf(bytes)}`)).status).toBe(404);
  });

  it('the coordinator killed mid-body (SIGKILL) leaves nothing visible and no temp file on the holders', async () => {
    const bytes = patternBytes(6 * MiB, 99);
    const url = new URL(c.url(7));
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`PUT /v1/blobs HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/octet-stream\r\nX-Blobstore-Policy: 4\r\nContent-Length: ${bytes.length}\r\n\r\n`);
    await new Promise<void>((resolve) => socket.write(bytes.subarray(0, 4 * MiB), () => resolve()));
    // Columns are under way on the holders before the coordinator dies.
    await waitFor(() => c.live().some((i) => i !== 7 && partFiles(c, i).length > 0), { what: 'columns under way on a holder' });
    await c.kill(7);
    socket.destroy();
    await waitFor(() => c.live().every((i) => partFiles(c, i).length === 0), { what: () => `temp files left: ${c.live().map((i) => partFiles(c, i).length).join(',')}` });
    for (const i of c.live()) expect((await fetch(`${c.url(i)}/v1/blobs/${idOf(bytes)}`)).status).toBe(404);
    await c.startNode(7);
    await c.converged({ members: c.ids });
  });

  it('with two nodes down during the store, it succeeds, and repair rebuilds the missing columns once they are back', async () => {
    const holding = async (id: string): Promise<number> => (await Promise.all(c.ids.map(async (_, i) =>
      ((await (await fetch(`${c.url(i)}/v1/blobs?limit=1000`)).json()) as { ids: string[] }).ids.includes(id)))).filter(Boolean).length;
    await c.kill(4);
    await c.kill(6);
    // Dead nodes not yet seen offline fail their columns at once (refused); at most m = 2 may fail.
    const stored = new Map<string, Buffer>();
    for (let n = 0; n < 3; n++) {
      const bytes = patternBytes(3 * MiB + 17 + n, 4141 + n);
      const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(201);
      stored.set(idOf(bytes), bytes);
    }
    await expectReadableEverywhere(c, stored, [1, 5]);
    await c.startNode(4);
    await c.startNode(6);
    await c.converged({ members: c.ids });
    for (const id of stored.keys()) {
      let seen = 0;
      await waitFor(async () => (seen = await holding(id)) === 6, { what: () => `${id}: ${seen} nodes hold a column, 6 should` });
      // The columns that failed during the store were hashed all the same: the rebuilt ones match.
      await expectColumnChecksums(c, id, 6);
    }
    for (const [id, bytes] of stored) acked.set(id, bytes);
    await c.kill(2);
    await c.kill(3);
    await expectReadableEverywhere(c, acked, [4, 0, 6]);
  });
});

describe('a streamed EC store with a slow client or a frozen holder', () => {
  let c: TestCluster;
  beforeAll(async () => {
    // A client body may be quiet for 3 s; a streamed column, while the stripe's other columns
    // take the client's bytes, for up to ecColumnIdleTimeoutMs (12 s). A holder's answer after
    // a column's last byte may take 8 s.
    c = await TestCluster.start({
      size: 6, args: [...EC_ARGS, '--body-idle-timeout-ms', '3000', '--ec-column-idle-timeout-ms', '12000', '--ec-store-timeout-ms', '8000'],
    });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('a client slower than a column\'s quiet spell allows for a client body still stores (each column may be quiet up to ecColumnIdleTimeoutMs)', async () => {
    const bytes = patternBytes(3 * MiB + 5, 505);
    // 96 KiB every 600 ms: 768 KiB for the other three data shards of a stripe take 4.8 s, longer
    // than a client body may be quiet, shorter than ecColumnIdleTimeoutMs.
    async function* slowly(): AsyncGenerator<Buffer> {
      for (let at = 0; at < bytes.length; at += 96 * KiB) {
        yield bytes.subarray(at, at + 96 * KiB);
        await new Promise((resolve) => setTimeout(resolve, 600)); // the pace is what is tested
      }
    }
    const res = await fetch(`${c.url(0)}/v1/blobs`, {
      method: 'POST', body: Readable.toWeb(Readable.from(slowly())) as ReadableStream, duplex: 'half',
      headers: { 'Content-Type': 'application/octet-stream', 'X-Blobstore-Policy': '4', 'X-Blobstore-Size': String(bytes.length) },
    } as RequestInit);
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await metric(c, 0, 'blobstore_ec_streamed_stores_total')).toBe(1);
    await expectReadableEverywhere(c, new Map([[idOf(bytes), bytes]]), [3]);
  }, 120_000);

  it('a holder frozen (SIGSTOP) during the store costs its column, not the store', async () => {
    const bytes = patternBytes(4 * MiB + 1, 606);
    c.freeze(2);
    try {
      const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(201);
      await expectReadableEverywhere(c, new Map([[idOf(bytes), bytes]]), [1, 4]);
    } finally {
      c.thaw(2);
    }
  }, 120_000);
});
