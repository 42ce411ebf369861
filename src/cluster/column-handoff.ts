/**
 * Handoff of shard columns: a column held here whose blob this node no longer owns (the ring
 * changed, or this node is leaving) goes to an owner that holds no column of the blob (with fewer
 * nodes than columns, to the one holding fewest: its second), then the copy here goes (a leaving
 * node keeps its files). A column whose index an owner already holds is
 * surplus and goes at once. Columns missing altogether are EC repair's work, not this.
 *
 * A node that owns a blob and holds more than one of its columns (EC repair placed a second one
 * while the ring had fewer than k + m nodes) keeps its lowest and hands the others the same way
 * once the ring has k + m nodes: until then a lost node could take two shards of a stripe.
 *
 *   column (id, i) here, not owned, or owned  ──▶ survey ──▶ an owner holds i: drop here
 *   beside a lower one with k + m on the ring          └▶ else: stream it to an owner with no column ─▶ drop here
 */
import { ecScheme } from '../ec/layout.js';
import { columnWriteOf, placementKey, type ShardMeta } from '../blob/shard.js';
import type { Logger } from '../log/logger.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import type { EcReader } from './ec-reader.js';
import type { PeerTransport } from './transport/peer-transport.js';
import type { TokenBucket } from './token-bucket.js';
import { scanInSlices } from './index-scan.js';

const PAGE = 256;

export interface ColumnCount {
  columns: number;
  bytes: number;
}

export class ColumnHandoff {
  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly reader: EcReader,
    private readonly log: Logger,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Columns held here that belong elsewhere (misplacement()), from `after` on: those of at most
   * about `limit` blobs, every such column of a blob in one page.
   */
  misplaced(after: Buffer | undefined, limit: number): ShardMeta[] {
    const misplaced = this.misplacement();
    const page: ShardMeta[] = [];
    if (misplaced === undefined) return page;
    this.store.scanShards(after, (id, _index, policy) => {
      if (after && id.equals(after)) return true;
      page.push(...misplaced(id, policy));
      return page.length < limit;
    });
    return page;
  }

  /** Columns held here that belong elsewhere, and their bytes: every column, a slice per turn of the event loop. */
  async countMisplaced(): Promise<ColumnCount> {
    const misplaced = this.misplacement();
    let columns = 0;
    let bytes = 0;
    if (misplaced === undefined) return { columns, bytes };
    await scanInSlices<[number, number, number]>((start, visit) => this.store.scanShards(start, visit), (id, _index, policy) => {
      for (const meta of misplaced(id, policy)) {
        columns++;
        bytes += meta.size;
      }
    });
    return { columns, bytes };
  }

  /**
   * The columns of a blob held here that belong elsewhere, on the current ring (undefined: no
   * ring yet): every column of a blob this node does not own, and, once the ring has a node for
   * each column, every column but the lowest of a blob it owns. None for a column of no EC policy.
   * Called for the columns of a scan in order (the index's keys are id, then index): a blob's
   * columns are given at its first, and none at the others, so a scan that resumes after an id
   * (scanInSlices) still counts each blob once. The placement key is read once per blob.
   */
  private misplacement(): ((id: Buffer, policy: number) => ShardMeta[]) | undefined {
    const ring = this.cluster.ring;
    const self = this.cluster.nodeId;
    if (ring.size === 0) return undefined;
    let last: Buffer | undefined;
    return (id, policy) => {
      const scheme = ecScheme(policy);
      if (!scheme || last?.equals(id)) return [];
      last = Buffer.from(id);
      const held = this.store.shardsOf(last);
      const owners = ring.owners(placementKey(last, held[0]?.shard), scheme.k + scheme.m);
      if (!owners.includes(self)) return held;
      return owners.length >= scheme.k + scheme.m ? held.sort((a, b) => a.shard.index - b.shard.index).slice(1) : [];
    };
  }

