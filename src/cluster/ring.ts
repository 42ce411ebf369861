/**
 * The consistent-hash ring: `vnodesPerNode` points per member at BLAKE3(`<nodeId>#<i>`), computed
 * from the member list alone, so every node with the same members places every blob the same way.
 * A blob's position is the first 6 bytes of its id (already a BLAKE3 digest, so uniform); its
 * owners are the distinct nodes met walking clockwise from there, nodes of regions not yet chosen
 * first, so copies spread over regions before they double up in one.
 *
 *        vnode points (sorted)                 blob at p: owners = next distinct nodes
 *   0 ──●a───●c──●b───●a──●c───●b──●a──── 2^48      p ──▶ ●a ─▶ ●c ─▶ ●b
 *
 * 128 points per node keep 10 nodes within ~6% of the mean for three copies per blob and move
 * ~1/11 of the ids when an 11th node joins (bench/cluster/ring.bench.ts measures both).
 */
import { blake3 } from '../hash/blake3.js';
import { replicaCount, staysWhereStored } from '../blob/policy.js';

/** The nodes a read of a blob this node lacks asks, at most (the spec: up to 3 replica nodes). */
export const READ_OWNERS = 3;

export interface RingMember {
  readonly nodeId: string;
  /** Region label ('' = none); copies go to distinct regions first. */
  readonly region: string;
}

/** Positions are 48-bit integers: exact in a double, and the ids' first 6 bytes. */
const positionOfDigest = (d: Uint8Array): number => d[0]! * 2 ** 40 + d[1]! * 2 ** 32 + ((d[2]! << 24) >>> 0) + (d[3]! << 16) + (d[4]! << 8) + d[5]!;

export class Ring {
  /** Member ids, sorted (the ring's identity). */
  readonly nodeIds: readonly string[];
  private readonly regions: readonly string[];
  /** Sorted vnode positions and, at the same index, the index of their node in nodeIds. */
  private readonly points: Float64Array;
  private readonly owner: Int32Array;
  private readonly distinctRegions: number;

  constructor(
    members: readonly RingMember[],
    readonly vnodesPerNode: number,
  ) {
    const sorted = [...members].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
    this.nodeIds = sorted.map((m) => m.nodeId);
    this.regions = sorted.map((m) => m.region);
    this.distinctRegions = new Set(this.regions).size;
    const entries: { at: number; node: number }[] = [];
    sorted.forEach((m, node) => {
      for (let i = 0; i < vnodesPerNode; i++) entries.push({ at: positionOfDigest(blake3(Buffer.from(`${m.nodeId}#${i}`))), node });
    });
    // Equal positions (2^-48 apart) are ordered by node, so every node sorts them alike.
    entries.sort((a, b) => a.at - b.at || a.node - b.node);
    this.points = Float64Array.from(entries, (e) => e.at);
    this.owner = Int32Array.from(entries, (e) => e.node);
  }

  get size(): number {
    return this.nodeIds.length;
  }

  /** The position of a blob id on the ring. */
  static position(id: Uint8Array): number {
    return positionOfDigest(id);
  }

  /** Index of the first vnode at or after `position` (wrapping to 0). */
  private firstAt(position: number): number {
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.points[mid]! < position) lo = mid + 1;
      else hi = mid;
    }
    return lo === this.points.length ? 0 : lo;
  }

  /**
   * The nodes that hold whole copies of a blob of `policy` that node `taker` stored: its owners,
   * except that NONE's one copy stays on the taker when the taker is one of the READ_OWNERS nodes
   * a read from any node asks (docs/adr/0017-none-stays.md).
   */
  holders(id: Uint8Array, policy: number, taker: string): string[] {
    if (staysWhereStored(policy) && this.owners(id, READ_OWNERS).includes(taker)) return [taker];
    return this.owners(id, replicaCount(policy));
  }

  /**
   * The first `count` distinct nodes clockwise from the blob (fewer when the ring is smaller),
   * nodes of new regions first: a node whose region is already chosen waits until every region
   * has one copy.
   */
  owners(id: Uint8Array, count: number): string[] {
    const want = Math.min(count, this.nodeIds.length);
    const out: string[] = [];
    if (want === 0) return out;
    const chosen = new Uint8Array(this.nodeIds.length);
    const start = this.firstAt(Ring.position(id));
    const regionsSeen = new Set<string>();
    // Pass 1, with regions: the first node of each region, until every region has one.
    if (this.distinctRegions > 1) {
      for (let j = 0; out.length < want && regionsSeen.size < this.distinctRegions && j < this.points.length; j++) {
        const node = this.owner[(start + j) % this.points.length]!;
        if (chosen[node] || regionsSeen.has(this.regions[node]!)) continue;
        chosen[node] = 1;
        regionsSeen.add(this.regions[node]!);
        out.push(this.nodeIds[node]!);
      }
    }
    // Pass 2: the next distinct nodes clockwise (all of them when there are no regions).
    for (let j = 0; out.length < want && j < this.points.length; j++) {
      const node = this.owner[(start + j) % this.points.length]!;
      if (chosen[node]) continue;
      chosen[node] = 1;
      out.push(this.nodeIds[node]!);
    }
    return out;
  }
}
