/**
 * Anti-entropy's digest trees over an index larger than one slice of the scan: the build lets the
 * event loop run between slices, and the trees are the digests of every id (each counted once,
 * columns of one blob included, across slice boundaries): leaf = the id's first 16 bits, digest =
 * XOR of its first 8 bytes, an EC blob's high word marked.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AntiEntropy } from '../../src/cluster/anti-entropy.js';
import type { ClusterNode } from '../../src/cluster/cluster-node.js';
import { Ring } from '../../src/cluster/ring.js';
import { TokenBucket } from '../../src/cluster/token-bucket.js';
import type { BlobSender } from '../../src/cluster/transfer.js';
import type { PeerTransport } from '../../src/cluster/transport/peer-transport.js';
import type { LocalStore } from '../../src/service/local-store.js';
import { silentLogger } from '../../src/log/logger.js';

const REPLICA3 = 3;
const EC42 = 4;
const EC_MARK = 0x5a5a5a5a;

type Visit = (id: Buffer, ...rest: number[]) => boolean;

/** Sorted entries scanned the way the index scans: from `start` (inclusive), until visit says stop. */
function scanOf(entries: { id: Buffer; rest: number[] }[]): (start: Buffer | undefined, visit: Visit) => void {
  return (start, visit) => {
    for (const e of entries) {
      if (start !== undefined && Buffer.compare(e.id, start) < 0) continue;
      if (!visit(e.id, ...e.rest)) return;
    }
  };
}

const sortedIds = (n: number): Buffer[] => Array.from({ length: n }, () => randomBytes(16)).sort(Buffer.compare);

describe('anti-entropy trees', () => {
  it('are built a slice at a time, every id counted once, columns of a blob once', async () => {
    const blobs = sortedIds(20_000);
    const deleted = sortedIds(3_000);
    // Three columns per EC blob: 9,000 entries, so slices end inside a blob's columns too.
    const ec = sortedIds(3_000);
    const columns = ec.flatMap((id) => [0, 1, 2].map((index) => ({ id, rest: [index, EC42, 100] })));
    const store = {
      scan: scanOf(blobs.map((id) => ({ id, rest: [REPLICA3, 100] }))),
      scanShards: scanOf(columns),
      scanDeleted: scanOf(deleted.map((id) => ({ id, rest: [REPLICA3] }))),
      shardsOf: () => [],
    } as unknown as LocalStore;
    const ring = new Ring(['node-1', 'node-2', 'node-3'].map((nodeId) => ({ nodeId, region: '' })), 16);
    const node = { ring, nodeId: 'node-1', membership: { ringVersion: 1 }, online: () => true, member: () => undefined } as unknown as ClusterNode;
    const ae = new AntiEntropy(store, node, {} as PeerTransport, {} as BlobSender, silentLogger(), {
      intervalMs: 60_000, bucket: new TokenBucket(0), treeMaxAgeMs: 60_000, retryMs: 1000, batchBytes: 1 << 20,
    });

    let turns = 0;
    let built = false;
    const tick = (): void => {
      turns++;
      if (!built) setImmediate(tick);
    };
    setImmediate(tick);
    await ae.buildTrees();
    built = true;
    // 26,000 ids: the loop ran between the slices.
    expect(turns).toBeGreaterThan(2);
    expect(ae.stats.idsScanned).toBe(blobs.length + ec.length + deleted.length);

    // Every node owns every id on a ring of three: each peer's tree digests all of them.
    const expected = new Uint32Array(65_536 * 2);
    const fold = (id: Buffer, mark: number): void => {
      const leaf = id.readUInt16BE(0);
      expected[2 * leaf]! ^= (id.readUInt32BE(0) ^ mark) >>> 0;
      expected[2 * leaf + 1]! ^= id.readUInt32BE(4);
    };
    for (const id of blobs) fold(id, 0);
    for (const id of deleted) fold(id, 0);
    for (const id of ec) fold(id, EC_MARK);
    for (const peer of ['node-2', 'node-3']) {
      const top = await ae.digests(peer, []);
      const leaves = await ae.digests(peer, Array.from({ length: 256 }, (_, t) => t));
      const want = Array.from({ length: 65_536 }, (_, leaf) => ((BigInt(expected[2 * leaf]!) << 32n) | BigInt(expected[2 * leaf + 1]!)).toString());
      expect(leaves.digests).toEqual(want);
      expect(top.digests).toHaveLength(256);
    }
  });

  it('one build serves every caller that asks while it runs', async () => {
    let scans = 0;
    const store = {
      scan: (_start: Buffer | undefined, visit: Visit) => {
        scans++;
        visit(Buffer.alloc(16, 7), REPLICA3, 1);
      },
      scanShards: () => undefined,
      scanDeleted: () => undefined,
      shardsOf: () => [],
    } as unknown as LocalStore;
    const ring = new Ring(['node-1', 'node-2'].map((nodeId) => ({ nodeId, region: '' })), 16);
    const node = { ring, nodeId: 'node-1', membership: { ringVersion: 1 }, online: () => true, member: () => undefined } as unknown as ClusterNode;
    const ae = new AntiEntropy(store, node, {} as PeerTransport, {} as BlobSender, silentLogger(), {
      intervalMs: 60_000, bucket: new TokenBucket(0), treeMaxAgeMs: 60_000, retryMs: 1000, batchBytes: 1 << 20,
    });
    const answers = await Promise.all([ae.buildTrees(), ae.digests('node-2', []), ae.digests('node-2', [])]);
    expect(scans).toBe(1);
    expect(answers[1]).toEqual(answers[2]);
  });
});
