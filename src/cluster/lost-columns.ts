/**
 * Columns a member gone from the ring took with it: each EC blob held here that the gone member
 * owned on the ring before is queued for EC repair, by the first of the blob's owners online now
 * (this node always counts itself online, so the first owner queues it unless it holds nothing,
 * and the next one when the first is seen down). Repair surveys the holders and rebuilds what is
 * missing.
 *
 * Anti-entropy finds a column missing only where an owner holds none of the blob. When the ring
 * falls below k + m nodes every owner holds a column already, so the gone member's column stayed
 * missing until a read or the scrubber found it, though its copies are to be made again at once.
 *
 *   ring change, members gone ─▶ scan columns held here (a slice per turn) ─▶ first column of a blob:
 *     gone member among its owners before, this node its first owner online now ─▶ EC repair queue
 */
import { ecScheme } from '../ec/layout.js';
import { placementKey } from '../blob/shard.js';
import type { Logger } from '../log/logger.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import type { Ring } from './ring.js';
import { scanInSlices } from './index-scan.js';

/** Queues a blob for EC repair (EcRepairer.queue). */
export type QueueRepair = (id: Buffer, policy: number, why: string, bytes: number, placement: Buffer | undefined) => void;

export class LostColumns {
  /** Scans run one after another: a second change waits for the scan of the first. */
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly queue: QueueRepair,
    private readonly log: Logger,
    private readonly stopped: () => boolean,
  ) {}

  /** The ring went from `before` to `after` without the members `gone`: their blobs' columns are queued for repair (in the background). */
  lost(before: Ring, after: Ring, gone: readonly string[]): void {
    this.running = this.running.then(() => this.scan(before, after, gone)).catch((err: Error) => {
      this.log.error({ err, gone }, `EC repair of a gone member's columns: ${err.message}`);
    });
  }

  /** Resolves once the scans asked for so far are done (the cluster's stop). */
  settled(): Promise<void> {
    return this.running;
  }

  private async scan(before: Ring, after: Ring, gone: readonly string[]): Promise<void> {
    const self = this.cluster.nodeId;
    let queued = 0;
    let last: Buffer | undefined;
    await scanInSlices<[number, number, number]>((start, visit) => this.store.scanShards(start, visit), (id, _index, policy) => {
      if (this.stopped()) return false;
      const scheme = ecScheme(policy);
      if (!scheme || last?.equals(id)) return true;
      last = Buffer.from(id);
      const held = this.store.shardsOf(last);
      const key = placementKey(last, held[0]?.shard);
      const shards = scheme.k + scheme.m;
      if (!before.owners(key, shards).some((n) => gone.includes(n))) return true;
      const first = after.owners(key, shards).find((n) => n === self || this.cluster.online(n));
      if (first !== self) return true;
      const bytes = held[0] ? held[0].size : 0;
      this.queue(last, policy, 'a member that owned it left the ring', bytes, held[0]?.shard.placement);
      queued++;
      return true;
    });
    if (queued > 0) this.log.info({ blobs: queued, gone }, 'EC repair: blobs whose columns a gone member may have held are queued');
  }
}
