/**
 * A node's view of the cluster, as a state machine without I/O (the clock is passed in), so the
 * same code runs in the node and in the seeded simulation of test/cluster/simulation.test.ts.
 *
 *   merged state (MemberState, a CRDT) ── ring members ──▶ Ring (vnodes) and ringVersion
 *   soft state per peer: last heard, used bytes, blob count (from heartbeats; never merged)
 *
 * Every heartbeat carries the sender's whole member state and its digest: the receiver merges it,
 * and answers with its own state when the digests still differ, so one exchange leaves both sides
 * with the union of what each knew. ring_version is computed from the merged state (member-state.ts):
 * it never goes down, and nodes that agree on the state agree on it. docs/cluster.md has the
 * argument.
 */
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import { type MemberRecord, MemberState, type MemberStatus, nextIncarnation } from './member-state.js';
import { Ring } from './ring.js';

/** The node itself: what it announces about itself. */
export interface SelfInfo {
  nodeId: string;
  address: string;
  grpcAddress: string;
  region: string;
  capacityBytes: number;
}

/** What survives a restart (kept in LMDB by the node). */
export interface PersistedMembership {
  records: MemberRecord[];
}

/** A node's data handoff in progress (graceful leave, rebalance). */
export interface Migration {
  blobs_left: number;
  bytes_left: number;
  bytes_per_second: number;
}

/** NodeInfo as the spec lists it, plus where peers reach the node's gRPC services. */
export interface NodeInfo {
  node_id: string;
  address: string;
  state: 'joining' | 'active' | 'leaving' | 'offline';
  capacity_bytes: number;
  used_bytes: number;
  blob_count: number;
  grpc_address: string;
  region: string;
  /** While the node hands its data over. */
  migration?: Migration;
}

export interface JoinRequest {
  node_id: string;
  address: string;
  capacity_bytes: number;
  /** Extensions a blobstore node sends: how peers reach it, and what it knows of itself. */
  grpc_address?: string;
  region?: string;
  incarnation?: number;
}

export interface JoinResponse {
  accepted: boolean;
  ring_version: number;
  nodes: NodeInfo[];
  /** Extension: the whole member state, for the new node to start from. */
  members: MemberRecord[];
}

export interface HeartbeatRequest {
  node_id: string;
  used_bytes: number;
  blob_count: number;
  ring_version: number;
  /** Extensions: the sender's member state and its digest, and its data handoff while it runs. */
  members?: MemberRecord[];
  digest?: string;
  migration?: Migration;
}

export interface HeartbeatResponse {
  ok: boolean;
  ring_version: number;
  /** The spec's field: filled when the caller's ring_version is behind. */
  nodes: NodeInfo[];
  commands: string[];
  /** Extensions: this node's state when it differs from the caller's, and its digest. */
  members?: MemberRecord[];
  digest?: string;
}

export interface ClusterStateView {
  nodes: NodeInfo[];
  ring_version: number;
}

export interface SyncRingResponse {
  ring_version: number;
  node_ids: string[];
  vnodes_per_node: number;
}

export interface MembershipOptions {
  vnodesPerNode: number;
  /** A peer not heard from for longer is offline. */
  offlineAfterMs: number;
  /** A removed peer is told of its removal for this long at most (it may be gone for good). */
  tellRemovedMs: number;
}

interface PeerState {
  lastSeenMs: number;
  /** A heartbeat from it was observed (peer_health shows it only then). */
  heard: boolean;
  usedBytes: number;
  blobCount: number;
  migration: Migration | undefined;
  /** A removed peer: when we learnt of its removal (it is told until it shows it knows). */
  toldRemovedMs: number;
}

/** What changed in one step, for the node to act on (persist, log, rebuild connections). */
export interface Change {
  stateChanged: boolean;
  ringChanged: boolean;
}

const NO_CHANGE: Change = { stateChanged: false, ringChanged: false };

