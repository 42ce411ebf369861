/**
 * Handoff counts the copies a node holds without owning them by a scan of the whole index only
 * when something may have changed: the ring, the node's state, a blob it does not own coming in
 * (or going); a settled node scans nothing from one pass to the next.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../src/cluster/cluster-node.js';
import { Handoff } from '../../src/cluster/handoff.js';
import { Ring } from '../../src/cluster/ring.js';
import { TokenBucket } from '../../src/cluster/token-bucket.js';
import type { BlobSender } from '../../src/cluster/transfer.js';
import type { PeerTransport } from '../../src/cluster/transport/peer-transport.js';
import { silentLogger } from '../../src/log/logger.js';
import type { LocalStore } from '../../src/service/local-store.js';

const REPLICA2 = 2;

describe('handoff\'s count of copies not owned', () => {
  it('scans the index again only after the ring changed or a blob this node does not own came in', async () => {
    const ring = new Ring(['node-1', 'node-2', 'node-3'].map((nodeId) => ({ nodeId, region: '' })), 16);
    const ids = Array.from({ length: 400 }, () => randomBytes(16));
    const owned = ids.filter((id) => ring.holders(id, REPLICA2, 'node-1').includes('node-1')).sort(Buffer.compare);
    const foreign = ids.find((id) => !ring.holders(id, REPLICA2, 'node-1').includes('node-1'))!;
    let scans = 0;
    const store = {
      scan: (start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean) => {
        if (start === undefined) scans++;
        for (const id of owned) if ((start === undefined || Buffer.compare(id, start) >= 0) && !visit(id, REPLICA2, 10)) return;
      },
    } as unknown as LocalStore;
    const membership = { ringVersion: 1, selfStatus: () => 'active' };
    const node = { ring, nodeId: 'node-1', membership, online: () => true, member: () => undefined } as unknown as ClusterNode;
    const handoff = new Handoff(store, node, {} as PeerTransport, {} as BlobSender, silentLogger(), { intervalMs: 3_600_000, rescanMs: 3_600_000, bucket: new TokenBucket(0) });
    // One pass as the background loop runs it.
    const pass = (): Promise<void> => (handoff as unknown as { pass(): Promise<void> }).pass();

    await pass();
    expect(scans).toBe(1);
    await pass();
    handoff.watcher(owned[0]!, REPLICA2, owned[0]!, 'blob');
    await pass();
    expect(scans).toBe(1);
    expect(handoff.progress.blobsTotal).toBe(0);

    handoff.watcher(foreign, REPLICA2, foreign, 'blob');
    await pass();
    expect(scans).toBe(2);
    await pass();
    expect(scans).toBe(2);

    membership.ringVersion = 2;
    await pass();
    expect(scans).toBe(3);
  });
});