  /** Hands every column that belongs elsewhere to an owner; how many could not be placed yet (progress per column). */
  async pass(leaving: boolean, bucket: TokenBucket, done: (bytes: number) => void, stopped: () => boolean): Promise<number> {
    let stuck = 0;
    for (let after: Buffer | undefined; !stopped();) {
      const page = this.misplaced(after, PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      for (const meta of page) {
        if (stopped()) break;
        try {
          if (await this.handOne(meta, leaving, bucket)) done(meta.size);
          else stuck++;
        } catch (err) {
          stuck++;
          this.log.warn({ blob: meta.id.toString('hex'), column: meta.shard.index, err: (err as Error).message }, 'handoff: a column could not be handed over; next pass');
        }
      }
    }
    return stuck;
  }

  /**
   * True once an owner holds the column's index (and the copy here is gone, unless leaving), or
   * the column no longer belongs elsewhere (an owner's only column, or one beside which the ring
   * has too few nodes).
   */
  private async handOne(meta: ShardMeta, leaving: boolean, bucket: TokenBucket): Promise<boolean> {
    const scheme = ecScheme(meta.policy)!;
    const shards = scheme.k + scheme.m;
    const self = this.cluster.nodeId;
    const owners = this.cluster.ring.owners(placementKey(meta.id, meta.shard), shards);
    if (owners.includes(self)) {
      // An owner hands only a column beside a lower one it keeps, and only when every column can have a node of its own.
      const keeps = this.store.shardsOf(meta.id).some((c) => c.shard.index < meta.shard.index);
      if (!keeps || owners.length < shards) return true;
    }
    const { byNode } = await this.reader.survey(meta.id, shards, meta.shard.placement);
    const holding = new Map([...byNode].map(([node, indices]) => [node === '' ? self : node, indices]));
    // An owner keeps its lowest column (every one while the ring has fewer nodes than columns):
    // only a column it keeps makes this one surplus, else two owners holding the same second
    // column could each drop theirs for the other's.
    const keeps = (o: string): boolean => {
      const held = holding.get(o) ?? [];
      return held.includes(meta.shard.index) && (owners.length < shards || Math.min(...held) === meta.shard.index);
    };
    const ownerHasIndex = owners.some((o) => o !== self && keeps(o));
    if (!ownerHasIndex) {
      const target = this.targetFor(owners, shards, holding);
      if (!target) return false;
      await bucket.take(meta.size);
      await this.copy(meta, target);
      this.log.info({ blob: meta.id.toString('hex'), column: meta.shard.index, to: target, owner: owners.includes(self) }, 'handoff: column handed to an owner');
    }
    if (!leaving) await this.store.deleteShards(meta.id, meta.shard.index, true);
    this.reader.forget(meta.id);
    return true;
  }

  /**
   * The owner a column goes to: one that holds no column of the blob (in ring order); with fewer
   * nodes than columns (a leave that takes the cluster below k + m), the online owner holding the
   * fewest, as EC repair places a node's second column. Undefined while none is online.
   */
  private targetFor(owners: readonly string[], shards: number, holding: ReadonlyMap<string, readonly number[]>): string | undefined {
    const self = this.cluster.nodeId;
    const candidates = owners.filter((o) => o !== self && this.cluster.online(o));
    const free = candidates.find((o) => !holding.has(o));
    if (free !== undefined || owners.length >= shards) return free;
    let fewest: string | undefined;
    for (const o of candidates) if (fewest === undefined || (holding.get(o)?.length ?? 0) < (holding.get(fewest)?.length ?? 0)) fewest = o;
    return fewest;
  }

  private async copy(meta: ShardMeta, target: string): Promise<void> {
    const member = this.cluster.member(target)!;
    // The column goes with the checksums it was stored with, so that its new holder keeps them too.
    const checksums = meta.shard.columnChecksums;
    const sender = this.transport.column(member, columnWriteOf(meta), meta.size, { repair: true, timeoutMs: this.timeoutMs + meta.size / 8192, checksums: (checksums?.length ?? 0) / 32 });
    try {
      // The reader reuses its chunk buffers: each is copied before it is queued.
      await this.store.read(meta, (chunk) => sender.write(Buffer.from(chunk)));
    } catch (err) {
      sender.abort();
      throw err;
    }
    await sender.finish(meta.checksum, checksums);
  }
}