/** 404 for a heartbeat of a node the cluster does not know (`rejoin`) or has removed (no command). */
export class HeartbeatRefused extends BlobstoreError {
  constructor(
    message: string,
    readonly response: HeartbeatResponse,
  ) {
    super('not_found', message);
  }
}

/** The port of a host:port is one a node can listen on. */
const validPort = (address: string): boolean => {
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  return port >= 1 && port <= 65535;
};

export class Membership {
  private readonly state: MemberState;
  ring: Ring;
  private readonly peers = new Map<string, PeerState>();
  /** This node's own used bytes and blob count, for its NodeInfo. */
  selfUsage = { usedBytes: 0, blobCount: 0 };
  /** This node's data handoff while it runs. */
  selfMigration: Migration | undefined;
  /** This node is removed and a peer has shown it holds that tombstone. */
  private removalKnown = false;
  /** Removed peers that showed they know (or went silent): not told again. */
  private readonly removalsSettled = new Set<string>();

  constructor(
    private self: SelfInfo,
    persisted: PersistedMembership | undefined,
    private readonly options: MembershipOptions,
    nowMs: number,
  ) {
    this.state = new MemberState(persisted?.records ?? []);
    this.ring = new Ring(this.state.ringMembers(), options.vnodesPerNode);
    this.afterStateChange(nowMs);
    this.refreshSelf();
  }

  private freshPeer(nowMs: number): PeerState {
    return { lastSeenMs: nowMs, heard: false, usedBytes: 0, blobCount: 0, migration: undefined, toldRemovedMs: 0 };
  }

  get nodeId(): string {
    return this.self.nodeId;
  }

  /** This node's record, if it ever joined. */
  selfRecord(): MemberRecord | undefined {
    return this.state.get(this.self.nodeId);
  }

  /** joining (never admitted), active, leaving, or removed (a tombstone names it). */
  selfStatus(): MemberStatus | 'joining' {
    return this.selfRecord()?.status ?? 'joining';
  }

  record(nodeId: string): MemberRecord | undefined {
    return this.state.get(nodeId);
  }

  records(): MemberRecord[] {
    return this.state.all();
  }

  digest(): string {
    return this.state.digest();
  }

  persisted(): PersistedMembership {
    return { records: this.state.all() };
  }

  get ringVersion(): number {
    return this.state.version();
  }

  /**
   * Peers to heartbeat: every member but this node and the removed. A node that is removed itself
   * (it finished leaving, or learnt of its removal) stops once a peer holds its tombstone: from
   * there gossip carries it, and nothing it says counts any more.
   */
  heartbeatTargets(): MemberRecord[] {
    if (this.selfStatus() === 'removed' && this.removalKnown) return [];
    return this.state.all().filter((r) => r.nodeId !== this.self.nodeId && this.peers.has(r.nodeId));
  }

  /** Members to count, show and place data on: not removed (heartbeatTargets may hold removed ones). */
  private liveTargets(): MemberRecord[] {
    return this.heartbeatTargets().filter((r) => r.status !== 'removed');
  }

  /** Whether a peer answered or sent a heartbeat since this node started (not merely admitted). */
  heard(nodeId: string): boolean {
    return nodeId === this.self.nodeId || this.peers.get(nodeId)?.heard === true;
  }

  /** Whether a peer has been heard from within offlineAfterMs. */
  online(nodeId: string, nowMs: number): boolean {
    if (nodeId === this.self.nodeId) return true;
    const p = this.peers.get(nodeId);
    return p !== undefined && nowMs - p.lastSeenMs <= this.options.offlineAfterMs;
  }

  /** Peers whose heartbeat was observed, and whether each is online (peer_health). */
  peerHealth(nowMs: number): Map<string, boolean> {
    const out = new Map<string, boolean>();
    for (const r of this.liveTargets()) if (this.peers.get(r.nodeId)?.heard) out.set(r.nodeId, this.online(r.nodeId, nowMs));
    return out;
  }

