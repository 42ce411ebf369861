/**
 * The node-to-node data path: reads of blobs a node lacks ask the owners what they hold (GET
 * /internal/v1/stat/{id}) and take the bytes from the owner's API listener (GET /internal/v1/blobs/{id}), large replicas go to the owners' (PUT
 * /internal/v1/replicas/{id}), small ones in batches (POST /internal/v1/replicas); that is their one way (a peer whose API address cannot be reached
 * gets no bytes over gRPC instead: docs/adr/0021-one-peer-transport.md). The routes take peers
 * that present the cluster secret (or, without a secret, what the auth gate lets through); the
 * read route serves local copies only.
 */
import { createBLAKE3 } from 'hash-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replicaBatchBody } from '../../src/cluster/replica-batch.js';
import { type BatchColumn, shardBatchBody } from '../../src/cluster/shard-batch.js';
import { expectedId, patternBytes, putRaw } from '../helpers/blobs.js';
import { freePort, TestCluster } from '../helpers/cluster.js';
import { logLines } from '../helpers/log.js';
import { parseExposition, sampleValue } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { blake3 } from '../../src/hash/blake3.js';
import { metaHeaderLines } from '../../src/cluster/wire-meta.js';
import { chunkValuesOf } from '../../src/engine/blob-reader.js';
import * as grpc from '@grpc/grpc-js';
import { client, unary } from '../grpc/helpers.js';

const MiB = 1024 * 1024;

/** Temp files of uploads and columns under way on node i. */
function partFiles(c: TestCluster, i: number): string[] {
  return readdirSync(join(c.dataDirs[i]!, 'tmp')).filter((f) => f.endsWith('.part'));
}

const SECRET = 'correct horse battery staple';

/**
 * A NONE blob stored at each node: its one copy stays there (on two nodes, both are among the
 * nodes a read asks: Ring.holders).
 */
async function oneCopyEach(c: TestCluster, size: number): Promise<Map<number, { id: string; bytes: Buffer }>> {
  const held = new Map<number, { id: string; bytes: Buffer }>();
  for (const at of [0, 1]) {
    const bytes = patternBytes(size, at * 7919 + size);
    const res = await putRaw(c.url(at), bytes, { 'X-Blobstore-Policy': '1' });
    expect(res.status).toBeOneOf([200, 201]);
    const { id } = (await res.json()) as { id: string };
    expect(await holdersOf(c, id)).toEqual([at]);
    held.set(at, { id, bytes });
  }
  return held;
}

/** The nodes that list the blob. */
async function holdersOf(c: TestCluster, id: string): Promise<number[]> {
  const holders: number[] = [];
  for (const i of c.live()) {
    const page = (await (await fetch(`${c.url(i)}/v1/blobs?prefix=${id}`)).json()) as { ids: string[] };
    if (page.ids.includes(id)) holders.push(i);
  }
  return holders;
}

