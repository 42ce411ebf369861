/**
 * This node in its cluster: the membership state machine (membership.ts) with the I/O around it.
 *
 *   start ── no record of itself ── probes every seed each round (bootstrap.ts):
 *              a member among them: POST /v1/cluster/join through it
 *              all joining: the lowest node id heard admits itself (founds), the rest join it
 *              no seeds (or only itself): admits itself (a one-node cluster to join)
 *   start ── a record of itself (a restart) ── announces itself to every member over its API address
 *   every HeartbeatInterval: Heartbeat (gRPC) to every peer ── merge answers ── persist, metrics
 *   answered `rejoin` ── Join (gRPC) through that peer
 *
 * Heartbeats go over gRPC only: a restart may move a node's gRPC listener (a default port taken:
 * a free one), and the announcement, over the API address that stays, tells its members where
 * before any heartbeat is due; their answers tell it where theirs are.
 *
 * The public cluster endpoints (HTTP and gRPC ClusterService) call join/leave/heartbeat/view/
 * syncRing here. Every change of the member state is persisted (LMDB, with the index) before it
 * is acted on, and listeners (replication, repair, handoff) hear of ring changes.
 */
import { BlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { ClusterMetrics } from '../metrics/cluster-metrics.js';
import {
  type Change,
  type ClusterStateView,
  HeartbeatRefused,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinRequest,
  type JoinResponse,
  Membership,
  type Migration,
  type PersistedMembership,
  type SelfInfo,
  type SyncRingResponse,
} from './membership.js';
import { Bootstrap, type BootstrapAnswer, type BootstrapProbe } from './bootstrap.js';
import { parseRecord, type MemberRecord } from './member-state.js';
import { PeerCallError } from './transport/grpc-peers.js';
import type { PeerTransport } from './transport/peer-transport.js';
import type { Ring } from './ring.js';

export interface ClusterNodeOptions {
  self: SelfInfo;
  /** SeedNodes without this node's own addresses (a DNS name of its own is found by its answer). */
  seeds: readonly string[];
  /** How long a bootstrap waits for every seed before a majority of them may found the cluster. */
  bootstrapWaitMs: number;
  heartbeatIntervalMs: number;
  offlineAfterMs: number;
  vnodesPerNode: number;
  /** This node's used bytes and blob count (read before each heartbeat round). */
  usage(): { usedBytes: number; blobCount: number };
  /** This node's data handoff while it runs (read before each heartbeat round). */
  migration(): Migration | undefined;
  /** Where the member state is kept between restarts. */
  load(): PersistedMembership | undefined;
  save(state: PersistedMembership): Promise<void>;
}

/** Ring changes, for the replicator, repair and handoff. */
export type RingListener = (ring: Ring) => void;

/** Records as they travel in gRPC messages (int64 as numbers or strings, snake_case). */
export function recordsFromWire(list: unknown): MemberRecord[] {
  if (!Array.isArray(list)) return [];
  const out: MemberRecord[] = [];
  for (const item of list) {
    const r = parseRecord(item);
    if (r) out.push(r);
  }
  return out;
}

export function recordsToWire(records: readonly MemberRecord[]): object[] {
  return records.map((r) => ({
    node_id: r.nodeId, incarnation: r.incarnation, status: r.status, address: r.address,
    grpc_address: r.grpcAddress, region: r.region, capacity_bytes: r.capacityBytes,
  }));
}

/** A bootstrap answer as it came over HTTP (anything else counts as no answer). */
function bootstrapAnswerOf(body: unknown): BootstrapAnswer | undefined {
  const b = body as Partial<BootstrapAnswer> | null;
  if (!b || typeof b.node_id !== 'string' || typeof b.member !== 'boolean') return undefined;
  return { node_id: b.node_id, member: b.member, candidate: typeof b.candidate === 'string' ? b.candidate : '' };
}

/** Deadline of a join or heartbeat over HTTP. */
const HTTP_CALL_TIMEOUT_MS = 5000;

export class ClusterNode {
  readonly membership: Membership;
  private readonly bootstrap: Bootstrap;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private joinTimer: NodeJS.Timeout | undefined;
  private readonly ringListeners: RingListener[] = [];
  private readonly leavingListeners: (() => void)[] = [];
  private saving: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Peers with a heartbeat in flight. */
  private readonly beatingTo = new Set<string>();

  constructor(
    private readonly options: ClusterNodeOptions,
    private readonly transport: PeerTransport,
    private readonly metrics: ClusterMetrics,
    private readonly log: Logger,
  ) {
    this.bootstrap = new Bootstrap(options.self.nodeId, Date.now(), options.bootstrapWaitMs, 10 * options.heartbeatIntervalMs);
    this.membership = new Membership(options.self, options.load(), {
      vnodesPerNode: options.vnodesPerNode,
      offlineAfterMs: options.offlineAfterMs,
      tellRemovedMs: 40 * options.offlineAfterMs,
    }, Date.now());
  }

  /**
   * A heartbeat that takes longer than this failed: a third of the offline timeout (two misses
   * still leave time for a third before the peer counts as offline), at least two intervals.
   */
  private get heartbeatDeadlineMs(): number {
    return Math.max(2 * this.options.heartbeatIntervalMs, Math.floor(this.options.offlineAfterMs / 3));
  }

  get ring(): Ring {
    return this.membership.ring;
  }

  get nodeId(): string {
    return this.options.self.nodeId;
  }

  onRingChange(listener: RingListener): void {
    this.ringListeners.push(listener);
  }

  /** Called when this node becomes `leaving` (its data must move before it goes). */
  onLeaving(listener: () => void): void {
    this.leavingListeners.push(listener);
  }

  /** Starts: joins (or admits itself), then heartbeats every interval. */
  async start(): Promise<void> {
    const change = this.membership.updateSelf(this.options.self, Date.now());
    if (!this.membership.selfRecord()) {
      if (this.options.seeds.length === 0) await this.found('no seed nodes but itself');
      else this.bootstrapRound(0);
    } else {
      await this.apply(change);
      this.announce();
      const status = this.membership.selfStatus();
      if (status === 'removed') this.log.warn('cluster: this node was removed from the cluster; it stays out until a join admits it again');
      if (status === 'leaving') for (const l of this.leavingListeners) l();
    }
    this.heartbeatTimer = setInterval(() => void this.heartbeatRound(), this.options.heartbeatIntervalMs);
    this.heartbeatTimer.unref();
    this.refreshMetrics();
  }

  private joinRequestOf(): JoinRequest {
    const s = this.options.self;
    return {
      node_id: s.nodeId, address: s.address, capacity_bytes: s.capacityBytes, grpc_address: s.grpcAddress, region: s.region,
      incarnation: this.membership.selfRecord()?.incarnation ?? 0,
    };
  }

  /** Admits itself: the first member of a cluster the others join. */
  private async found(why: string): Promise<void> {
    this.log.info({ nodeId: this.nodeId }, `cluster: this node forms the cluster (${why}); the others join it`);
    await this.apply(this.membership.join(this.joinRequestOf(), Date.now()).change);
  }

  /** Between bootstrap rounds: half a heartbeat interval, within 50-500 ms. */
  private get bootstrapPauseMs(): number {
    return Math.max(50, Math.min(500, Math.floor(this.options.heartbeatIntervalMs / 2)));
  }

  /** One round of probes to every seed, then the step bootstrap.ts decides (bootstrap.ts has the rule). */
  private bootstrapRound(round: number): void {
    if (this.stopped || this.membership.selfStatus() !== 'joining') return;
    const probe = this.bootstrap.probe(Date.now());
    const timeoutMs = Math.max(500, Math.min(HTTP_CALL_TIMEOUT_MS, 2 * this.options.heartbeatIntervalMs));
    void Promise.all(this.options.seeds.map((seed) =>
      this.postJson<BootstrapAnswer>(seed, '/v1/cluster/bootstrap', probe, [200], timeoutMs).then(bootstrapAnswerOf, () => undefined),
    )).then(async (answers) => {
      if (this.stopped || this.membership.selfStatus() !== 'joining') return;
      const step = this.bootstrap.decide(answers, Date.now());
      if (step.kind === 'found') return this.found(`the lowest node id among ${answers.filter(Boolean).length + 1} seed nodes`);
      if (step.kind === 'join') {
        const seed = this.options.seeds[step.via]!;
        try {
          const response = await this.joinThroughSeed(seed);
          await this.apply(this.membership.absorb(recordsFromWire(response.members), Date.now()));
          this.log.info({ seed, ringVersion: this.membership.ringVersion }, 'cluster: joined');
          this.heartbeatRound();
          return;
        } catch (err) {
          this.log.warn({ seed, err: (err as Error).message }, 'cluster: join failed; retrying');
        }
      } else if (round % 10 === 9) {
        this.log.warn({ round }, `cluster: not a member yet: ${step.why}`);
      }
      this.joinTimer = setTimeout(() => this.bootstrapRound(round + 1), this.bootstrapPauseMs);
      this.joinTimer.unref();
    });
  }

  /** A probe from a node bootstrapping (POST /v1/cluster/bootstrap): what this node knows. */
  bootstrapProbe(probe: BootstrapProbe): BootstrapAnswer {
    if (this.membership.selfStatus() !== 'joining') return { node_id: this.nodeId, candidate: '', member: true };
    const now = Date.now();
    this.bootstrap.hear(probe, now);
    return { ...this.bootstrap.probe(now), member: false };
  }

  private async joinThroughSeed(seed: string): Promise<JoinResponse> {
    const body = await this.postJson<JoinResponse>(seed, '/v1/cluster/join', this.joinRequestOf(), [200]);
    if (!body.accepted) throw new Error(`join through ${seed}: not accepted`);
    return body;
  }

  /** A cluster call over a peer's HTTP API (what SeedNodes and NodeInfo.address name). */
  private postJson<T>(address: string, path: string, body: unknown, statuses: readonly number[], timeoutMs = HTTP_CALL_TIMEOUT_MS): Promise<T> {
    return this.transport.postJson<T>(address, path, body, statuses, timeoutMs);
  }

  /**
   * A restarted member's first heartbeat to each member goes to its API address: its gRPC address
   * may have moved since, and so may theirs (a whole cluster restarted), so that only the API
   * addresses are known to reach. Answered as a heartbeat is; a member that is not up yet hears
   * of this node from its own announcement's answer when it starts.
   */
  private announce(): void {
    const req = this.membership.heartbeatRequest();
    const wire = { ...req, members: recordsToWire(req.members ?? []) };
    for (const target of this.membership.heartbeatTargets()) {
      void this.postJson<HeartbeatResponse>(target.address, '/v1/cluster/heartbeat', wire, [200, 404], this.heartbeatDeadlineMs)
        .then((res) => this.answered(target, res), () => undefined)
        .catch((err: Error) => this.log.warn({ peer: target.nodeId, err: err.message }, 'cluster: announcement answer'));
    }
  }

  /**
   * One heartbeat to every peer that has none in flight: a slow or frozen peer holds up only its
   * own heartbeat (its call waits for its deadline), never the others'. Answers are merged as
   * they come.
   */
  private heartbeatRound(): void {
    if (this.stopped) return;
    const now = Date.now();
    this.membership.selfUsage = this.options.usage();
    this.membership.selfMigration = this.options.migration();
    this.membership.expireRemoved(now);
    for (const target of this.membership.heartbeatTargets()) {
      if (this.beatingTo.has(target.nodeId)) continue;
      this.beatingTo.add(target.nodeId);
      void this.heartbeatTo(target)
        .catch((err: Error) => this.log.error({ peer: target.nodeId, err }, `cluster: heartbeat: ${err.message}`))
        .finally(() => this.beatingTo.delete(target.nodeId));
    }
    this.refreshMetrics();
  }

  private async heartbeatTo(target: MemberRecord): Promise<void> {
    if (target.grpcAddress === '') return;
    const req = this.membership.heartbeatRequest();
    const wire = { ...req, members: recordsToWire(req.members ?? []) };
    let res: HeartbeatResponse;
    try {
      res = await this.transport.membership<HeartbeatResponse>(target, 'Heartbeat', wire, this.heartbeatDeadlineMs);
    } catch (err) {
      if (!(err instanceof PeerCallError)) throw err;
      this.metrics.heartbeatFailed();
      return;
    }
    await this.answered(target, res);
  }

  /** A member's answer to a heartbeat (or an announcement): merged; `rejoin` is a Join through it. */
  private async answered(target: MemberRecord, res: HeartbeatResponse): Promise<void> {
    this.metrics.heartbeatSucceeded();
    const answer = { ...res, ring_version: Number(res.ring_version), members: res.members && recordsFromWire(res.members) };
    await this.apply(this.membership.heartbeatAnswered(target.nodeId, answer, Date.now()));
    if (!res.ok && (res.commands ?? []).includes('rejoin') && this.membership.selfStatus() !== 'removed') {
      this.log.info({ peer: target.nodeId }, 'cluster: peer does not know this node: rejoining through it');
      try {
        // Its record as just merged: the answer may have carried its current gRPC address.
        const joined = await this.transport.membership<JoinResponse>(this.membership.record(target.nodeId) ?? target, 'Join', this.joinRequestOf());
        await this.apply(this.membership.absorb(recordsFromWire(joined.members), Date.now()));
      } catch (err) {
        this.log.warn({ peer: target.nodeId, err: (err as Error).message }, 'cluster: rejoin failed; retrying at the next heartbeat');
      }
    }
  }

  /** Persists a change, then tells the listeners; peers of removed members lose their channels. */
  private async apply(change: Change): Promise<void> {
    if (!change.stateChanged) return;
    const wasLeaving = this.leavingSeen;
    this.saving = this.saving.then(() => this.options.save(this.membership.persisted())).catch((err: Error) => {
      this.log.error({ err: err.message }, 'cluster: could not persist the member state');
    });
    await this.saving;
    const keep = new Set(this.membership.heartbeatTargets().map((r) => r.nodeId));
    this.transport.retain(keep);
    if (change.ringChanged) {
      this.log.info({ ringVersion: this.membership.ringVersion, members: this.membership.ring.nodeIds }, 'cluster: ring changed');
      for (const l of this.ringListeners) l(this.membership.ring);
    }
    const status = this.membership.selfStatus();
    this.leavingSeen = status === 'leaving';
    if (status === 'leaving' && !wasLeaving) for (const l of this.leavingListeners) l();
    if (status === 'removed' && this.announcedRemoved === false) {
      this.announcedRemoved = true;
      this.log.warn('cluster: this node is removed from the cluster (it keeps serving what it holds)');
    }
    this.refreshMetrics();
  }

  private leavingSeen = false;
  private announcedRemoved = false;

  refreshMetrics(): void {
    const now = Date.now();
    const nodes = this.membership.nodes(now);
    const offline = nodes.filter((n) => n.state === 'offline').length;
    // A node that knows of no member yet is a cluster of one, itself active. A removed node lists
    // the members it last knew, all of them offline to it: active + offline is always the total.
    if (nodes.length === 0) this.metrics.setMembers(1, 1, 0);
    else this.metrics.setMembers(nodes.length, nodes.length - offline, offline);
    this.metrics.setRingVersion(this.membership.ringVersion);
    // A removed member is no peer: its series goes (it was frozen at its last value while the
    // node still told it of its removal).
    const health = this.membership.peerHealth(now);
    for (const peer of [...this.metrics.peers.keys()]) if (!health.has(peer)) this.metrics.forgetPeer(peer);
    for (const [peer, online] of health) this.metrics.setPeerHealth(peer, online);
    this.metrics.setGrpcConnections(this.transport.connected());
  }

  /** A peer is reachable by what this node heard of it lately. */
  online(nodeId: string): boolean {
    return this.membership.online(nodeId, Date.now());
  }

  /** The record of a member (for its gRPC address). */
  member(nodeId: string): MemberRecord | undefined {
    return this.membership.record(nodeId);
  }

  // The public cluster endpoints (ClusterService over gRPC, /v1/cluster/* over HTTP).

  async join(req: JoinRequest): Promise<JoinResponse> {
    const { response, change } = this.membership.join(req, Date.now());
    await this.apply(change);
    if (change.stateChanged) this.log.info({ peer: req.node_id, address: req.address }, 'cluster: node admitted');
    return response;
  }

  /**
   * A graceful leave moves the node's data off it first, which the node does itself: one that is
   * offline would stay `leaving` (shown offline) for ever, so it is refused (412) with the way out,
   * a removal (its data is then rebuilt from the other copies). The spec's graceful leave starts
   * from `active`.
   */
  async leave(nodeId: string, graceful: boolean): Promise<void> {
    const known = this.membership.record(nodeId);
    if (graceful && nodeId !== this.nodeId && known?.status === 'active' && (!this.membership.heard(nodeId) || !this.online(nodeId))) {
      throw new BlobstoreError('failed_precondition', `node ${nodeId} is offline (not heard from within ${this.options.offlineAfterMs} ms, or not yet since this node started): a graceful leave needs it up to hand its data over; `
        + 'retry once it is up, or remove it with graceful false (its data is then rebuilt from the other copies)');
    }
    const change = this.membership.leave(nodeId, graceful, Date.now());
    await this.apply(change);
    if (change.stateChanged) this.log.info({ peer: nodeId, graceful }, graceful ? 'cluster: node leaving (its data moves first)' : 'cluster: node removed');
    this.heartbeatRound();
  }

  async heartbeat(req: HeartbeatRequest): Promise<HeartbeatResponse> {
    try {
      const { response, change } = this.membership.heartbeat(req, Date.now());
      await this.apply(change);
      return response;
    } catch (err) {
      if (err instanceof HeartbeatRefused) await this.apply(this.membership.absorb(req.members ?? [], Date.now()));
      throw err;
    }
  }

  view(): ClusterStateView {
    this.membership.selfUsage = this.options.usage();
    this.membership.selfMigration = this.options.migration();
    return this.membership.view(Date.now());
  }

  syncRing(version: number): SyncRingResponse {
    const { response, newer } = this.membership.syncRing(version);
    if (newer) this.heartbeatRound();
    return response;
  }

  /** The node finished handing its data over: it leaves the ring for good. */
  async finishLeaving(): Promise<void> {
    await this.apply(this.membership.finishLeaving(Date.now()));
    this.heartbeatRound();
  }

  /** This node's used bytes and blob count, for heartbeats and its NodeInfo. */
  setUsage(usedBytes: number, blobCount: number): void {
    this.membership.selfUsage = { usedBytes, blobCount };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.joinTimer);
    await this.saving;
  }
}
