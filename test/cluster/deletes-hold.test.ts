/**
 * A user's delete on a node holds against copies of the blob made before it (docs/cluster.md,
 * Deletes): a replica that reaches the node afterwards, from a replication queue (a sender cut off
 * while the delete ran, or a copy on its way), is declined like a repair's; a copy of a store made
 * after the delete is taken. Before, only repair traffic was declined, so a queued copy brought a
 * blob back that a user had deleted on every node. A delete on a node that holds nothing of the
 * blob yet holds too, across a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';

let node: NodeProcess;
/** Remembers one delete of a blob it does not hold, and every delete for RETENTION_MS. */
let forgetful: NodeProcess;
const RETENTION_MS = 2_000;

beforeAll(async () => {
  // Cluster nodes (gRPC on): their internal routes take copies; on loopback, no cluster secret.
  [node, forgetful] = await Promise.all([
    startNode({ args: ['--grpc-addr', '127.0.0.1:0'] }),
    startNode({ args: ['--grpc-addr', '127.0.0.1:0', '--unheld-delete-marks', '1', '--delete-retention-ms', String(RETENTION_MS)] }),
  ]);
});
afterAll(async () => {
  await Promise.all([node?.stop(), forgetful?.stop()]);
});

interface Stat { size: number; checksum: string; created_at: string; policy: number; labels: string }

/** A peer's replica PUT of `bytes` (replication traffic, not repair) to `to`, made at `createdAtNs`. */
async function replicate(id: string, bytes: Buffer, stat: Stat, createdAtNs: string, to = node): Promise<unknown> {
  const res = await fetch(`${to.url}/internal/v1/replicas/${id}`, {
    method: 'PUT',
    headers: {
      'x-blobstore-size': String(stat.size), 'x-blobstore-checksum': stat.checksum, 'x-blobstore-created-at': createdAtNs,
      'x-blobstore-policy': String(stat.policy), 'x-blobstore-labels-encoded': stat.labels, 'content-type': 'application/octet-stream',
    },
    body: bytes,
  });
  expect(res.status).toBe(200);
  return res.json();
}

/** Stores `bytes` on `on` (standing for the node a client stored them on): their id and metadata there. */
async function storedOn(on: NodeProcess, bytes: Buffer): Promise<{ id: string; stat: Stat }> {
  const stored = await putRaw(on.url, bytes, { 'X-Blobstore-Policy': '1' });
  expect(stored.status).toBe(201);
  const { id } = (await stored.json()) as { id: string };
  return { id, stat: (await (await fetch(`${on.url}/internal/v1/stat/${id}`)).json()) as Stat };
}

const deleteOn = async (on: NodeProcess, id: string): Promise<void> => {
  const res = await fetch(`${on.url}/v1/blobs/${id}`, { method: 'DELETE' });
  expect(res.status).toBe(200);
};

describe('a delete here against copies from elsewhere', () => {
  it('a replica made before the delete is declined; one of a store after it is taken', async () => {
    const bytes = patternBytes(200_000, 4711);
    const stored = await putRaw(node.url, bytes, { 'X-Blobstore-Policy': '1' });
    expect(stored.status).toBe(201);
    const { id } = (await stored.json()) as { id: string };
    const stat = (await (await fetch(`${node.url}/internal/v1/stat/${id}`)).json()) as Stat;
    expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBe(200);

    // The copy a replication queue still held: made when the blob was stored, before the delete.
    expect(await replicate(id, bytes, stat, stat.created_at)).toEqual({ created: false });
    expect((await fetch(`${node.url}/v1/blobs/${id}`)).status).toBe(404);

    // The same bytes stored again elsewhere after the delete: that copy is the user's new blob.
    const later = String(BigInt(Date.now() + 1000) * 1_000_000n);
    expect(await replicate(id, bytes, stat, later)).toEqual({ created: true });
    const back = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('a delete of a blob this node holds nothing of yet holds too: the store\'s copy arriving after it is declined', async () => {
    const bytes = patternBytes(50_000, 4712);
    const { id, stat } = await storedOn(forgetful, bytes);
    await deleteOn(node, id);
    expect(await replicate(id, bytes, stat, stat.created_at)).toEqual({ created: false });
    expect((await fetch(`${node.url}/v1/blobs/${id}`)).status).toBe(404);
    const later = String(BigInt(Date.now() + 1000) * 1_000_000n);
    expect(await replicate(id, bytes, stat, later)).toEqual({ created: true });
  });

  it('such deletes are kept in memory, at most unheldDeleteMarks of them: the oldest goes first', async () => {
    const first = patternBytes(40_000, 4713);
    const second = patternBytes(40_000, 4714);
    const a = await storedOn(node, first);
    const b = await storedOn(node, second);
    await deleteOn(forgetful, a.id);
    await deleteOn(forgetful, b.id);
    expect(await replicate(b.id, second, b.stat, b.stat.created_at, forgetful)).toEqual({ created: false });
    expect(await replicate(a.id, first, a.stat, a.stat.created_at, forgetful)).toEqual({ created: true });
  });

  it('a delete of a blob held nothing of holds after a restart too', async () => {
    const bytes = patternBytes(30_000, 4716);
    const { id, stat } = await storedOn(node, bytes);
    const restarting = await startNode({ args: ['--grpc-addr', '127.0.0.1:0'] });
    try {
      await deleteOn(restarting, id);
      expect(await restarting.stop()).toBe(0);
    } finally {
      await restarting.kill();
    }
    const again = await startNode({ dataDir: restarting.dataDir, args: ['--grpc-addr', '127.0.0.1:0'] });
    try {
      expect(await replicate(id, bytes, stat, stat.created_at, again)).toEqual({ created: false });
      const later = String(BigInt(Date.now() + 1000) * 1_000_000n);
      expect(await replicate(id, bytes, stat, later, again)).toEqual({ created: true });
    } finally {
      await again.stop();
    }
  });

  it('a delete is remembered for deleteRetentionMs, then a copy made before it is taken again', async () => {
    const bytes = patternBytes(60_000, 4715);
    const { id, stat } = await storedOn(forgetful, bytes);
    await deleteOn(forgetful, id);
    const deletedAt = Date.now();
    expect(await replicate(id, bytes, stat, stat.created_at, forgetful)).toEqual({ created: false });
    // The node forgets it once it is older than the retention, at its next look (every RETENTION_MS here).
    await waitFor(async () => ((await replicate(id, bytes, stat, stat.created_at, forgetful)) as { created: boolean }).created, {
      what: 'the old delete forgotten', timeoutMs: 20_000,
    });
    expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(RETENTION_MS);
    expect((await fetch(`${forgetful.url}/v1/blobs/${id}`)).status).toBe(200);
  });
});