  /** Merges records from a peer (a removed peer's view counts like any other: it is only records). */
  absorb(records: readonly MemberRecord[], nowMs: number): Change {
    const ringBefore = this.state.ringKey();
    const stateChanged = this.state.merge(records);
    const ringChanged = this.state.ringKey() !== ringBefore;
    if (stateChanged) this.afterStateChange(nowMs);
    if (ringChanged) this.ring = new Ring(this.state.ringMembers(), this.options.vnodesPerNode);
    return { stateChanged, ringChanged };
  }

  /** A change made here (join, leave, own record): a new record that wins over the old one. */
  private write(record: MemberRecord, nowMs: number): Change {
    return this.absorb([record], nowMs);
  }

  /**
   * Peers follow the records: a new member gets soft state. A removed one keeps being heartbeated
   * until it shows it holds its tombstone, or for tellRemovedMs after we learnt of the removal: a node removed while cut off would otherwise never hear of it, and could
   * think itself the last member of a cluster nobody else counts it in.
   */
  private afterStateChange(nowMs: number): void {
    for (const r of this.state.all()) {
      if (r.nodeId === this.self.nodeId) continue;
      let peer = this.peers.get(r.nodeId);
      if (!peer) {
        if (r.status === 'removed' && this.removalsSettled.has(r.nodeId)) continue;
        peer = this.freshPeer(nowMs);
        this.peers.set(r.nodeId, peer);
      }
      if (r.status === 'removed' && peer.toldRemovedMs === 0) peer.toldRemovedMs = nowMs;
    }
    this.refreshSelf(nowMs);
  }

  /** Stops telling removed peers that showed they know, or stayed silent too long. */
  private settleRemoval(nodeId: string): void {
    this.peers.delete(nodeId);
    this.removalsSettled.add(nodeId);
  }

  /** Stops telling removed peers told for tellRemovedMs already. */
  expireRemoved(nowMs: number): void {
    for (const [nodeId, peer] of this.peers) {
      if (peer.toldRemovedMs > 0 && nowMs - peer.toldRemovedMs > this.options.tellRemovedMs) this.settleRemoval(nodeId);
    }
  }

  /**
   * Keeps this node's record true to its current addresses, region and capacity (a restart on new
   * ports, say): a newer incarnation with the same status. A removed node leaves its tombstone.
   */
  private refreshSelf(nowMs = 0): Change {
    const mine = this.selfRecord();
    if (!mine || mine.status === 'removed') return NO_CHANGE;
    const s = this.self;
    if (mine.address === s.address && mine.grpcAddress === s.grpcAddress && mine.region === s.region && mine.capacityBytes === s.capacityBytes) {
      return NO_CHANGE;
    }
    return this.write({ ...mine, ...this.selfFields(), incarnation: nextIncarnation(mine.incarnation, 'change') }, nowMs);
  }

  private selfFields(): Omit<MemberRecord, 'incarnation' | 'status'> {
    const s = this.self;
    return { nodeId: s.nodeId, address: s.address, grpcAddress: s.grpcAddress, region: s.region, capacityBytes: s.capacityBytes };
  }

  /** New addresses for this node (listeners bound at start), announced with a new incarnation. */
  updateSelf(self: SelfInfo, nowMs: number): Change {
    this.self = self;
    return this.refreshSelf(nowMs);
  }

  /** The NodeInfo list of every member not removed. */
  nodes(nowMs: number): NodeInfo[] {
    return this.state
      .all()
      .filter((r) => r.status !== 'removed')
      .map((r) => {
        const isSelf = r.nodeId === this.self.nodeId;
        const peer = this.peers.get(r.nodeId);
        const offline = !isSelf && !this.online(r.nodeId, nowMs);
        return {
          node_id: r.nodeId,
          address: r.address,
          state: offline ? 'offline' : r.status === 'leaving' ? 'leaving' : 'active',
          capacity_bytes: r.capacityBytes,
          used_bytes: isSelf ? this.selfUsage.usedBytes : (peer?.usedBytes ?? 0),
          blob_count: isSelf ? this.selfUsage.blobCount : (peer?.blobCount ?? 0),
          grpc_address: r.grpcAddress,
          region: r.region,
          ...((isSelf ? this.selfMigration : peer?.migration) ? { migration: isSelf ? this.selfMigration : peer?.migration } : {}),
        } satisfies NodeInfo;
      });
  }

