/**
 * The cluster side of a node, wired together and started and stopped in order: membership
 * (cluster-node.ts), peer channels, the replication queue's worker, anti-entropy, handoff and
 * remote reads. It is the blob service's Placement in a cluster, and serves ClusterService and
 * InternalService (src/grpc) and /v1/cluster/* (src/http).
 *
 *   start: membership (join or resume) ─▶ heartbeats ─▶ replicator ─▶ handoff ─▶ anti-entropy
 *   stop:  the same in reverse; the member state is persisted before the index closes
 */
import { timingSafeEqual } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError } from '../errors/errors.js';
import type { BlobMeta } from '../blob/meta.js';
import type { Logger } from '../log/logger.js';
import type { ClusterMetrics, RepairSource, RepairStats } from '../metrics/cluster-metrics.js';
import type { ByteRange, ChunkSink, FileSink, LocalStore } from '../service/local-store.js';
import type { Located, Placement } from '../service/placement.js';
import type { StoreContent } from '../service/blob-writer.js';
import type { PutResult } from '../blob/meta.js';
import { type Policy, staysWhereStored } from '../blob/policy.js';
import { READ_OWNERS, type Ring } from './ring.js';
import { EcReader } from './ec-reader.js';
import { type EcContent, EcWriter } from './ec-writer.js';
import { ClusterInternalApi } from './internal-api.js';
import { manifestMeta } from '../service/ec-meta.js';
import { EcRepairer } from './ec-repair.js';
import { ShardBatcher } from './shard-transfer.js';
import { Scrubber } from './scrubber.js';
import { ColumnHandoff } from './column-handoff.js';
import { ManifestHandoff } from './manifest-handoff.js';
import { LostColumns } from './lost-columns.js';
import { RepairControl, type RepairView } from './repair-control.js';
import type { ShardMeta } from '../blob/shard.js';
import { NO_RECORDER, type Recorder } from '../metrics/recorder.js';
import { AntiEntropy } from './anti-entropy.js';
import { ClusterNode } from './cluster-node.js';
import { Handoff } from './handoff.js';
import type { PersistedMembership, SelfInfo } from './membership.js';
import { PeerTransport } from './transport/peer-transport.js';
import { RemoteReader } from './remote-reader.js';
import { Replicator } from './replicator.js';
import { BlobSender } from './blob-sender.js';
import { storeReplica } from './transfer.js';
import { PeerLink, SECRET_METADATA } from './transport/peer-link.js';
import type { NodeTls } from '../tls/node-tls.js';
import { verifiedPeer } from '../tls/grpc-tls.js';
import type { AuthContext } from '@grpc/grpc-js/build/src/auth-context.js';

const MEMBERSHIP_KEY = 'membership';
/** How long no EC column has come in before the EC read slabs are readied. */
const EC_SLABS_IDLE_MS = 1000;

/** What the cluster needs of the node's index: its own small values (the member state). */
export interface ClusterStateStore {
  getMeta<T>(key: string): T | undefined;
  putMeta(key: string, value: unknown): Promise<void>;
}

