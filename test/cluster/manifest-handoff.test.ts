/**
 * The manifest of an EC blob stored as it streamed in follows the owners of its id
 * (src/cluster/manifest-handoff.ts, docs/erasure-coding.md): on a real 7-node cluster, a node
 * that held one leaves gracefully, and the id's owners on the new ring all hold it, before and
 * after it is gone; the blob reads back from every node. An owner that lost its disk gets it
 * back at the next handoff pass, offered to it alone. Which nodes hold a manifest is read from
 * their index files (LMDB, opened read-only beside the running node).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ring } from '../../src/cluster/ring.js';
import { patternBytes } from '../helpers/blobs.js';
import { expectReadableEverywhere, oneBigClusterAtATime, putWithNodesUp, STREAMED_EC_ARGS, TestCluster } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait.js';

oneBigClusterAtATime();

const MiB = 1024 * 1024;
const EC_ARGS = [...STREAMED_EC_ARGS, '--handoff-interval-ms', '500', '--repair-interval-ms', '1000'];
/** The ring's points per node (setting vnodesPerNode, left at its default). */
const VNODES = 128;
/** Owners that keep an EC42 blob's manifest: m + 1. */
const MANIFEST_COPIES = 3;

/** Whether the node on `dataDir` holds a manifest for `id` (its index read beside it). */
function holdsManifest(dataDir: string, id: string): boolean {
  const env = open({ path: join(dataDir, 'index'), readOnly: true, compression: false, maxDbs: 12, mapSize: 1024 ** 3 });
  try {
    return env.openDB({ name: 'ecm', keyEncoding: 'binary' }).get(Buffer.from(id, 'hex')) !== undefined;
  } finally {
    void env.close();
  }
}

describe('the manifest of a streamed EC42 blob, when a node that held it leaves', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ size: 7, together: true, args: EC_ARGS });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('is held by every owner of the id on the new ring, and the blob reads from every node', async () => {
    const bytes = patternBytes(3 * MiB + 1, 4242);
    const res = await putWithNodesUp(c, 0, bytes, { 'X-Blobstore-Policy': '4' });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { id: string }).id;
    const ownersOn = (ids: string[]): string[] => new Ring(ids.map((nodeId) => ({ nodeId, region: '' })), VNODES).owners(Buffer.from(id, 'hex'), MANIFEST_COPIES);
    const index = (nodeId: string): number => c.ids.indexOf(nodeId);
    const first = ownersOn(c.ids);
    for (const owner of first) expect(holdsManifest(c.dataDirs[index(owner)]!, id)).toBe(true);

    // A holder of the manifest other than node 0 (which is asked to let it go) leaves.
    const leaving = first.find((n) => n !== c.ids[0])!;
    const remaining = c.ids.filter((n) => n !== leaving);
    const next = ownersOn(remaining);
    const newcomer = next.find((n) => !first.includes(n));
    expect(newcomer, `the ring without ${leaving} names a new owner of the id`).toBeDefined();
    const res2 = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ node_id: leaving, graceful: true }) });
    expect(await res2.json()).toEqual({ acknowledged: true });
    await waitFor(async () => !(await c.state(0)).nodes.some((n) => n.node_id === leaving), { what: `${leaving} gone from the state list`, timeoutMs: 60_000 });
    const among = remaining.map(index);
    await c.converged({ among, members: remaining });

    await waitFor(() => next.every((owner) => holdsManifest(c.dataDirs[index(owner)]!, id)), { what: `the manifest on ${next.join(', ')}`, timeoutMs: 20_000 });
    await expectReadableEverywhere(c, new Map([[id, bytes]]), among);
  }, 120_000);

  /** A streamed EC42 blob stored at node 0: its id, bytes, the members, and the owners of its manifest other than node 0. */
  async function storedAtNode0(size: number, seed: number): Promise<{ id: string; bytes: Buffer; members: string[]; owners: string[] }> {
    const members = (await c.state(0)).nodes.map((n) => n.node_id);
    const bytes = patternBytes(size, seed);
    const res = await putWithNodesUp(c, 0, bytes, { 'X-Blobstore-Policy': '4' });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { id: string }).id;
    const owners = new Ring(members.map((nodeId) => ({ nodeId, region: '' })), VNODES).owners(Buffer.from(id, 'hex'), MANIFEST_COPIES).filter((n) => n !== c.ids[0]);
    return { id, bytes, members, owners };
  }

  it('is not offered back to an owner where a user deleted the blob (the delete holds there)', async () => {
    const index = (nodeId: string): number => c.ids.indexOf(nodeId);
    const { id, bytes, members, owners: [deleter, restarted] } = await storedAtNode0(2 * MiB + 7, 4343);
    const d = index(deleter!);
    const r = index(restarted!);
    expect(holdsManifest(c.dataDirs[d]!, id)).toBe(true);
    // A delete is local (the spec): this owner drops its manifest and remembers the delete.
    expect((await fetch(`${c.url(d)}/v1/blobs/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect(holdsManifest(c.dataDirs[d]!, id)).toBe(false);
    // Another owner starts again: its first handoff pass offers every manifest it holds to the owners.
    await c.stop(r);
    await c.startNode(r);
    await c.converged({ among: members.map(index), members });
    await waitFor(() => /manifests offered to the owners of their ids/.test(c.node(r).output()), { what: `${restarted}'s manifests offered`, timeoutMs: 20_000 });
    expect(holdsManifest(c.dataDirs[d]!, id)).toBe(false);
    // The other owners still hold it: the blob reads from them.
    expect(holdsManifest(c.dataDirs[r]!, id)).toBe(true);
    const got = await fetch(`${c.url(r)}/v1/blobs/${id}`);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
  }, 120_000);

  it('comes back to an owner that lost its disk, at the next handoff pass, offered to it alone', async () => {
    const { id, bytes, owners: [owner] } = await storedAtNode0(2 * MiB + 11, 4444);
    const lost = c.ids.indexOf(owner!);
    expect(holdsManifest(c.dataDirs[lost]!, id)).toBe(true);
    await c.kill(lost);
    rmSync(c.dataDirs[lost]!, { recursive: true, force: true });
    await c.startNode(lost);
    await c.ready(lost);
    // The placement is the same: the member's newer incarnation tells the others it may lack what
    // it owned, and they offer it those alone (not every manifest to every owner again).
    await waitFor(() => holdsManifest(c.dataDirs[lost]!, id), { what: `${owner} holds the manifest again`, timeoutMs: 30_000 });
    const offeredTo = (i: number): boolean => c.node(i).output().split('\n')
      .some((line) => line.includes('manifests offered to the owners of their ids') && line.includes(`"to":["${owner!}"]`));
    await waitFor(() => c.live().some((i) => i !== lost && offeredTo(i)), { what: `a pass that offered ${owner} alone its manifests`, timeoutMs: 10_000 });
    const got = await fetch(`${c.url(lost)}/v1/blobs/${id}`);
    expect(got.status).toBe(200);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);
  }, 120_000);
});
