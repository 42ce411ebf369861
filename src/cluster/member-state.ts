/**
 * Membership as a value that merges (a CRDT): one record per node that ever joined, and a merge
 * that keeps, per node, the record with the highest incarnation. Merging is commutative,
 * associative and idempotent, so nodes that have seen the same records hold the same state
 * whatever the order, repetition or loss of the messages that carried them.
 *
 *   record of node X:  { incarnation, status, address, grpcAddress, region, capacityBytes }
 *   merge(a, b):       higher incarnation wins; at equal incarnation removed > leaving > active,
 *                      then the canonical text decides (any total order will do)
 *
 * Whoever changes X's status (a join, a leave, X itself once its data has migrated) writes a new
 * record with a higher incarnation than any it has seen for X: odd for a join, even otherwise
 * (nextIncarnation).
 *
 * The ring version is a function of the state: the sum of 4 * incarnation + rank(status) over all
 * records. A merge only replaces a record by one that wins over it, which raises that term, so the
 * version never goes down and moves with every change; nodes holding the same state hold the same
 * version without another message. Two different states may sum alike: the digest tells them
 * apart, and a merge of the two sums higher than either. A removal is such a record (a
 * tombstone): it wins over every older record, so a peer that has not heard of the removal yet
 * cannot bring the node back; only a later join, with a higher incarnation still, can.
 * docs/cluster.md explains why the whole protocol converges.
 */
import { blake3 } from '../hash/blake3.js';
import type { RingMember } from './ring.js';

export type MemberStatus = 'active' | 'leaving' | 'removed';

export interface MemberRecord {
  readonly nodeId: string;
  /** Grows with every change of this record; the highest wins a merge. */
  readonly incarnation: number;
  readonly status: MemberStatus;
  /** The HTTP API address (host:port), NodeInfo.address. */
  readonly address: string;
  /** Where peers reach the node's gRPC services (host:port). */
  readonly grpcAddress: string;
  readonly region: string;
  readonly capacityBytes: number;
}

/**
 * The incarnation of a record written over one at `base`. Joins take odd incarnations and every
 * other change (a leave, a removal, a node's own record) even ones, so a join never ties with a
 * change made at the same moment elsewhere from the same record. Were they to tie, the removal
 * would win, yet a leave made afterwards from the join's record (one past it) would outrank that
 * removal with no join above it: a node removed would come back, leaving (the seeded simulation,
 * seeds 500063162 and 800005710). Apart, whichever is higher wins and what follows from it stays
 * above or below it.
 */
export function nextIncarnation(base: number, by: 'join' | 'change'): number {
  const next = base + 1;
  return (next % 2 === 1) === (by === 'join') ? next : next + 1;
}

const STATUS_RANK: Record<MemberStatus, number> = { active: 1, leaving: 2, removed: 3 };
const STATUSES = new Set<string>(Object.keys(STATUS_RANK));

/** The record's fields in a fixed order: the digest's input and the final tie-break. */
function canonical(r: MemberRecord): string {
  return JSON.stringify([r.nodeId, r.incarnation, r.status, r.address, r.grpcAddress, r.region, r.capacityBytes]);
}

/** -1, 0 or 1 as `a` loses to, equals or wins over `b` (records of the same node). */
export function compareRecords(a: MemberRecord, b: MemberRecord): number {
  if (a.incarnation !== b.incarnation) return a.incarnation > b.incarnation ? 1 : -1;
  if (a.status !== b.status) return STATUS_RANK[a.status] > STATUS_RANK[b.status] ? 1 : -1;
  const ca = canonical(a);
  const cb = canonical(b);
  return ca === cb ? 0 : ca > cb ? 1 : -1;
}

/** A record from the wire, checked field by field; undefined when it is not one. */
export function parseRecord(value: unknown): MemberRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const num = (x: unknown): number => (typeof x === 'number' ? x : typeof x === 'string' && /^\d+$/.test(x) ? Number(x) : NaN);
  const incarnation = num(v.incarnation);
  const capacityBytes = num(v.capacityBytes ?? v.capacity_bytes ?? 0);
  const nodeId = v.nodeId ?? v.node_id;
  const grpcAddress = v.grpcAddress ?? v.grpc_address ?? '';
  if (typeof nodeId !== 'string' || nodeId === '' || nodeId.length > 256) return undefined;
  if (!Number.isSafeInteger(incarnation) || incarnation < 0 || !Number.isSafeInteger(capacityBytes) || capacityBytes < 0) return undefined;
  if (typeof v.status !== 'string' || !STATUSES.has(v.status)) return undefined;
  if (typeof v.address !== 'string' || typeof grpcAddress !== 'string' || typeof (v.region ?? '') !== 'string') return undefined;
  return {
    nodeId, incarnation, status: v.status as MemberStatus, address: v.address, grpcAddress, region: (v.region ?? '') as string, capacityBytes,
  };
}

export class MemberState {
  private readonly records = new Map<string, MemberRecord>();
  private digestCache: string | undefined;
  private versionCache: number | undefined;

  constructor(records: Iterable<MemberRecord> = []) {
    this.merge(records);
  }

  get(nodeId: string): MemberRecord | undefined {
    return this.records.get(nodeId);
  }

  /** Every record, tombstones included, sorted by node id. */
  all(): MemberRecord[] {
    return [...this.records.values()].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
  }

  /** Merges records in; true when anything changed. */
  merge(records: Iterable<MemberRecord>): boolean {
    let changed = false;
    for (const r of records) {
      const mine = this.records.get(r.nodeId);
      if (mine && compareRecords(r, mine) <= 0) continue;
      this.records.set(r.nodeId, r);
      changed = true;
    }
    if (changed) {
      this.digestCache = undefined;
      this.versionCache = undefined;
    }
    return changed;
  }

  /** The highest incarnation seen for a node (0 when never). */
  incarnationOf(nodeId: string): number {
    return this.records.get(nodeId)?.incarnation ?? 0;
  }

  /** A short digest of every record: equal digests, equal states. */
  digest(): string {
    this.digestCache ??= blake3(Buffer.from(this.all().map(canonical).join('\n'))).subarray(0, 16).toString('hex');
    return this.digestCache;
  }

  /** The ring version this state stands for (see above). */
  version(): number {
    if (this.versionCache === undefined) {
      let v = 0;
      for (const r of this.records.values()) v += 4 * r.incarnation + STATUS_RANK[r.status];
      this.versionCache = v;
    }
    return this.versionCache;
  }

  /** Members that own ring ranges: status active (leaving nodes hand theirs over). */
  ringMembers(): RingMember[] {
    return this.all()
      .filter((r) => r.status === 'active')
      .map((r) => ({ nodeId: r.nodeId, region: r.region }));
  }

  /** What the ring is computed from: equal keys, equal placement. */
  ringKey(): string {
    return JSON.stringify(this.ringMembers().map((m) => [m.nodeId, m.region]));
  }
}
