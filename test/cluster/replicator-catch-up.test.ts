/**
 * The replicator's catch-up (src/cluster/replicator.ts, caughtUp): what an index commit waits for
 * in a cluster (LocalStore.holdIndexCommits), so that a fresh store's queue entry, removed once
 * its copies are confirmed, is never written. It resolves once a pass has handled every fresh id
 * taken before the call; it asks for no wait while a copy backs off or the replicator is stopped.
 */
import { describe, expect, it } from 'vitest';
import type { BlobMeta } from '../../src/blob/meta.js';
import type { BlobSender, SendResult, SendTarget } from '../../src/cluster/blob-sender.js';
import type { ClusterNode } from '../../src/cluster/cluster-node.js';
import { Replicator } from '../../src/cluster/replicator.js';
import type { QueueEntry } from '../../src/index/overlay.js';
import type { Logger } from '../../src/log/logger.js';
import type { ClusterMetrics } from '../../src/metrics/cluster-metrics.js';
import type { LocalStore } from '../../src/service/local-store.js';

const PEERS = ['node-2', 'node-3'];

/** A store whose queue is a map, a cluster of three, and a sender whose calls the test answers. */
function harness() {
  const queue = new Map<string, QueueEntry>();
  const store = {
    replication: {
      get: (id: Buffer) => queue.get(id.toString('hex')),
      remove: async (id: Buffer) => void queue.delete(id.toString('hex')),
      update: async (id: Buffer, entry: QueueEntry) => void queue.set(id.toString('hex'), entry),
      page: () => [],
      get depth() {
        return queue.size;
      },
    },
    stat: (id: Buffer) => (queue.has(id.toString('hex')) ? ({ id, policy: 3, size: 4 } as unknown as BlobMeta) : undefined),
  } as unknown as LocalStore;
  const cluster = {
    nodeId: 'node-1',
    ring: { holders: () => ['node-1', ...PEERS] },
    online: () => true,
    member: (nodeId: string) => ({ nodeId, grpcAddress: `127.0.0.1:${PEERS.indexOf(nodeId) + 1}` }),
  } as unknown as ClusterNode;
  /** Each sendEach call, answered by the test: every target held its blobs, or every one failed. */
  const calls: { targets: readonly SendTarget[]; answer: (ok: boolean) => void }[] = [];
  const sender = {
    sendEach: (targets: readonly SendTarget[]) => new Promise<SendResult[]>((resolve) => calls.push({
      targets,
      answer: (ok) => resolve(targets.map((t) => (ok ? new Set(t.metas) : new Error('peer down')))),
    })),
  } as unknown as BlobSender;
  const metrics = { observe: () => undefined, setReplication: () => undefined } as unknown as ClusterMetrics;
  const log = { warn: () => undefined, error: () => undefined } as unknown as Logger;
  const replicator = new Replicator(store, cluster, sender, metrics, log, {
    pageSize: 100, retryMaxMs: 60_000, retryTickMs: 60_000, batchDelayMs: 0, freshBytesMax: 1 << 20,
  });
  /** A store committed with its queue entry, handed to the replicator as the store path does. */
  const store1 = (n: number): Buffer => {
    const id = Buffer.alloc(16, n);
    queue.set(id.toString('hex'), { queuedAtMs: 1, done: [] });
    replicator.stored(id, Buffer.alloc(4, n));
    return id;
  };
  return { queue, calls, replicator, store1 };
}

async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((resolve) => setTimeout(resolve, 2));
}

describe('the replicator\'s catch-up (what an index commit waits for)', () => {
  it('resolves once a pass has handled every fresh id taken before the call, and its entries are gone', async () => {
    const { queue, calls, replicator, store1 } = harness();
    replicator.start();
    expect(replicator.caughtUp()).toBeUndefined();
    store1(1);
    store1(2);
    let caughtUp = false;
    void replicator.caughtUp()!.then(() => (caughtUp = true));
    await until(() => calls.length === 1);
    // Ids taken while that pass runs are the next pass's: a wait asked for now ends after it.
    store1(3);
    let later = false;
    void replicator.caughtUp()!.then(() => (later = true));
    expect(caughtUp).toBe(false);
    calls[0]!.answer(true);
    await until(() => caughtUp);
    expect(queue.size).toBe(1);
    expect(later).toBe(false);
    await until(() => calls.length === 2);
    calls[1]!.answer(true);
    await until(() => later);
    expect(queue.size).toBe(0);
    expect(replicator.caughtUp()).toBeUndefined();
    await replicator.stop();
  });

  it('asks for no wait while a copy backs off (a failing peer would hold every commit), nor once stopped', async () => {
    const { calls, replicator, store1 } = harness();
    replicator.start();
    store1(1);
    const waited = replicator.caughtUp()!;
    await until(() => calls.length === 1);
    calls[0]!.answer(false);
    await waited;
    store1(2);
    expect(replicator.caughtUp()).toBeUndefined();
    await replicator.stop();
    expect(replicator.caughtUp()).toBeUndefined();
  });

  it('a wait under way ends when the replicator stops', async () => {
    const { calls, replicator, store1 } = harness();
    replicator.start();
    store1(1);
    const waited = replicator.caughtUp()!;
    await until(() => calls.length === 1);
    const stopped = replicator.stop();
    calls[0]!.answer(true);
    await stopped;
    await waited;
  });
});