describe('the data path with a cluster secret', () => {
  let c: TestCluster;
  let blobs: Map<number, { id: string; bytes: Buffer }>;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 2, args: ['--cluster-secret', SECRET, '--handoff-interval-ms', '500'] });
    await c.converged({ members: c.ids });
    blobs = await oneCopyEach(c, 3 * 1024 * 1024 + 17);
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('a node without a copy answers GET and a range with the owner\'s bytes', async () => {
    for (const [holder, { id, bytes }] of blobs) {
      const other = 1 - holder;
      const res = await fetch(`${c.url(other)}/v1/blobs/${id}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      const part = await fetch(`${c.url(other)}/v1/blobs/${id}`, { headers: { range: 'bytes=1048570-2097160' } });
      expect(part.status).toBe(206);
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(1048570, 2097161))).toBe(true);
    }
  });

  it('the internal route serves local copies to peers with the secret only', async () => {
    const [holder, { id, bytes }] = [...blobs][0]!;
    const url = `${c.url(holder)}/internal/v1/blobs/${id}`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { 'x-blobstore-cluster-secret': 'wrong' } })).status).toBe(401);
    const ok = await fetch(url, { headers: { 'x-blobstore-cluster-secret': SECRET } });
    expect(ok.status).toBe(200);
    expect(Buffer.from(await ok.arrayBuffer()).equals(bytes)).toBe(true);
    const range = await fetch(url, { headers: { 'x-blobstore-cluster-secret': SECRET, range: 'bytes=5-9' } });
    expect(range.status).toBe(206);
    expect(range.headers.get('content-range')).toBe(`bytes 5-9/${bytes.length}`);
    expect(Buffer.from(await range.arrayBuffer()).equals(bytes.subarray(5, 10))).toBe(true);
    // Never on another node's behalf: the node without a copy answers 404 here.
    expect((await fetch(`${c.url(1 - holder)}/internal/v1/blobs/${id}`, { headers: { 'x-blobstore-cluster-secret': SECRET } })).status).toBe(404);
  });

  it('the stat route tells peers with the secret only what the node holds of a blob', async () => {
    const [holder, { id, bytes }] = [...blobs][0]!;
    const stat = (node: number, headers: Record<string, string> = { 'x-blobstore-cluster-secret': SECRET }) => fetch(`${c.url(node)}/internal/v1/stat/${id}`, { headers });
    expect((await stat(holder, {})).status).toBe(401);
    expect((await stat(holder, { 'x-blobstore-cluster-secret': 'wrong' })).status).toBe(401);
    const held = await stat(holder);
    expect(held.status).toBe(200);
    const answer = (await held.json()) as { kind: string; size: number; checksum: string; indices: number[] };
    expect(answer.kind).toBe('blob');
    expect(answer.size).toBe(bytes.length);
    expect(answer.checksum.slice(0, 32)).toBe(id);
    expect(answer.indices).toEqual([]);
    expect(await (await stat(1 - holder)).json()).toEqual({ kind: 'none' });
    expect((await fetch(`${c.url(holder)}/internal/v1/stat/not-an-id`, { headers: { 'x-blobstore-cluster-secret': SECRET } })).status).toBe(400);
  });

  it('a column streamed before its id is known is committed only as the seal at its body\'s end names its blob', async () => {
    // Column 0 of an EC42 blob of 8 MiB in 2 MiB shards, placed by a key chosen before the id.
    const blob = patternBytes(8 * MiB, 5151);
    const column = blob.subarray(0, 2 * MiB);
    const placement = Buffer.alloc(16, 0x5a).toString('hex');
    const id = blake3(blob).subarray(0, 16).toString('hex');
    const seal = (size: number): Buffer => Buffer.from(metaHeaderLines({ size, checksum: blake3(blob), createdAtNs: 1_700_000_000_000_000_000n, policy: 4, labels: Buffer.from('{"team":"ec"}') }));
    const put = (tail: Buffer) => fetch(`${c.url(1)}/internal/v1/shards/${placement}/0`, {
      method: 'PUT',
      headers: {
        'x-blobstore-cluster-secret': SECRET, 'x-blobstore-seal': 'in-body', 'x-blobstore-size': String(blob.length), 'x-blobstore-policy': '4',
        'x-blobstore-shard-size': String(2 * MiB), 'x-blobstore-column-size': String(2 * MiB),
      },
      body: Buffer.concat([column, blake3(column), tail]),
    });
    const column0 = () => fetch(`${c.url(1)}/internal/v1/shards/${id}/0`, { headers: { 'x-blobstore-cluster-secret': SECRET } });
    // No seal, or one that names a blob of another size: refused, and nothing is kept.
    expect((await put(Buffer.alloc(0))).status).toBe(400);
    expect((await put(seal(blob.length + 1))).status).toBe(400);
    expect((await put(Buffer.from('X-Blobstore-Size 8\r\n'))).status).toBe(400);
    expect((await column0()).status).toBe(404);
    await waitFor(() => partFiles(c, 1).length === 0, { what: 'the refused columns\' temp files gone' });
    // The seal names the blob: column 0 of its id, durable, with the blob's metadata and the key.
    const sealed = await put(seal(blob.length));
    expect(sealed.status, await sealed.clone().text()).toBe(200);
    expect(await sealed.json()).toEqual({ created: true, declined: false });
    const res = await column0();
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(column)).toBe(true);
    const stat = (await (await fetch(`${c.url(1)}/internal/v1/stat/${id}`, { headers: { 'x-blobstore-cluster-secret': SECRET } })).json()) as { kind: string; size: number; indices: number[]; placement: string; labels: string };
    expect(stat).toMatchObject({ kind: 'columns', size: blob.length, indices: [0], placement });
    expect(Buffer.from(stat.labels, 'base64').toString()).toBe('{"team":"ec"}');

    // For a reader that checks the bytes itself: the column's own checksum, the chunks' chaining
    // values in the column's tree, then the bytes.
    const checked = (range: string, values = '1') => fetch(`${c.url(1)}/internal/v1/shards/${id}/0`, { headers: { 'x-blobstore-cluster-secret': SECRET, 'x-blobstore-chunk-values': values, range } });
    const second = await checked(`bytes=${MiB}-${2 * MiB - 1}`);
    expect(second.status).toBe(206);
    const body = Buffer.from(await second.arrayBuffer());
    expect(body.length).toBe(8 + 32 + 32 + MiB);
    expect(body.readUInt32LE(4), 'mode: the reader checks').toBe(1);
    expect(body.subarray(8, 40).equals(blake3(column)), 'the column\'s checksum').toBe(true);
    expect(body.subarray(40, 72).equals(chunkValuesOf(column.subarray(MiB), MiB))).toBe(true);
    expect(body.subarray(72).equals(column.subarray(MiB))).toBe(true);
    expect((await checked('bytes=0-2097151')).status).toBe(206);
    expect((await checked('bytes=5-1048575')).status, 'a range off the chunks').toBe(400);
    expect((await checked('bytes=0-1048575', 'yes')).status).toBe(400);
    expect((await fetch(`${c.url(1)}/internal/v1/shards/${id}/0`, { headers: { 'x-blobstore-chunk-values': '1' } })).status, 'no secret: refused first').toBe(401);
  });

  it('a small REPLICA2 blob (a replica batch) reaches the other node with its original metadata', async () => {
    const bytes = patternBytes(3001, 4243);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '2', 'X-Blobstore-Labels': '{"team":"ingest"}' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    await waitFor(async () => (await holdersOf(c, id)).length === 2, { what: 'two copies' });
    const stats = await Promise.all([0, 1].map(async (i) => (await (await fetch(`${c.url(i)}/v1/blobs/${id}/stat`)).json()) as { meta: object }));
    expect(stats[1]!.meta).toEqual(stats[0]!.meta);
    const copy = await fetch(`${c.url(1)}/v1/blobs/${id}`);
    expect(Buffer.from(await copy.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('a large REPLICA2 blob reaches the other node byte-exact, with its original metadata', async () => {
    const bytes = patternBytes(5 * 1024 * 1024 + 3, 4242);
    const res = await putRaw(c.url(0), bytes, { 'X-Blobstore-Policy': '2', 'X-Blobstore-Labels': '{"team":"ingest","n":"7"}' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    await waitFor(async () => (await holdersOf(c, id)).length === 2, { what: 'two copies' });
    const heads = await Promise.all([0, 1].map((i) => fetch(`${c.url(i)}/v1/blobs/${id}`, { method: 'HEAD' })));
    for (const name of ['x-blobstore-blob-size', 'x-blobstore-created-at', 'x-blobstore-policy']) {
      expect(heads[1]!.headers.get(name), name).toBe(heads[0]!.headers.get(name));
    }
    const stats = await Promise.all([0, 1].map(async (i) => (await (await fetch(`${c.url(i)}/v1/blobs/${id}/stat`)).json()) as { meta: { labels: object } }));
    expect(stats[1]!.meta.labels).toEqual({ team: 'ingest', n: '7' });
    expect(stats[1]!.meta).toEqual(stats[0]!.meta);
    // Read from the replica's disk, not from node 0: stop node 0 first.
    await c.stop(0);
    const copy = await fetch(`${c.url(1)}/v1/blobs/${id}`);
    expect(Buffer.from(await copy.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('the replica route refuses calls without the secret, and bytes that are not the ones named', async () => {
    const bytes = patternBytes(2 * 1024 * 1024, 99);
    const put = (secret: string, body: Buffer, checksum: string, id: string): Promise<Response> => fetch(`${c.url(1)}/internal/v1/replicas/${id}`, {
      method: 'PUT', body, headers: {
        'x-blobstore-cluster-secret': secret, 'x-blobstore-size': String(body.length), 'x-blobstore-checksum': checksum,
        'x-blobstore-created-at': '1', 'x-blobstore-policy': '2', 'x-blobstore-labels-encoded': '',
      },
    });
    const id = await expectedId(bytes);
    const hasher = await createBLAKE3(256);
    hasher.update(bytes);
    const checksum = hasher.digest('hex');
    expect((await put('wrong', bytes, checksum, id)).status).toBe(401);
    const other = Buffer.from(bytes);
    other[12345] ^= 1;
    const refused = await put(SECRET, other, checksum, id);
    expect(refused.status).toBe(400);
    expect(await holdersOf(c, id)).toEqual([]);
    const ok = await put(SECRET, bytes, checksum, id);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ created: true });
    expect(await holdersOf(c, id)).toEqual([1]);
  });

  it('the batch route refuses calls without the secret, a batch cut short, and bytes that are not the ones named; stores the rest with their metadata', async () => {
    const blobs = await Promise.all([5000, 1, 4096].map(async (size, k) => {
      const data = patternBytes(size, 777 + k);
      const hasher = await createBLAKE3(256);
      hasher.update(data);
      const checksum = Buffer.from(hasher.digest('binary'));
      return { meta: { id: checksum.subarray(0, 16), checksum, size, createdAtNs: 1234567890123456789n, policy: 2, labels: Buffer.from(k === 0 ? '{"team":"batch"}' : '') }, data };
    }));
    const post = (secret: string, body: Buffer): Promise<Response> => fetch(`${c.url(1)}/internal/v1/replicas`, { method: 'POST', body, headers: { 'x-blobstore-cluster-secret': secret } });
    const bodyOf = (list: typeof blobs): Buffer => Buffer.concat(replicaBatchBody(list).parts);
    expect((await post('wrong', bodyOf(blobs))).status).toBe(401);
    expect((await post(SECRET, bodyOf(blobs).subarray(0, 100))).status).toBe(400);
    const corrupt = blobs.map((b, k) => (k === 2 ? { ...b, data: Buffer.from(b.data).fill(1, 0, 1) } : b));
    expect((await post(SECRET, bodyOf(corrupt))).status).toBe(400);
    const ids = blobs.map((b) => b.meta.id.toString('hex'));
    expect(await holdersOf(c, ids[2]!)).toEqual([]);
    const ok = await post(SECRET, bodyOf(blobs));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ stored: 3 });
    for (const [k, id] of ids.entries()) {
      expect(await holdersOf(c, id)).toEqual([1]);
      const copy = await fetch(`${c.url(1)}/v1/blobs/${id}`);
      expect(Buffer.from(await copy.arrayBuffer()).equals(blobs[k]!.data)).toBe(true);
    }
    const stat = (await (await fetch(`${c.url(1)}/v1/blobs/${ids[0]}/stat`)).json()) as { meta: { labels: object; created_at: string } };
    expect(stat.meta.labels).toEqual({ team: 'batch' });
  });

  it('a batch body of many parts (1.2 MB, read in pieces) stores every blob byte-exact', async () => {
    const blobs = Array.from({ length: 40 }, (_, k) => {
      const data = patternBytes(30_000 + k, 900 + k);
      const checksum = blake3(data);
      return { meta: { id: checksum.subarray(0, 16), checksum, size: data.length, createdAtNs: 1n, policy: 2, labels: Buffer.alloc(0) }, data };
    });
    const res = await fetch(`${c.url(1)}/internal/v1/replicas`, {
      method: 'POST', body: Buffer.concat(replicaBatchBody(blobs).parts), headers: { 'x-blobstore-cluster-secret': SECRET },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ stored: 40 });
    for (const { meta, data } of blobs) {
      const copy = await fetch(`${c.url(1)}/v1/blobs/${meta.id.toString('hex')}`);
      expect(Buffer.from(await copy.arrayBuffer()).equals(data)).toBe(true);
    }
  });

  it('the column batch route refuses calls without the secret and a batch cut short; stores each column on its own, with the blob\'s column checksums, and refuses one whose bytes are not its checksum', async () => {
    // Two 3000-byte EC42 blobs (one stripe, columns of 750 bytes): columns 1 and 4 of the first,
    // column 3 of the second with another blob's bytes.
    const blobs = [96, 97].map((seed) => {
      const bytes = patternBytes(3000, seed);
      const checksum = blake3(bytes);
      const columns = [0, 1, 2, 3, 4, 5].map((i) => patternBytes(750, seed * 10 + i));
      return { id: checksum.subarray(0, 16), checksum, columns, checksums: Buffer.concat(columns.map((col) => blake3(col))) };
    });
    const column = (b: (typeof blobs)[number], index: number, data = b.columns[index]!): BatchColumn => ({
      header: {
        id: b.id, index, policy: 4, shardBytes: 1024 * 1024, blobBytes: 3000, blobChecksum: b.checksum,
        blobLabels: Buffer.from(index === 1 ? '{"team":"columns"}' : ''), createdAtNs: 1234567890123456789n,
      },
      data, columnChecksum: blake3(b.columns[index]!), columnChecksums: b.checksums,
    });
    const batch = [column(blobs[0]!, 1), column(blobs[1]!, 3, blobs[0]!.columns[3]), column(blobs[0]!, 4)];
    const body = Buffer.concat(shardBatchBody(batch).parts);
    const post = (secret: string, bytes: Buffer): Promise<Response> => fetch(`${c.url(1)}/internal/v1/shards`, { method: 'POST', body: bytes, headers: { 'x-blobstore-cluster-secret': secret } });
    const stat = async (id: Buffer): Promise<{ kind: string; indices?: number[]; column_checksums?: string }> =>
      (await fetch(`${c.url(1)}/internal/v1/stat/${id.toString('hex')}`, { headers: { 'x-blobstore-cluster-secret': SECRET } })).json() as Promise<{ kind: string }>;
    expect((await post('wrong', body)).status).toBe(401);
    expect((await post(SECRET, body.subarray(0, body.length - 1))).status).toBe(400);
    expect(await stat(blobs[0]!.id)).toMatchObject({ kind: 'none' });
    const res = await post(SECRET, body);
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: { stored: boolean; created: boolean; error: string }[] };
    expect(results.map((r) => [r.stored, r.created])).toEqual([[true, true], [false, false], [true, true]]);
    expect(results[1]!.error).toContain('do not match');
    expect(await stat(blobs[0]!.id)).toMatchObject({ kind: 'columns', indices: [1, 4], column_checksums: blobs[0]!.checksums.toString('hex') });
    expect(await stat(blobs[1]!.id)).toMatchObject({ kind: 'none' });
    // The columns read back as stored; the same batch again stores nothing new.
    const read = await fetch(`${c.url(1)}/internal/v1/shards/${blobs[0]!.id.toString('hex')}/4`, { headers: { 'x-blobstore-cluster-secret': SECRET } });
    expect(Buffer.from(await read.arrayBuffer()).equals(blobs[0]!.columns[4]!)).toBe(true);
    const again = (await (await post(SECRET, body)).json()) as { results: { stored: boolean; created: boolean }[] };
    expect(again.results.map((r) => [r.stored, r.created])).toEqual([[true, false], [false, false], [true, false]]);
    expect((await fetch(`${c.url(1)}/v1/blobs/${blobs[0]!.id.toString('hex')}`, { method: 'DELETE' })).status).toBeLessThan(300);
  });

  it('a second repair of a column while one writes it is refused at once (409); once the first ends, the column can be repaired, and once held it is refused again', async () => {
    // A 3000-byte EC42 blob: one stripe, columns of 750 bytes.
    const blob = patternBytes(3000, 91);
    const checksum = blake3(blob);
    const id = checksum.subarray(0, 16).toString('hex');
    const headers: Record<string, string> = { 'x-blobstore-cluster-secret': SECRET, 'x-blobstore-repair': '1', 'x-blobstore-shard-size': String(1024 * 1024), 'x-blobstore-column-size': '750' };
    for (const line of metaHeaderLines({ size: blob.length, checksum, createdAtNs: 1n, policy: 4, labels: Buffer.alloc(0) }).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const path = `/internal/v1/shards/${id}/0`;
    const column = patternBytes(750, 92);
    const put = (checksum: Buffer): Promise<Response> => fetch(`${c.url(1)}${path}`, { method: 'PUT', headers, body: Buffer.concat([column, checksum]) });
    // A probe that can never commit (its column's checksum is wrong): 409 while the column is
    // claimed, else refused for its bytes.
    const probe = (): Promise<Response> => put(Buffer.alloc(32));
    // The first repair's body stays open: its column is claimed on the node while it writes.
    const first = connect(Number(new URL(c.url(1)).port), '127.0.0.1');
    first.on('error', () => undefined);
    const head = `PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    first.write(Buffer.concat([Buffer.from(`${head}64\r\n`), column.subarray(0, 100), Buffer.from('\r\n')]));
    try {
      let refused: Response | undefined;
      await waitFor(async () => (refused = await probe()).status === 409, { what: () => `a second repair refused while the first writes (last: ${refused?.status})` });
      expect(await refused!.json()).toMatchObject({ code: 409, message: expect.stringContaining('repair') });
    } finally {
      first.destroy();
    }
    // The claim goes with the first request: the column can be repaired.
    let after: Response | undefined;
    await waitFor(async () => (after = await probe()).status !== 409, { what: 'the claim given back once the first repair ended' });
    expect(after!.status).toBe(400);
    const answer = await put(blake3(column));
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ created: true, declined: false });
    // Held now: a later repair of it is refused at once too.
    const again = await put(blake3(column));
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ message: expect.stringContaining('held here') });
    expect((await fetch(`${c.url(1)}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBeLessThan(300);
  });

  it('a column PUT with the blob\'s column checksums keeps them (stat shows them); one whose checksum is not its entry there, whose bytes are not that checksum, or that brings another count of them is refused, and nothing is kept; a drop unless its checksum is the one given takes only a column whose checksum differs', async () => {
    // A 3000-byte EC42 blob: one stripe, columns of 750 bytes, column 2 stored on node 1.
    const blob = patternBytes(3000, 93);
    const checksum = blake3(blob);
    const id = checksum.subarray(0, 16).toString('hex');
    const headers: Record<string, string> = { 'x-blobstore-cluster-secret': SECRET, 'x-blobstore-shard-size': String(1024 * 1024), 'x-blobstore-column-size': '750' };
    for (const line of metaHeaderLines({ size: blob.length, checksum, createdAtNs: 1n, policy: 4, labels: Buffer.alloc(0) }).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const column = patternBytes(750, 94);
    const checksums = Buffer.concat([0, 1, 2, 3, 4, 5].map((i) => (i === 2 ? blake3(column) : blake3(Buffer.from(`column ${i}`)))));
    const put = (trailer: Buffer, count = '6', bytes = column): Promise<Response> => fetch(`${c.url(1)}/internal/v1/shards/${id}/2`, {
      method: 'PUT', headers: { ...headers, 'x-blobstore-column-checksums': count }, body: Buffer.concat([bytes, trailer]),
    });
    const stat = async (): Promise<{ kind: string; indices: number[]; column_checksums: string }> =>
      (await fetch(`${c.url(1)}/internal/v1/stat/${id}`, { headers: { 'x-blobstore-cluster-secret': SECRET } })).json() as Promise<{ kind: string; indices: number[]; column_checksums: string }>;
    const other = Buffer.from(checksums);
    blake3(Buffer.from('another column 2')).copy(other, 2 * 32);
    const refusals: [string, Response][] = [
      ['its checksum is not its entry of the column checksums', await put(Buffer.concat([blake3(column), other]))],
      ['its bytes are not the checksum sent', await put(Buffer.concat([blake3(column), checksums]), '6', patternBytes(750, 95))],
      ['five column checksums for six columns', await put(Buffer.concat([blake3(column), checksums.subarray(0, 5 * 32)]), '5')],
    ];
    for (const [why, res] of refusals) expect(res.status, why).toBe(400);
    expect(await stat()).toMatchObject({ kind: 'none' });
    const stored = await put(Buffer.concat([blake3(column), checksums]));
    expect(stored.status, await stored.clone().text()).toBe(200);
    expect(await stored.json()).toEqual({ created: true, declined: false });
    expect(await stat()).toMatchObject({ kind: 'columns', indices: [2], column_checksums: checksums.toString('hex') });
    // Repair has a column dropped only if its checksum is not the one its store computed.
    const address = (await c.state(1)).nodes.find((n) => n.node_id === c.ids[1])!.grpc_address;
    const internal = client('InternalService', address);
    const metadata = new grpc.Metadata();
    metadata.set('x-blobstore-cluster-secret', SECRET);
    try {
      const drop = (unless: Buffer): Promise<{ deleted: number }> => unary(internal, 'DeleteShard', { id: { id: Buffer.from(id, 'hex') }, index: 2, unless_checksum: unless }, { metadata });
      expect(await drop(blake3(column))).toEqual({ deleted: 0 });
      expect(await stat()).toMatchObject({ kind: 'columns', indices: [2] });
      expect(await drop(blake3(Buffer.from('another column 2')))).toEqual({ deleted: 1 });
      expect(await stat()).toMatchObject({ kind: 'none' });
    } finally {
      internal.close();
    }
  });
});

describe('the data path when the peers\' API addresses cannot be reached', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  /** Node i's gRPC access lines of InternalService methods that carry a blob's bytes. */
  const bulkGrpcCalls = (i: number): string[] => logLines(c.node(i).output())
    .filter((l) => l.access === 'grpc' && /^InternalService\.(FetchBlob|ReplicateStream|ReplicateBatch|FetchShard|StoreShard)$/.test(String(l.method)))
    .map((l) => String(l.method));

  it('the bytes wait for the data plane: a read answers 503 at once, a copy stays queued, and nothing moves to gRPC', async () => {
    // Each node tells the others an API address nobody listens on; its gRPC address works.
    const nowhere = await Promise.all([0, 1].map(() => freePort()));
    c = await TestCluster.start({
      size: 2, args: ['--handoff-interval-ms', '500', '--log-level', 'debug', '--log-format', 'json', '--metrics-addr', 'same'],
      nodeArgs: (i) => ['--advertise-addr', `127.0.0.1:${nowhere[i]}`],
    });
    await c.converged({ members: c.ids });
    const stored = await putRaw(c.url(0), patternBytes(2 * 1024 * 1024 + 9, 2222), { 'X-Blobstore-Policy': '2' });
    expect(stored.status).toBe(201);
    const { id: replicaId } = (await stored.json()) as { id: string };
    const queued = async (): Promise<number> => sampleValue(parseExposition(await (await fetch(`${c.url(0)}/metrics`)).text()),
      'blobstore_replication_queue_depth', 'blobstore_replication_queue_depth') ?? -1;
    // A small one too: its batch waits for the data plane as well.
    const small = await putRaw(c.url(0), patternBytes(3000, 2223), { 'X-Blobstore-Policy': '2' });
    expect(small.status).toBe(201);
    const { id: smallId } = (await small.json()) as { id: string };
    await waitFor(async () => (await queued()) === 2, { what: 'both REPLICA2 copies queued on node 0' });
    for (const [holder, { id }] of await oneCopyEach(c, 2 * 1024 * 1024 + 5)) {
      const started = performance.now();
      const res = await fetch(`${c.url(1 - holder)}/v1/blobs/${id}`);
      expect(res.status, `GET of node ${holder}'s blob from node ${1 - holder}`).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as { message: string }).message).toContain(id);
      expect(performance.now() - started).toBeLessThan(5_000);
    }
    expect(await holdersOf(c, replicaId)).toEqual([0]);
    expect(await holdersOf(c, smallId)).toEqual([0]);
    expect(await queued()).toBe(2);
    expect([...bulkGrpcCalls(0), ...bulkGrpcCalls(1)]).toEqual([]);
  });
});