  /** GET /v1/cluster/state; this node shows as joining until it is admitted. */
  view(nowMs: number): ClusterStateView {
    const nodes = this.nodes(nowMs);
    if (!this.selfRecord()) {
      const s = this.self;
      nodes.push({
        node_id: s.nodeId, address: s.address, state: 'joining', capacity_bytes: s.capacityBytes,
        used_bytes: this.selfUsage.usedBytes, blob_count: this.selfUsage.blobCount, grpc_address: s.grpcAddress, region: s.region,
      });
    }
    return { nodes, ring_version: this.ringVersion };
  }

  /**
   * POST /v1/cluster/join: admits the node (or accepts it again, with its new address) as active,
   * with an incarnation above any seen for it, here or by the node itself.
   */
  join(req: JoinRequest, nowMs: number): { response: JoinResponse; change: Change } {
    const status = this.selfStatus();
    // Only a member admits: a node still joining, or removed, would admit into a view nobody shares.
    if ((status === 'joining' || status === 'removed') && req.node_id !== this.self.nodeId) {
      throw new BlobstoreError('unavailable', `node ${this.self.nodeId} is not a member of a cluster (${status}): join through a member`, {
        headers: { 'Retry-After': '1' },
      });
    }
    if (typeof req.node_id !== 'string' || req.node_id === '') throw invalidArgument('join: node_id is required');
    if (typeof req.address !== 'string' || !/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(req.address) || !validPort(req.address)) {
      throw invalidArgument('join: address is required as host:port (port 1-65535)');
    }
    if (!Number.isSafeInteger(req.capacity_bytes) || req.capacity_bytes < 0) throw invalidArgument('join: capacity_bytes is required (bytes)');
    const known = this.state.get(req.node_id);
    const fields = { address: req.address, grpcAddress: req.grpc_address ?? known?.grpcAddress ?? '', region: req.region ?? known?.region ?? '', capacityBytes: req.capacity_bytes };
    let change = NO_CHANGE;
    const same = known && known.status === 'active' && known.address === fields.address && known.grpcAddress === fields.grpcAddress
      && known.region === fields.region && known.capacityBytes === fields.capacityBytes;
    // A join sent before the node was told to leave (a late or repeated request: it carries an
    // older incarnation than the leave's) does not undo the leave. Re-admitting would race the
    // node's own removal at the same incarnation, and a second leave then outranks that removal.
    const stale = known?.status === 'leaving' && (req.incarnation ?? 0) < known.incarnation;
    if (!same && !stale) {
      const incarnation = nextIncarnation(Math.max(this.state.incarnationOf(req.node_id), req.incarnation ?? 0), 'join');
      change = this.write({ nodeId: req.node_id, incarnation, status: 'active', ...fields }, nowMs);
    }
    const peer = this.peers.get(req.node_id);
    if (peer) peer.lastSeenMs = nowMs;
    return { response: { accepted: true, ring_version: this.ringVersion, nodes: this.nodes(nowMs), members: this.state.all() }, change };
  }

  /** POST /v1/cluster/leave: `graceful` marks the node leaving (its data migrates first), else removes it at once. */
  leave(nodeId: string, graceful: boolean, nowMs: number): Change {
    const known = this.state.get(nodeId);
    if (!known || known.status === 'removed') throw new BlobstoreError('not_found', `node ${JSON.stringify(nodeId)} is not a member of the cluster`);
    const status: MemberStatus = graceful ? 'leaving' : 'removed';
    if (known.status === status) return NO_CHANGE;
    return this.write({ ...known, status, incarnation: nextIncarnation(known.incarnation, 'change') }, nowMs);
  }

