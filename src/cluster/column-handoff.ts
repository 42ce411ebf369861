/**
 * Handoff of shard columns: a column held here whose blob this node no longer owns (the ring
 * changed, or this node is leaving) goes to an owner that holds no column of the blob (with fewer
 * nodes than columns, to the one holding fewest: its second), then the copy here goes (a leaving
 * node keeps its files). A column whose index an owner already holds is
 * surplus and goes at once. Columns missing altogether are EC repair's work, not this.
 *
 *   column (id, i) here, not owned ──▶ survey ──▶ an owner holds i: drop here
 *                                              └▶ else: stream it to an owner with no column ─▶ drop here
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

  /** Columns held here whose blob this node does not own, from `after` on (the columns of at most about `limit` of them). */
  notOwned(after: Buffer | undefined, limit: number): ShardMeta[] {
    const owns = this.ownership();
    const page: ShardMeta[] = [];
    if (owns === undefined) return page;
    let last: Buffer | undefined;
    this.store.scanShards(after, (id, _index, policy) => {
      if (after && id.equals(after)) return true;
      if (owns(id, policy) || last?.equals(id)) return true;
      last = Buffer.from(id);
      page.push(...this.store.shardsOf(last));
      return page.length < limit;
    });
    return page;
  }

  /** Columns held here whose blob this node does not own, and their bytes: every column, a slice per turn of the event loop. */
  async countNotOwned(): Promise<ColumnCount> {
    const owns = this.ownership();
    let columns = 0;
    let bytes = 0;
    if (owns === undefined) return { columns, bytes };
    await scanInSlices<[number, number, number]>((start, visit) => this.store.scanShards(start, visit), (id, _index, policy, size) => {
      if (owns(id, policy)) return;
      columns++;
      bytes += size;
    });
    return { columns, bytes };
  }

  /**
   * Whether this node owns the blob of a column, on the current ring (undefined: no ring yet); a
   * column of no EC policy counts as owned. The placement key is read once per blob (its columns
   * come together in a scan).
   */
  private ownership(): ((id: Buffer, policy: number) => boolean) | undefined {
    const ring = this.cluster.ring;
    const self = this.cluster.nodeId;
    if (ring.size === 0) return undefined;
    let keyOf: { id: Buffer; key: Buffer } | undefined;
    return (id, policy) => {
      const scheme = ecScheme(policy);
      if (!scheme) return true;
      if (!keyOf?.id.equals(id)) {
        const copy = Buffer.from(id);
        keyOf = { id: copy, key: placementKey(copy, this.store.shardsOf(copy)[0]?.shard) };
      }
      return ring.owners(keyOf.key, scheme.k + scheme.m).includes(self);
    };
  }

  /** Hands every column not owned to an owner; how many could not be placed yet (progress per column). */
  async pass(leaving: boolean, bucket: TokenBucket, done: (bytes: number) => void, stopped: () => boolean): Promise<number> {
    let stuck = 0;
    for (let after: Buffer | undefined; !stopped();) {
      const page = this.notOwned(after, PAGE);
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

  /** True once an owner holds the column's index (and the copy here is gone, unless leaving). */
  private async handOne(meta: ShardMeta, leaving: boolean, bucket: TokenBucket): Promise<boolean> {
    const scheme = ecScheme(meta.policy)!;
    const shards = scheme.k + scheme.m;
    const self = this.cluster.nodeId;
    const owners = this.cluster.ring.owners(placementKey(meta.id, meta.shard), shards);
    const { byNode } = await this.reader.survey(meta.id, shards, meta.shard.placement);
    const holding = new Map([...byNode].map(([node, indices]) => [node === '' ? self : node, indices]));
    const ownerHasIndex = owners.some((o) => o !== self && (holding.get(o) ?? []).includes(meta.shard.index));
    if (!ownerHasIndex) {
      const target = this.targetFor(owners, shards, holding);
      if (!target) return false;
      await bucket.take(meta.size);
      await this.copy(meta, target);
      this.log.info({ blob: meta.id.toString('hex'), column: meta.shard.index, to: target }, 'handoff: column handed to an owner');
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
