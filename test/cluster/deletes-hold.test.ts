/**
 * A user's delete on a node holds against copies of the blob made before it (docs/cluster.md,
 * Deletes): a replica that reaches the node afterwards, from a replication queue (a sender cut off
 * while the delete ran, or a copy on its way), is declined like a repair's; a copy of a store made
 * after the delete is taken. Before, only repair traffic was declined, so a queued copy brought a
 * blob back that a user had deleted on every node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';

let node: NodeProcess;

beforeAll(async () => {
  // A cluster node (gRPC on): its internal routes take copies; on loopback, no cluster secret.
  node = await startNode({ args: ['--grpc-addr', '127.0.0.1:0'] });
});
afterAll(async () => {
  await node?.stop();
});

interface Stat { size: number; checksum: string; created_at: string; policy: number; labels: string }

/** A peer's replica PUT of `bytes` (replication traffic, not repair), made at `createdAtNs`. */
async function replicate(id: string, bytes: Buffer, stat: Stat, createdAtNs: string): Promise<unknown> {
  const res = await fetch(`${node.url}/internal/v1/replicas/${id}`, {
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
});