  /** The node finished handing its data over: it removes itself. */
  finishLeaving(nowMs: number): Change {
    const mine = this.selfRecord();
    if (!mine || mine.status !== 'leaving') return NO_CHANGE;
    return this.write({ ...mine, status: 'removed', incarnation: nextIncarnation(mine.incarnation, 'change') }, nowMs);
  }

  /** The heartbeat this node sends. */
  heartbeatRequest(): HeartbeatRequest {
    return {
      node_id: this.self.nodeId, used_bytes: this.selfUsage.usedBytes, blob_count: this.selfUsage.blobCount,
      ring_version: this.ringVersion, members: this.state.all(), digest: this.state.digest(),
      ...(this.selfMigration ? { migration: this.selfMigration } : {}),
    };
  }

  /**
   * POST /v1/cluster/heartbeat. The caller's state is merged first, so a node that joined
   * elsewhere moments ago is known here by its own heartbeat. Unknown after that: ok false and
   * `rejoin`; removed: ok false and no command (it stays out).
   */
  heartbeat(req: HeartbeatRequest, nowMs: number): { response: HeartbeatResponse; change: Change } {
    if (typeof req.node_id !== 'string' || req.node_id === '') throw invalidArgument('heartbeat: node_id is required');
    const change = req.members ? this.absorb(req.members, nowMs) : NO_CHANGE;
    const caller = this.state.get(req.node_id);
    const response: HeartbeatResponse = { ok: true, ring_version: this.ringVersion, nodes: [], commands: [], digest: this.state.digest() };
    if (req.digest === undefined || req.digest !== this.state.digest()) response.members = this.state.all();
    if (!caller || caller.status === 'removed') {
      response.ok = false;
      if (!caller) response.commands = ['rejoin'];
      const why = caller ? 'was removed from the cluster' : 'is not a member of the cluster';
      throw new HeartbeatRefused(`heartbeat from node ${JSON.stringify(req.node_id)}, which ${why}`, response);
    }
    const peer = this.peers.get(req.node_id);
    if (peer) {
      peer.lastSeenMs = nowMs;
      peer.heard = true;
      peer.usedBytes = req.used_bytes;
      peer.blobCount = req.blob_count;
      peer.migration = req.migration;
    }
    if (req.ring_version < this.ringVersion) response.nodes = this.nodes(nowMs);
    return { response, change };
  }

  /** The answer to this node's heartbeat to `peerId` (or to its refusal). */
  heartbeatAnswered(peerId: string, res: HeartbeatResponse, nowMs: number): Change {
    const change = this.absorb(res.members ?? [], nowMs);
    const peer = this.peers.get(peerId);
    if (peer) {
      peer.lastSeenMs = nowMs;
      peer.heard = true;
    }
    const holds = (nodeId: string): boolean =>
      res.digest === this.state.digest() || res.members?.some((r) => r.nodeId === nodeId && r.status === 'removed') === true;
    // We are removed and the peer holds our tombstone, or it is removed and holds its own: it knows.
    if (this.selfStatus() === 'removed' && holds(this.self.nodeId)) this.removalKnown = true;
    if (this.state.get(peerId)?.status === 'removed' && holds(peerId)) this.settleRemoval(peerId);
    return change;
  }

  /** POST /v1/cluster/sync-ring: this node's ring; `newer` tells the node to gossip at once. */
  syncRing(version: number): { response: SyncRingResponse; newer: boolean } {
    if (!Number.isSafeInteger(version)) throw invalidArgument('sync-ring: ring_version is required');
    return {
      response: { ring_version: this.ringVersion, node_ids: [...this.ring.nodeIds], vnodes_per_node: this.ring.vnodesPerNode },
      newer: version > this.ringVersion,
    };
  }
}
