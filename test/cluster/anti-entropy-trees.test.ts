/**
 * Anti-entropy's digest trees over an index larger than one slice of the scan: the build lets the
 * event loop run between slices, and the trees are the digests of every id (each counted once,
 * columns of one blob included, across slice boundaries): leaf = the id's first 16 bits, digest =
 * XOR of its first 8 bytes, an EC blob's high word marked. Kept trees follow the engine's stores
 * and deletes (whole blobs, columns, a user's deletes, hand-offs), during a build too, and equal a
 * fresh scan's.
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
import { CHUNK_BYTES } from '../../src/blob/chunk.js';
import type { ShardWrite } from '../../src/blob/shard.js';
import type { Engine } from '../../src/engine/engine.js';
import { blake3 } from '../../src/hash/blake3.js';
import { patternBytes } from '../helpers/blobs.js';
import { openEngine, testConfig } from '../helpers/engine.js';

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

  describe('kept up to date as the engine stores and deletes', () => {
    const NODES = ['node-1', 'node-2', 'node-3', 'node-4', 'node-5'];
    const ring = new Ring(NODES.map((nodeId) => ({ nodeId, region: '' })), 16);
    // Offline peers: the rounds compare with nobody, the trees are all there is to see.
    const node = { ring, nodeId: 'node-1', membership: { ringVersion: 1 }, online: () => false, member: () => undefined } as unknown as ClusterNode;
    const antiEntropy = (engine: Engine): AntiEntropy =>
      new AntiEntropy(engine, node, {} as PeerTransport, {} as BlobSender, silentLogger(), {
        intervalMs: 3_600_000, bucket: new TokenBucket(0), treeMaxAgeMs: 3_600_000, retryMs: 1000, batchBytes: 1 << 20,
      });
    const leaves = async (ae: AntiEntropy, peer: string): Promise<string[]> => (await ae.digests(peer, Array.from({ length: 256 }, (_, t) => t))).digests;
    /** The kept trees equal those a fresh scan of the same index builds, for every peer. */
    const expectAsScanned = async (engine: Engine, kept: AntiEntropy): Promise<void> => {
      const fresh = antiEntropy(engine);
      await fresh.buildTrees();
      for (const peer of NODES.slice(1)) {
        expect(await leaves(kept, peer)).toEqual(await leaves(fresh, peer));
        expect(await kept.digests(peer, [])).toEqual(await fresh.digests(peer, []));
      }
    };
    let seed = 1;
    const blob = (): Buffer => patternBytes(200, seed++);
    const column = (index: number, id?: Buffer, placement?: Buffer): { w: ShardWrite; data: Buffer } => {
      const blobChecksum = blake3(patternBytes(64, seed++));
      const data = patternBytes(300, seed++);
      return {
        data,
        w: {
          id: id ?? blobChecksum.subarray(0, 16), index, policy: EC42, shardBytes: CHUNK_BYTES, blobBytes: 1200, blobChecksum,
          blobLabels: Buffer.from('{}'), createdAtNs: 1n, columnChecksum: blake3(data), ...(placement ? { placement } : {}),
        },
      };
    };

    it('whole blobs, columns, deletes and hand-offs toggle the trees as a scan would count them', async () => {
      const engine = await openEngine(testConfig());
      const kept = antiEntropy(engine);
      try {
        const stored = await Promise.all(Array.from({ length: 300 }, (_, i) => engine.putInline(blob(), ([1, 2, 3] as const)[i % 3], Buffer.alloc(0))));
        await kept.buildTrees();
        engine.watchIds(kept.watcher);
        kept.start();
        const before = await leaves(kept, 'node-2');
        // New blobs under each policy, user deletes (a delete remembered counts as held), hand-offs (gone), a blob stored again after its delete.
        await Promise.all(Array.from({ length: 200 }, (_, i) => engine.putInline(blob(), ([1, 2, 3] as const)[i % 3], Buffer.alloc(0))));
        for (const r of stored.slice(0, 40)) await engine.delete(r.id);
        for (const r of stored.slice(40, 80)) await engine.delete(r.id, true);
        // Columns: the first of a blob enters, more of it change nothing, the last leaving takes it out; one placed by another key.
        const a = column(0);
        const b = column(1, a.w.id);
        const c = column(2);
        const placed = column(0, undefined, Buffer.alloc(16, 0xab));
        for (const x of [a, b, c, placed]) expect((await engine.putShardInline(x.w, x.data)).created).toBe(true);
        await expectAsScanned(engine, kept);
        await engine.deleteShards(c.w.id, undefined, false);
        await engine.deleteShards(a.w.id, 0, true);
        expect(await leaves(kept, 'node-2')).not.toEqual(before);
        await expectAsScanned(engine, kept);
        await engine.deleteShards(a.w.id, 1, true);
        await expectAsScanned(engine, kept);
        // A blob deleted by a user, then stored again.
        const again = await engine.putInline(blob(), 3, Buffer.alloc(0));
        await engine.delete(again.id);
        await engine.putInline(await engine.readInline(engine.stat(stored[100]!.id)!), 3, Buffer.alloc(0));
        await expectAsScanned(engine, kept);
        expect(kept.stats.idsScanned).toBe(300);
      } finally {
        engine.watchIds(undefined);
        await kept.stop();
        await engine.close();
      }
    });

    it('ids that change while a build scans are counted once, by the scan or by their toggle', async () => {
      const engine = await openEngine(testConfig());
      const kept = antiEntropy(engine);
      try {
        // Several slices of the build's scan.
        const stored: Buffer[] = [];
        for (let i = 0; i < 30_000; i += 500) {
          const batch = await Promise.all(Array.from({ length: 500 }, () => engine.putInline(blob(), 3, Buffer.alloc(0))));
          stored.push(...batch.map((r) => r.id));
        }
        // Counts the changes that reach the trees while the build runs.
        let building = false;
        let duringBuild = 0;
        const watchIds = engine.watchIds.bind(engine);
        engine.watchIds = (watcher) => watchIds(watcher && ((...args) => {
          if (building) duringBuild++;
          watcher(...args);
        }));
        engine.watchIds(kept.watcher);
        kept.start();
        await kept.buildTrees();
        building = true;
        const build = kept.buildTrees().finally(() => (building = false));
        // Stores and deletes staged between the build's slices, ahead of its scan and behind it.
        const changes: Promise<unknown>[] = [];
        while (building) {
          changes.push(engine.putInline(blob(), 3, Buffer.alloc(0)), engine.delete(stored.pop()!, true), engine.delete(stored.pop()!));
          await new Promise<void>((resolve) => setTimeout(resolve, 1));
        }
        await build;
        await Promise.all(changes);
        expect(duringBuild).toBeGreaterThan(6);
        await expectAsScanned(engine, kept);
      } finally {
        engine.watchIds(undefined);
        await kept.stop();
        await engine.close();
      }
    });
  });
});
