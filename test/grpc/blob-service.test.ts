/**
 * BlobService over real gRPC (grpc-js client from the repo's .proto files) against a real node:
 * byte-exact round trips, dedup, stat, delete, list paging, and the spec's status codes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, client, failure, patterned, startGrpcNode, Status, unary } from './helpers.js';

let n: GrpcNode;

beforeAll(async () => {
  // A small message limit so RESOURCE_EXHAUSTED is cheap to reach (unary get and put).
  n = await startGrpcNode({ args: ['--grpc-max-message-bytes', '2MiB'] });
});

afterAll(async () => {
  await n?.stop();
});

const NONE = 1;

describe('Put and Get', () => {
  for (const size of [0, 4096, 1024 * 1024 + 7]) {
    it(`round-trips ${size} bytes exactly, with meta`, async () => {
      const data = patterned(size, size + 1);
      const put = await unary(n.blobs, 'Put', { data, policy: NONE, labels: { team: 'ingest', 'k.v/x-1': 'é' } });
      expect(put.id.id).toHaveLength(16);
      expect(Number(put.size)).toBe(size);
      const got = await unary(n.blobs, 'Get', { id: put.id });
      expect(Buffer.compare(got.data ?? Buffer.alloc(0), data)).toBe(0);
      expect(Number(got.meta.size)).toBe(size);
      expect(got.meta.labels).toEqual({ team: 'ingest', 'k.v/x-1': 'é' });
      expect(got.meta.policy).toBe(NONE);
      expect(got.meta.checksum).toHaveLength(32);
      expect(got.meta.checksum.subarray(0, 16).equals(put.id.id)).toBe(true);
      expect(BigInt(got.meta.created_at)).toBeGreaterThan(1_600_000_000_000_000_000n);
      expect(got.meta.modified_at).toBe(got.meta.created_at);
    });
  }

  it('stores the same bytes once: the second put answers the same id and keeps the first labels', async () => {
    const data = patterned(5000, 77);
    const first = await unary(n.blobs, 'Put', { data, labels: { first: 'yes' } });
    const second = await unary(n.blobs, 'Put', { data, labels: { second: 'yes' } });
    expect(second.id.id.equals(first.id.id)).toBe(true);
    const stat = await unary(n.blobs, 'Stat', { id: first.id });
    expect(stat.meta.labels).toEqual({ first: 'yes' });
  });

  it('a put without a policy is stored as REPLICA3 (UNSPECIFIED is treated as REPLICA3)', async () => {
    const put = await unary(n.blobs, 'Put', { data: patterned(10, 3) });
    const stat = await unary(n.blobs, 'Stat', { id: put.id });
    expect(stat.meta.policy).toBe(3);
  });

  it('Get of a missing blob answers NOT_FOUND', async () => {
    const err = await failure(unary(n.blobs, 'Get', { id: { id: Buffer.alloc(16, 0xab) } }));
    expect(err.code).toBe(Status.NOT_FOUND);
  });

  it('a unary Get of a blob larger than the message limit answers RESOURCE_EXHAUSTED (use the stream)', async () => {
    const data = patterned(2 * 1024 * 1024 - 1000, 9);
    const put = await unary(n.blobs, 'Put', { data, policy: NONE });
    const err = await failure(unary(n.blobs, 'Get', { id: put.id }));
    expect(err.code).toBe(Status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/stream/);
  });

  it('a unary Put over the message limit answers RESOURCE_EXHAUSTED', async () => {
    const err = await failure(unary(n.blobs, 'Put', { data: Buffer.alloc(3 * 1024 * 1024, 1) }));
    expect(err.code).toBe(Status.RESOURCE_EXHAUSTED);
  });
});

describe('Stat and Delete', () => {
  it('Stat of a missing blob answers exists false without meta', async () => {
    const stat = await unary(n.blobs, 'Stat', { id: { id: Buffer.alloc(16, 0xcd) } });
    expect(stat.exists ?? false).toBe(false);
    expect(stat.meta).toBeUndefined();
  });

  it('Delete answers deleted true, whether or not the blob existed; the blob is gone', async () => {
    const put = await unary(n.blobs, 'Put', { data: patterned(300, 12), policy: NONE });
    expect((await unary(n.blobs, 'Delete', { id: put.id })).deleted).toBe(true);
    expect((await unary(n.blobs, 'Delete', { id: put.id })).deleted).toBe(true);
    expect((await unary(n.blobs, 'Stat', { id: put.id })).exists ?? false).toBe(false);
    expect((await failure(unary(n.blobs, 'Get', { id: put.id }))).code).toBe(Status.NOT_FOUND);
  });
});

describe('List', () => {
  it('pages through every id with cursors; next_cursor only while has_more', async () => {
    const fresh = await startGrpcNode();
    try {
      const ids = new Set<string>();
      for (let i = 0; i < 25; i++) {
        const put = await unary(fresh.blobs, 'Put', { data: patterned(64, 1000 + i), policy: NONE });
        ids.add(put.id.id.toString('hex'));
      }
      const seen: string[] = [];
      let cursor: Buffer | undefined;
      let pages = 0;
      for (;;) {
        const page = await unary(fresh.blobs, 'List', { limit: 10, cursor });
        pages++;
        for (const id of page.ids ?? []) seen.push(id.id.toString('hex'));
        if (!page.has_more) {
          expect(page.next_cursor).toBeUndefined();
          break;
        }
        expect(page.next_cursor.length).toBeGreaterThan(0);
        cursor = page.next_cursor;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].sort());
      // limit <= 0 means the default page size (100).
      expect((await unary(fresh.blobs, 'List', { limit: 0 })).ids).toHaveLength(25);
      const prefix = seen[0]!.slice(0, 2);
      const filtered = await unary(fresh.blobs, 'List', { prefix });
      expect((filtered.ids ?? []).map((i: { id: Buffer }) => i.id.toString('hex'))).toEqual(seen.filter((s) => s.startsWith(prefix)));
    } finally {
      await fresh.stop();
    }
  });

  it('a tampered cursor answers INVALID_ARGUMENT', async () => {
    const err = await failure(unary(n.blobs, 'List', { cursor: Buffer.alloc(32, 7) }));
    expect(err.code).toBe(Status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/cursor/);
  });
});

describe('status codes', () => {
  for (const [name, id] of [
    ['missing', undefined],
    ['empty', { id: Buffer.alloc(0) }],
    ['15 bytes', { id: Buffer.alloc(15) }],
    ['17 bytes', { id: Buffer.alloc(17) }],
  ] as const) {
    it(`a blob id that is ${name} answers INVALID_ARGUMENT naming an invalid blob ID (Get, Stat, Delete, GetStream)`, async () => {
      for (const method of ['Get', 'Stat', 'Delete']) {
        const err = await failure(unary(n.blobs, method, { id }));
        expect(err.code, method).toBe(Status.INVALID_ARGUMENT);
        expect(err.details, method).toMatch(/invalid blob ID/);
      }
    });
  }

  it('an unknown policy number answers INVALID_ARGUMENT', async () => {
    const err = await failure(unary(n.blobs, 'Put', { data: Buffer.from('x'), policy: 42 }));
    expect(err.code).toBe(Status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/policy/);
  });

  it('EC on one node answers FAILED_PRECONDITION with the counts', async () => {
    const err = await failure(unary(n.blobs, 'Put', { data: Buffer.from('x'), policy: 5 }));
    expect(err.code).toBe(Status.FAILED_PRECONDITION);
    expect(err.details).toBe('not enough nodes for EC: have 1, need 10');
  });

  it('bad labels answer INVALID_ARGUMENT (key characters, too many)', async () => {
    const bad = await failure(unary(n.blobs, 'Put', { data: Buffer.from('x'), labels: { 'sp ace': 'v' } }));
    expect(bad.code).toBe(Status.INVALID_ARGUMENT);
    expect(bad.details).toMatch(/label key/);
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
    const tooMany = await failure(unary(n.blobs, 'Put', { data: Buffer.from('x'), labels: many }));
    expect(tooMany.code).toBe(Status.INVALID_ARGUMENT);
  });

  it('ClusterService answers as a one-node cluster; InternalService answers peers, shard rpcs included', async () => {
    const cluster = client('ClusterService', n.target);
    const internal = client('InternalService', n.target);
    try {
      const state = await unary<{ ring_version: string; nodes: { node_id: string; state: string }[] }>(cluster, 'GetState', {});
      expect(state.nodes).toEqual([expect.objectContaining({ node_id: 'test-node', state: 'active' })]);
      expect(Number(state.ring_version)).toBeGreaterThan(0);
      const refused = await unary<{ ok: boolean; commands: string[] }>(cluster, 'Heartbeat', { node_id: 'ghost', used_bytes: 0, blob_count: 0, ring_version: 0 });
      expect(refused).toMatchObject({ ok: false, commands: ['rejoin'] });
      // Proto3 sends no zeros (grpcio, Go, Java leave them out; grpc-js sends what it is given): a
      // member with no blobs, and a caller that knows no ring yet, are answered.
      expect(await unary(cluster, 'Heartbeat', { node_id: 'test-node' })).toMatchObject({ ok: true });
      expect(Number((await unary<{ ring_version: string }>(cluster, 'SyncRing', {})).ring_version)).toBeGreaterThan(0);
      expect((await failure(unary(cluster, 'Join', {}))).code).toBe(Status.INVALID_ARGUMENT);
      const put = await unary<{ id: { id: Buffer } }>(n.blobs, 'Put', { data: Buffer.from('held here'), policy: 1 });
      expect(await unary(internal, 'StatBlob', { id: put.id })).toMatchObject({ exists: true });
      // Shard rpcs check what they are given: no id, no column here, a column that does not fit its layout.
      expect((await failure(unary(internal, 'DeleteShard', {}))).code).toBe(Status.INVALID_ARGUMENT);
      expect(await unary(internal, 'DeleteShard', { id: put.id, index: 0 })).toMatchObject({ deleted: 0 });
      const batch = await unary<{ results: { stored: boolean; error: string }[] }>(internal, 'StoreShardBatch', {
        shards: [{ header: { id: put.id, index: 9, shard_size: 1024, column_size: 1, meta: { size: 9, checksum: Buffer.alloc(32), policy: 4 } }, data: Buffer.alloc(1) }],
      });
      expect(batch.results).toEqual([expect.objectContaining({ stored: false, error: expect.stringMatching(/checksum|index|layout/) })]);
    } finally {
      cluster.close();
      internal.close();
    }
  });
});
