/**
 * The series only a cluster moves (membership, ring, peers, replication, erasure coding), with
 * their true values on a single node until a cluster module drives them through this API:
 * one node in total and active (itself), none offline, ring version 0, no peer_health series
 * until a peer's heartbeat is observed, no gRPC connections, an empty replication queue.
 */
import type { LateRead } from '../util/late.js';
import { CounterFamily, HistogramFamily } from './series.js';

/**
 * The spec's cluster-side latency histograms (blobstore_<kind>_latency_seconds), and the two steps
 * of a streamed EC store after its last byte: its columns sealed (from the check that the cluster
 * does not hold the blob already), its manifest durable on the id's owners.
 */
export const CLUSTER_LATENCIES = ['ec_encode', 'ec_decode', 'shard_fetch', 'shard_store', 'replicate', 'ec_seal', 'ec_manifest'] as const;
export type ClusterLatency = (typeof CLUSTER_LATENCIES)[number];

/** Repair and scrub figures of a node, read at scrape time. */
export interface RepairStats {
  queueDepth: number;
  bytesLeft: number;
  bytesPerSecond: number;
  etaSeconds: number;
  rateLimitBytesPerSecond: number;
  bytesRepaired: number;
  blobsRepaired: number;
  scrubBytesChecked: number;
}

/** Where the repair figures come from: the node's cluster (src/cluster/cluster.ts). */
export interface RepairSource {
  repairStats(): RepairStats;
}

const NO_REPAIR: RepairStats = { queueDepth: 0, bytesLeft: 0, bytesPerSecond: 0, etaSeconds: 0, rateLimitBytesPerSecond: 0, bytesRepaired: 0, blobsRepaired: 0, scrubBytesChecked: 0 };

/** How an EC read found its columns' holders (blobstore_ec_read_holders_total's label). */
const EC_HOLDER_LOOKUPS = ['ring', 'cached', 'survey'] as const;
export type EcHolderLookup = (typeof EC_HOLDER_LOOKUPS)[number];

export class ClusterMetrics {
  /** `repairSource`: the node's cluster, once the node's start has made it; none on a node alone. */
  constructor(private readonly repairSource?: LateRead<RepairSource>) {}

  nodesTotal = 1;
  nodesActive = 1;
  nodesOffline = 0;
  ringVersion = 0;
  grpcConnectionsActive = 0;
  replicationQueueDepth = 0;
  replicationLagSeconds = 0;
  /** Unix ms of the last successful outbound heartbeat; 0 = never. */
  lastHeartbeatMs = 0;
  /** Peers whose heartbeat was observed at least once: node_id -> online. */
  readonly peers = new Map<string, boolean>();

  readonly heartbeatFailures = new CounterFamily('blobstore_heartbeat_failures_total', 'Failed outbound heartbeats.', '', []);
  readonly ecReconstructions = new CounterFamily('blobstore_ec_reconstruction_total', 'Erasure-coding reconstructions.', '', []);
  readonly shardsMissing = new CounterFamily('blobstore_shards_missing_total', 'Missing shards detected.', '', []);
  readonly ecReadHolderLookups = new CounterFamily('blobstore_ec_read_holders_total', 'How erasure-coded reads found the holders of their columns: where the ring places them (no node asked), as an earlier read found them, or by asking every candidate.', 'how', EC_HOLDER_LOOKUPS);
  readonly ecReadsCut = new CounterFamily('blobstore_ec_reads_cut_total', 'Erasure-coded reads cut after their first byte: a stripe became unreadable mid-stream.', '', []);
  readonly ecRebuildMismatches = new CounterFamily('blobstore_ec_rebuild_mismatches_total', 'Columns EC repair rebuilt that did not match the checksum their store computed, and so were not stored.', '', []);
  readonly ecStreamedStores = new CounterFamily('blobstore_ec_streamed_stores_total', 'Erasure-coded stores whose columns left as the body arrived (placed by a key, found through a manifest).', '', []);
  readonly latencies: readonly HistogramFamily[] = CLUSTER_LATENCIES.map(
    (kind) => new HistogramFamily(`blobstore_${kind}_latency_seconds`, `Latency of ${kind.replace('_', ' ')} operations in seconds.`, '', []),
  );

  /** Repair on this node, read at scrape time: nothing queued until the cluster is made. */
  repair(): RepairStats {
    return this.repairSource?.peek()?.repairStats() ?? NO_REPAIR;
  }

  /** Member counts as this node sees them (active includes itself). */
  setMembers(total: number, active: number, offline: number): void {
    this.nodesTotal = total;
    this.nodesActive = active;
    this.nodesOffline = offline;
  }

  setRingVersion(version: number): void {
    this.ringVersion = version;
  }

  /** A peer's state after a heartbeat from it was observed (its series appears with the first call). */
  setPeerHealth(peer: string, online: boolean): void {
    this.peers.set(peer, online);
  }

  /** A peer left the cluster: its series goes. */
  forgetPeer(peer: string): void {
    this.peers.delete(peer);
  }

  heartbeatSucceeded(atMs = Date.now()): void {
    this.lastHeartbeatMs = atMs;
  }

  heartbeatFailed(): void {
    this.heartbeatFailures.add(0, 1);
  }

  setGrpcConnections(active: number): void {
    this.grpcConnectionsActive = active;
  }

  setReplication(queueDepth: number, lagSeconds: number): void {
    this.replicationQueueDepth = queueDepth;
    this.replicationLagSeconds = lagSeconds;
  }

  ecReconstructed(count = 1): void {
    this.ecReconstructions.add(0, count);
  }

  ecRebuildMismatch(): void {
    this.ecRebuildMismatches.add(0, 1);
  }

  ecStreamedStore(): void {
    this.ecStreamedStores.add(0, 1);
  }

  ecReadHolders(how: EcHolderLookup): void {
    this.ecReadHolderLookups.add(EC_HOLDER_LOOKUPS.indexOf(how), 1);
  }

  ecReadCut(): void {
    this.ecReadsCut.add(0, 1);
  }

  shardsMissingDetected(count = 1): void {
    this.shardsMissing.add(0, count);
  }

  /** One cluster operation took `startMs` (performance.now()) until now. */
  observe(kind: ClusterLatency, startMs: number): void {
    this.observeSeconds(kind, (performance.now() - startMs) / 1000);
  }

  /** One cluster operation took `seconds` (time summed over its parts). */
  observeSeconds(kind: ClusterLatency, seconds: number): void {
    this.latencies[CLUSTER_LATENCIES.indexOf(kind)]!.observe(0, seconds);
  }
}