export class Cluster implements Placement, RepairSource {
  readonly node: ClusterNode;
  /** Every call to a peer (transport/peer-transport.ts). */
  readonly transport: PeerTransport;
  readonly replicator: Replicator;
  readonly antiEntropy: AntiEntropy;
  readonly handoff: Handoff;
  readonly remote: RemoteReader;
  readonly ecWriter: EcWriter;
  readonly ecReader: EcReader;
  readonly ecRepair: EcRepairer;
  readonly scrubber: Scrubber;
  /** EC blobs whose columns a member removed from the ring held go to EC repair. */
  private readonly lostColumns: LostColumns;
  /** What peers ask of this node and hand to it (InternalService, /internal/v1). */
  readonly internal: ClusterInternalApi;
  /** The repair bandwidth cap (anti-entropy, handoff, EC repair), raised for a while by an admin. */
  readonly repairControl: RepairControl;
  private readonly secret: Buffer;
  private readonly repairing = new Set<string>();
  private started = false;
  /** Readies the EC read slabs once column stores pause (readySlabsWhenIdle). */
  private slabsTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly store: LocalStore,
    stateStore: ClusterStateStore,
    readonly config: NodeConfig,
    self: SelfInfo,
    private readonly metrics: ClusterMetrics,
    private readonly log: Logger,
    /** This node's used bytes and blob count, for its heartbeats. */
    usage: () => { usedBytes: number; blobCount: number },
    /** Corrupt copies found by the cluster's reads and the scrubber are counted here. */
    private readonly recorder: Recorder = NO_RECORDER,
    /** The node's certificate: calls to peers go over TLS with it. */
    private readonly tls: NodeTls | undefined = undefined,
  ) {
    this.secret = Buffer.from(config.clusterSecret);
    this.repairControl = new RepairControl(config.repairBytesPerSecond, log);
    this.transport = new PeerTransport({
      link: new PeerLink(config.clusterSecret, tls), maxMessageBytes: config.grpcMaxMessageBytes, windowBytes: config.grpcWindowBytes, callTimeoutMs: config.peerCallTimeoutMs,
      readConnectionsPerPeer: config.peerReadConnections, readIdleTimeoutMs: Math.max(config.peerCallTimeoutMs, 30_000),
    });
    // SeedNodes may name this node too, in any order (one list for every node); a name of its own
    // the list spells otherwise (a DNS name) is found by its answer (bootstrap.ts).
    const bare = (s: string): string => s.replace(/^https?:\/\//, '').replace(/\/$/, '');
    const isSelf = (s: string): boolean => bare(s) === self.address || bare(s) === config.listen;
    this.node = new ClusterNode({
      self,
      seeds: config.seedNodes.filter((s) => !isSelf(s)),
      bootstrapWaitMs: config.bootstrapWaitMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      offlineAfterMs: config.offlineAfterMs,
      vnodesPerNode: config.vnodesPerNode,
      usage,
      migration: () => {
        const p = this.handoff.progress;
        return p.active && p.blobsLeft > 0 ? { blobs_left: p.blobsLeft, bytes_left: p.bytesLeft, bytes_per_second: p.bytesPerSecond } : undefined;
      },
      load: () => stateStore.getMeta<PersistedMembership>(MEMBERSHIP_KEY),
      save: (state) => stateStore.putMeta(MEMBERSHIP_KEY, state),
    }, this.transport, metrics, log);
    const sender = new BlobSender(store, this.transport, {
      batchBytes: config.replicationBatchBytes,
      // Larger blobs stream; the batch limit also keeps one call under the message size.
      inlineMaxBytes: Math.min(config.smallBlobMaxBytes, config.grpcMaxMessageBytes - 64 * 1024),
      callTimeoutMs: Math.max(config.peerCallTimeoutMs, 30_000),
      streamChunksInFlight: config.replicationStreamChunks,
    });
    this.replicator = new Replicator(store, this.node, sender, metrics, log, {
      pageSize: 1024, retryMaxMs: config.replicationRetryMaxMs, retryTickMs: Math.min(1000, config.heartbeatIntervalMs),
      batchDelayMs: config.replicationBatchDelayMs,
      freshBytesMax: config.replicationMemoryBytes,
    });
    this.antiEntropy = new AntiEntropy(store, this.node, this.transport, sender, log, {
      intervalMs: config.repairIntervalMs, bucket: this.repairControl.bucket, treeMaxAgeMs: config.repairRescanMs,
      retryMs: Math.min(1000, config.heartbeatIntervalMs), batchBytes: config.replicationBatchBytes,
    }, (id, policy) => this.ecRepair.queue(id, policy, 'anti-entropy: an owner holds no column'));
    this.remote = new RemoteReader(this.node, this.transport, config);
    this.ecReader = new EcReader(store, this.node, this.transport, metrics, config, (id, policy, why, bytes, placement, suspect) => this.ecRepair.queue(id, policy, why, bytes, placement, suspect), (meta) => this.corruptColumn(meta), log);
    this.handoff = new Handoff(store, this.node, this.transport, sender, log, {
      intervalMs: config.handoffIntervalMs, bucket: this.repairControl.bucket, rescanMs: config.repairRescanMs,
    }, new ColumnHandoff(store, this.node, this.transport, this.ecReader, log, config.ecStoreTimeoutMs),
    new ManifestHandoff(store, this.node, this.transport, log, { rescanMs: config.repairRescanMs, timeoutMs: config.peerCallTimeoutMs }));
    this.ecRepair = new EcRepairer(store, this.node, this.transport, this.ecReader, metrics, config, log, {
      retryMaxMs: config.replicationRetryMaxMs, bucket: this.repairControl.bucket, timeoutMs: config.ecStoreTimeoutMs,
    });
    const batcher = new ShardBatcher(this.transport, { batchBytes: config.replicationBatchBytes, timeoutMs: config.ecStoreTimeoutMs });
    this.ecWriter = new EcWriter(store, this.node, this.transport, batcher, metrics, config, log, (_id, bytes) => {
      this.ecRepair.progress.blobsQueued++;
      this.ecRepair.progress.bytesLeft += bytes;
      this.ecRepair.kick();
    });
    this.internal = new ClusterInternalApi(store, config, this.antiEntropy, (meta) => this.corruptColumn(meta));
    this.scrubber = new Scrubber(store, { corruptBlob: (meta) => this.repair(meta), corruptColumn: (meta) => this.corruptColumn(meta) }, log, {
      bytesPerSecond: config.scrubBytesPerSecond, intervalMs: config.scrubIntervalMs,
    });
    this.lostColumns = new LostColumns(store, this.node, (id, policy, why, bytes, placement) => this.ecRepair.queue(id, policy, why, bytes, placement), log, () => !this.started);
    let members = new Set<string>();
    let before: Ring | undefined;
    this.node.onRingChange((ring) => {
      this.ecReader.forgetAll();
      this.handoff.kick();
      this.replicator.kick();
      // A member gone from the ring took its copies along: rebuild them now, not at the next round.
      const gone = [...members].filter((n) => !ring.nodeIds.includes(n));
      if (gone.length > 0) this.antiEntropy.kick();
      // Its columns too, which anti-entropy misses where every owner holds one (lost-columns.ts);
      // a leaving member still holds and hands over its own.
      const removed = gone.filter((n) => this.node.membership.record(n)?.status === 'removed');
      if (before && removed.length > 0 && this.started) this.lostColumns.lost(before, ring, removed);
      members = new Set(ring.nodeIds);
      before = ring;
    });
    this.node.onLeaving(() => this.handoff.kick());
  }

  /** Starts every part, in order. */
  async start(): Promise<void> {
    await this.node.start();
    this.replicator.start();
    // A fresh store's queue entry is mostly removed before its commit, and so never written.
    this.store.holdIndexCommits(() => this.replicator.caughtUp());
    this.ecRepair.start();
    // Both follow the ids the index takes in and lets go, instead of scanning it every pass.
    this.store.watchIds((id, policy, key, set) => {
      this.antiEntropy.watcher(id, policy, key, set);
      this.handoff.watcher(id, policy, key, set);
      if (set === 'column') this.readySlabsWhenIdle();
    });
    this.handoff.start();
    this.antiEntropy.start();
    this.scrubber.start();
    this.started = true;
  }

  /** Stops every part, in reverse order; waits for work in progress. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    clearTimeout(this.slabsTimer);
    await this.scrubber.stop();
    this.repairControl.stop();
    await this.antiEntropy.stop();
    await this.handoff.stop();
    await this.lostColumns.settled();
    this.store.watchIds(undefined);
    await this.ecRepair.stop();
    await this.replicator.stop();
    await this.node.stop();
    this.transport.close();
  }

  /**
   * The cluster stores EC columns here: its EC read slabs are readied in the background, a slab a
   * turn, once no column has come in for EC_SLABS_IDLE_MS (a cluster that uses no EC does not hold
   * them). Not during the store: the 56 MiB would add to the memory the store itself holds.
   */
  private readySlabsWhenIdle(): void {
    // Once readied (here, or by a read), later columns arm nothing.
    if (this.ecReader.slabsReadied) return;
    if (this.slabsTimer) {
      this.slabsTimer.refresh();
      return;
    }
    this.slabsTimer = setTimeout(() => {
      if (this.started) void this.ecReader.prefault();
    }, EC_SLABS_IDLE_MS).unref();
  }

  /**
   * An InternalService call: it carries the cluster secret (when one is set) and, with mutual
   * TLS (TLSCAFile), came over a connection whose client certificate verified.
   */
  checkPeer(call: { metadata: grpc.Metadata; getAuthContext?: () => AuthContext | null }): void {
    if (this.tls?.mutual && !verifiedPeer(call)) {
      throw new BlobstoreError('unauthenticated', 'node-to-node call without a client certificate that verifies against TLSCAFile');
    }
    if (this.secret.length === 0) return;
    const given = call.metadata.get(SECRET_METADATA)[0];
    if (!this.secretMatches(typeof given === 'string' ? given : given?.toString('utf8') ?? '')) {
      throw new BlobstoreError('unauthenticated', 'node-to-node call without the cluster secret');
    }
  }

  /** Whether node-to-node calls take a secret here (a node with tokens, or reachable beyond loopback). */
  get guarded(): boolean {
    return this.secret.length > 0;
  }

  secretMatches(given: string): boolean {
    if (this.secret.length === 0) return true;
    const g = Buffer.from(given);
    return g.length === this.secret.length && timingSafeEqual(g, this.secret);
  }

  // Placement: how the blob service places copies and reads what this node lacks.

  /**
   * A member now (admitted, not removed): the ring then names the owners. A removed node is out of
   * the ring and its peers stop talking to it: what it took would never reach an owner.
   */
  ready(): boolean {
    const status = this.node.membership.selfStatus();
    return status === 'active' || status === 'leaving';
  }

  /** Members this node can reach now, itself included. */
  nodesAvailable(): number {
    const self = this.node.nodeId;
    return this.node.ring.nodeIds.filter((n) => n === self || this.node.online(n)).length;
  }

  openEcStream(policy: Policy, size: number): FileSink | undefined {
    return this.ecWriter.openStream(policy, size);
  }

  storeEc(content: StoreContent, policy: Policy, labels: Buffer): Promise<PutResult> {
    return this.ecWriter.put(content as EcContent, policy, labels);
  }

  replicates(policy: Policy): boolean {
    const ring = this.node.ring;
    // NONE's copy moves only where the ring is larger than what a read asks (Ring.holders).
    if (staysWhereStored(policy)) return ring.size > READ_OWNERS;
    return ring.nodeIds.some((n) => n !== this.node.nodeId);
  }

  freshCopy(bytes: Uint8Array | ArrayBuffer): Buffer {
    return this.replicator.copy(bytes);
  }

  stored(id: Buffer, data?: Buffer): Promise<void> | undefined {
    this.replicator.stored(id, data);
    const need = Math.min(this.config.replicationAcks, Math.max(0, this.node.ring.size - 1));
    return need === 0 ? undefined : this.confirmedBy(id, need);
  }

  /** Resolves once `need` owners besides this node hold the blob; 503 after replicationAckTimeoutMs. */
  private async confirmedBy(id: Buffer, need: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BlobstoreError('unavailable',
        `stored on this node, but ${need} owner(s) did not confirm a copy within ${this.config.replicationAckTimeoutMs} ms; retrying is safe`,
        { headers: { 'Retry-After': '1' }, peer: true })), this.config.replicationAckTimeoutMs);
    });
    try {
      await Promise.race([this.replicator.waitFor(id, need), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  find(id: Buffer): Promise<Located | undefined> {
    // The manifest of a blob stored as it streamed in, kept here as one of its id's owners.
    const manifest = this.store.ecManifests.get(id);
    if (manifest) return Promise.resolve(manifestMeta(id, manifest));
    return this.remote.stat(id).then((found) => {
      if (!found) return undefined;
      // Columns of an EC blob are read from wherever they are, not from the node that answered.
      return found.ec ? { ...found.meta, ec: found.ec } : { ...found.meta, peer: found.peer };
    });
  }

  fetch(blob: Located, sink: ChunkSink, range?: ByteRange): Promise<void> {
    const read = blob.ec
      ? this.ecReader.read({ meta: blob, shardBytes: blob.ec.shardBytes, placement: blob.ec.placement, ...(blob.ec.columnChecksums ? { columnChecksums: blob.ec.columnChecksums } : {}) }, sink, range)
      : blob.peer === undefined
        ? Promise.reject(new BlobstoreError('internal', 'fetch of a blob held here'))
        : this.remote.fetch({ meta: blob, peer: blob.peer }, sink, range);
    return read.catch((err: unknown) => {
      if (!blob.ec) this.remote.forget(blob.id);
      // Bytes from peers that do not match the checksum: a corrupt copy found (counted once, here).
      if (err instanceof BlobstoreError && err.kind === 'corruption') this.recorder.countError(err);
      throw err;
    });
  }

  /** Repair on this node: EC columns and replicas queued and made, their rate, the bandwidth cap, the scrubber. */
  repairView(): RepairView {
    const p = this.ecRepair.progress;
    const r = this.antiEntropy.stats;
    const s = this.scrubber.progress;
    const limit = this.repairControl.bucket.rate;
    const bytesPerSecond = p.bytesPerSecond + (r.bytesQueued > 0 || r.bytesPerSecond > 0 ? r.bytesPerSecond : 0);
    const bytesLeft = p.bytesLeft + Math.max(0, r.bytesQueued);
    const rate = bytesPerSecond > 0 ? bytesPerSecond : limit;
    return {
      queue_depth: p.blobsQueued + Math.max(0, r.blobsQueued), bytes_left: bytesLeft, bytes_per_second: Math.round(bytesPerSecond),
      eta_seconds: bytesLeft > 0 && rate > 0 ? Math.ceil(bytesLeft / rate) : 0,
      rate_limit_bytes_per_second: limit, base_rate_bytes_per_second: this.repairControl.baseRate, boosted_until_ms: this.repairControl.boostedUntilMs,
      columns_repaired: p.columnsRepaired, blobs_repaired: r.blobsSent, bytes_repaired: p.bytesRepaired + r.bytesSent,
      scrub: { active: s.active, passes: s.passes, bytes_checked: s.bytesChecked, corrupt_found: s.corruptFound },
    };
  }

  /** repairView() for the repair gauges (ClusterMetrics reads it through the node's cluster slot). */
  repairStats(): RepairStats {
    const v = this.repairView();
    return {
      queueDepth: v.queue_depth, bytesLeft: v.bytes_left, bytesPerSecond: v.bytes_per_second, etaSeconds: v.eta_seconds,
      rateLimitBytesPerSecond: v.rate_limit_bytes_per_second, bytesRepaired: v.bytes_repaired, blobsRepaired: v.blobs_repaired, scrubBytesChecked: v.scrub.bytes_checked,
    };
  }

  /** A column here failed its check: it goes (not a user's delete) and is rebuilt from the blob's other columns. */
  corruptColumn(meta: ShardMeta): void {
    this.metrics.shardsMissingDetected(1);
    void this.store.deleteShards(meta.id, meta.shard.index, true).then(
      () => this.ecRepair.queue(meta.id, meta.policy, `column ${meta.shard.index} here was corrupt`, meta.size, meta.shard.placement),
      (err: Error) => this.log.error({ blob: meta.id.toString('hex'), err }, `dropping a corrupt column failed: ${err.message}`),
    );
  }

  /** Replaces a corrupt local copy with one from an owner, in the background. */
  repair(meta: BlobMeta): void {
    const key = meta.id.toString('hex');
    if (this.repairing.has(key)) return;
    this.repairing.add(key);
    void (async () => {
      const there = await this.remote.stat(meta.id, meta.policy);
      if (!there) {
        this.log.error({ blob: key }, 'repair: no owner holds a good copy of a blob whose local copy is corrupt');
        return;
      }
      const chunks: Buffer[] = [];
      await this.remote.fetch(there, (chunk) => void chunks.push(Buffer.from(chunk)));
      // The corrupt record goes (not a user's delete), the good bytes take its place.
      await this.store.delete(meta.id, true);
      await storeReplica(this.store, this.config, {
        id: meta.id, size: meta.size, checksum: meta.checksum, createdAtNs: meta.createdAtNs, policy: meta.policy as never, labels: meta.labels,
      }, Buffer.concat(chunks));
      this.log.warn({ blob: key, from: there.peer }, 'repair: a corrupt local copy was replaced from an owner');
    })().catch((err: Error) => this.log.error({ blob: key, err }, `repair failed: ${err.message}`)).finally(() => this.repairing.delete(key));
  }
}
