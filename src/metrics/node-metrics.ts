/**
 * A node's metrics: the Recorder the request path calls, every series of the spec (plus per-stage
 * latency, worker pool and event-loop series), the text exposition (prom-client's Registry) and
 * the JSON snapshots. src/metrics/README.md lists the series.
 *
 *   request path ──done/failed/stage──▶ typed arrays (series.ts)   ─┐
 *   cluster module ──ClusterMetrics──▶ numbers, typed arrays        ─┼─▶ scrape: refresh() -> Registry.metrics()
 *   engine, statfs, backend probe, pool, event loop ──refresh()──▶  ─┘          snapshot(), detail()
 */
import { Gauge, Registry } from 'prom-client';
import type { BlobstoreError } from '../errors/errors.js';
import type { PoolStats, StatsSource, StorageStats } from './storage-stats.js';

export type { PoolStats } from './storage-stats.js';
import type { Logger } from '../log/logger.js';
import { BackendCheck } from './backend-check.js';
import { ClusterMetrics, type RepairSource } from './cluster-metrics.js';
import type { LateRead } from '../util/late.js';
import { ERROR_TYPES, ErrorTypeIndex, errorTypeIndex } from './error-types.js';
import { EventLoopLag } from './event-loop.js';
import { type Operation, OPERATIONS, type Recorder, type Stage, STAGES } from './recorder.js';
import { microsBetween, type Ticks, ticks } from './clock.js';
import { registerRuntimeMetrics } from './runtime.js';
import { type Collected, type CollectedMetric, CounterFamily, HistogramFamily } from './series.js';

const OP_INDEX: Readonly<Record<Operation, number>> = { put: 0, get: 1, delete: 2, stat: 3, list: 4 };
const STAGE_INDEX = Object.freeze(Object.fromEntries(STAGES.map((s, i) => [s, i]))) as Readonly<Record<Stage, number>>;

/** The spec's JSON snapshot (GET /api/v1/metrics), field for field. */

/** How old a backend probe a scrape may report (it still reads the statfs figures each time). */
const SCRAPE_PROBE_MAX_AGE_MS = 10_000;
export interface MetricsSnapshot {
  nodeId: string;
  uptime: number;
  storage: { totalBytes: number; usedBytes: number; blobCount: number; shardCount: number };
  throughput: { bytesReadTotal: number; bytesWrittenTotal: number; operations: Record<Operation, number> };
  cluster: { nodesTotal: number; nodesActive: number; nodesOffline: number; ringVersion: number };
  health: { nodeUp: boolean; backendHealthy: boolean; peerHealth: Record<string, boolean> };
}

export interface LatencySummary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
}

/** Extra JSON for the web UI (GET /api/v1/metrics/detail); not part of the spec's shape. */
export interface MetricsDetail {
  nodeId: string;
  uptime: number;
  stages: Record<Stage, LatencySummary>;
  operations: Record<Operation, LatencySummary>;
  /** Requests that failed, by operation (the snapshot's operation counters count both). */
  failures: Record<Operation, number>;
  pool: PoolStats;
  eventLoopLagSeconds: { p50: number; p99: number };
  /**
   * The cluster as this node sees it, for the UI (read scope: /v1/cluster/state needs admin):
   * members with state, capacity and a leaving node's migration, the ring version, and this
   * node's replication queue. Absent on a node without a cluster.
   */
  cluster?: { ring_version: number; nodes: object[]; replication: { queueDepth: number; lagSeconds: number } };
}

/** The cluster as the UI's detail shows it (the cluster API's state: src/cluster/cluster-api.ts). */
export interface ClusterViewSource {
  state(): { ring_version: number; nodes: object[]; repair?: object };
}

/**
 * The metrics exist from a node's first moment: the engine records into them while it opens, and
 * the listeners that serve them open before the cluster is made. What comes later arrives through
 * set-once handles (src/util/late.ts) that the node's builder sets; none of them in a unit test.
 */
export interface NodeMetricsOptions {
  nodeId: string;
  dataDir: string;
  healthCheckTimeoutMs: number;
  /** Backend health changes are logged here. */
  log: Logger;
  /** The storage the gauges report and the backend check asks (the engine), once it is open. */
  engine?: LateRead<StatsSource>;
  /** The repair figures (the cluster), once the node's cluster is made. */
  repair?: LateRead<RepairSource>;
  /** The cluster for detail(), once it runs. */
  clusterView?: LateRead<ClusterViewSource>;
}

const NO_STATS: StorageStats = { capacityBytes: 0, freeBytes: 0, usedBytes: 0, storedBytes: 0, blobCount: 0, shardCount: 0, corruptionsDetected: 0 };

export class NodeMetrics implements Recorder {
  readonly registry = new Registry();
  readonly cluster: ClusterMetrics;
  readonly backend: BackendCheck;
  private readonly startedMs = performance.now();
  private readonly eventLoop = new EventLoopLag();
  /** Set once shutdown begins: node_up goes to 0 and /health answers 503. */
  private shuttingDown = false;
  private stats: StorageStats = NO_STATS;

  readonly operations = new CounterFamily('blobstore_operations_total', 'Requests answered (successful or not), by operation.', 'operation', OPERATIONS);
  readonly requestFailures = new CounterFamily('blobstore_request_failures_total', 'Requests that failed, by operation.', 'operation', OPERATIONS);
  readonly errors = new CounterFamily('blobstore_errors_total', 'Errors by type (src/metrics/README.md lists the types).', 'type', ERROR_TYPES);
  readonly bytesRead = new CounterFamily('blobstore_bytes_read_total', 'Blob bytes served.', '', []);
  readonly bytesWritten = new CounterFamily('blobstore_bytes_written_total', 'Blob bytes stored.', '', []);
  readonly latency: readonly HistogramFamily[] = OPERATIONS.map(
    (op) => new HistogramFamily(`blobstore_${op}_latency_seconds`, `Latency of successful ${op} requests in seconds.`, '', []),
  );
  readonly stages = new HistogramFamily('blobstore_stage_latency_seconds', 'Latency of each stage of a request in seconds.', 'stage', STAGES);

  constructor(readonly options: NodeMetricsOptions) {
    this.cluster = new ClusterMetrics(options.repair);
    this.backend = new BackendCheck(options.dataDir, options.healthCheckTimeoutMs, () => this.engine?.failure, options.log);
    this.registry.setDefaultLabels({ node: options.nodeId });
    this.register();
  }

  /** The engine whose storage the gauges report: it opens after these metrics (it records into them). */
  private get engine(): StatsSource | undefined {
    return this.options.engine?.peek();
  }

  /** Shutdown began (the node's stop, before its listeners drain). */
  markStopping(): void {
    this.shuttingDown = true;
  }

  get stopping(): boolean {
    return this.shuttingDown;
  }

  // ---- Recorder: called on the hot path; each call updates a few typed-array slots. ----

  done(op: Operation, start: Ticks, bytes: number): void {
    const i = OP_INDEX[op];
    this.operations.values[i]! += 1;
    this.latency[i]!.observeMicros(0, microsBetween(start, ticks()));
    if (bytes > 0) (i === OP_INDEX.put ? this.bytesWritten : this.bytesRead).values[0]! += bytes;
  }

  failed(op: Operation, err: BlobstoreError): void {
    const i = OP_INDEX[op];
    const type = errorTypeIndex(err);
    this.operations.values[i]! += 1;
    // A client that went away did not see the request fail.
    if (type !== ErrorTypeIndex.cancelled) this.requestFailures.values[i]! += 1;
    // A corrupt copy is counted where it was found (countError), once, whatever the request did next.
    if (type !== ErrorTypeIndex.corruption) this.errors.values[type]! += 1;
  }

  stage(stage: Stage, start: Ticks): Ticks {
    const now = ticks();
    this.stages.observeMicros(STAGE_INDEX[stage], microsBetween(start, now));
    return now;
  }

  /** An error outside a request's outcome (a corrupt copy found, a failed background copy). */
  countError(err: BlobstoreError): void {
    this.errors.values[errorTypeIndex(err)]! += 1;
  }

  // ---- Scrape time ----

  uptimeSeconds(): number {
    return (performance.now() - this.startedMs) / 1000;
  }

  /**
   * Checks the backend (a probe at most every SCRAPE_PROBE_MAX_AGE_MS; /health always probes) and
   * reads storage figures; the gauges and snapshots report what it found.
   */
  async refresh(): Promise<void> {
    const status = await this.backend.check(SCRAPE_PROBE_MAX_AGE_MS);
    if (!this.engine) return;
    try {
      this.stats = await this.engine.stats();
    } catch {
      // The backend is failing (the check says so); the last figures stand meanwhile.
      if (status.capacity) this.stats = { ...this.stats, ...status.capacity };
    }
  }

  get backendHealthy(): boolean {
    return this.backend.last.healthy;
  }

  get nodeUp(): boolean {
    return this.backendHealthy && !this.stopping && this.engine !== undefined;
  }

  pool(): PoolStats {
    return this.engine?.workerPool?.stats() ?? { threads: 0, queueDepth: 0, utilisation: 0 };
  }

  /** The text exposition (content type Registry.PROMETHEUS_CONTENT_TYPE). */
  async exposition(): Promise<string> {
    await this.refresh();
    return this.registry.metrics();
  }

  async snapshot(): Promise<MetricsSnapshot> {
    await this.refresh();
    const c = this.cluster;
    const operations = {} as Record<Operation, number>;
    for (const op of OPERATIONS) operations[op] = this.operations.value(OP_INDEX[op]);
    return {
      nodeId: this.options.nodeId,
      uptime: Math.floor(this.uptimeSeconds()),
      storage: { totalBytes: this.stats.capacityBytes, usedBytes: this.stats.usedBytes, blobCount: this.stats.blobCount, shardCount: this.stats.shardCount },
      throughput: { bytesReadTotal: this.bytesRead.value(0), bytesWrittenTotal: this.bytesWritten.value(0), operations },
      cluster: { nodesTotal: c.nodesTotal, nodesActive: c.nodesActive, nodesOffline: c.nodesOffline, ringVersion: c.ringVersion },
      health: { nodeUp: this.nodeUp, backendHealthy: this.backendHealthy, peerHealth: Object.fromEntries(c.peers) },
    };
  }

  /** Percentiles estimated from the histogram buckets (see HistogramFamily.quantile), in seconds. */
  detail(): MetricsDetail {
    const summary = (h: HistogramFamily, series: number): LatencySummary => ({
      count: h.count(series), p50: h.quantile(series, 0.5), p95: h.quantile(series, 0.95), p99: h.quantile(series, 0.99),
    });
    const stages = {} as Record<Stage, LatencySummary>;
    for (const s of STAGES) stages[s] = summary(this.stages, STAGE_INDEX[s]);
    const operations = {} as Record<Operation, LatencySummary>;
    for (const op of OPERATIONS) operations[op] = summary(this.latency[OP_INDEX[op]]!, 0);
    const failures = {} as Record<Operation, number>;
    for (const op of OPERATIONS) failures[op] = this.requestFailures.value(OP_INDEX[op]);
    const lag = this.eventLoop.quantiles();
    const clusterView = this.options.clusterView?.peek();
    return {
      nodeId: this.options.nodeId,
      uptime: Math.floor(this.uptimeSeconds()),
      stages,
      operations,
      failures,
      pool: this.pool(),
      eventLoopLagSeconds: { p50: lag.p50, p99: lag.p99 },
      ...(clusterView ? {
        cluster: { ...clusterView.state(), replication: { queueDepth: this.cluster.replicationQueueDepth, lagSeconds: this.cluster.replicationLagSeconds } },
      } : {}),
    };
  }

  close(): void {
    this.shuttingDown = true;
    this.eventLoop.close();
  }

  // ---- Registration (the order of the exposition) ----

  private gauge(name: string, help: string, read: () => number): void {
    new Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
  }

  private add(metric: CollectedMetric): void {
    // prom-client's Registry formats any object with a name and get(); its .d.ts admits only its own classes.
    this.registry.registerMetric(metric as unknown as Gauge);
  }

  private register(): void {
    const c = this.cluster;
    this.gauge('blobstore_node_up', '1 while the node serves and its storage backend is healthy, else 0.', () => +this.nodeUp);
    this.gauge('blobstore_uptime_seconds', 'Seconds since the process started (recomputed on each scrape).', () => this.uptimeSeconds());
    this.gauge('blobstore_last_heartbeat_timestamp', 'Unix time (seconds) of the last successful outbound heartbeat; 0 = never.', () => c.lastHeartbeatMs / 1000);
    this.gauge('blobstore_backend_healthy', '1 when the storage backend check passes, else 0.', () => +this.backendHealthy);
    this.gauge('blobstore_grpc_connections_active', 'Live outbound gRPC connections to peers.', () => c.grpcConnectionsActive);
    new Gauge({
      name: 'blobstore_peer_health', help: '1 peer online, 0 offline; a peer appears after its first observed heartbeat.', labelNames: ['peer'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [peer, online] of c.peers) this.set({ peer }, +online);
      },
    });
    // Four gauges of the spec are named like counters (_total) or summaries (_count):
    // capacity_bytes_total, blob_count, shard_count, nodes_total. The spec fixes both the names and
    // the type, so they are gauges, and promtool's naming lint flags exactly these four (README).
    this.gauge('blobstore_capacity_bytes_total', 'Capacity of the data dir file system in bytes.', () => this.stats.capacityBytes);
    this.gauge('blobstore_capacity_bytes_used', 'Bytes the node uses on disk (segments and blob files).', () => this.stats.usedBytes);
    this.gauge('blobstore_blob_count', 'Blobs stored on the node.', () => this.stats.blobCount);
    this.gauge('blobstore_shard_count', 'Erasure-coded shards stored on the node.', () => this.stats.shardCount);
    this.add(this.bytesRead);
    this.add(this.bytesWritten);
    this.add(this.operations);
    for (const h of this.latency) this.add(h);
    for (const h of c.latencies) this.add(h);
    this.gauge('blobstore_nodes_total', 'Cluster members as seen by this node.', () => c.nodesTotal);
    this.gauge('blobstore_nodes_active', 'Active members (including this node).', () => c.nodesActive);
    this.gauge('blobstore_nodes_offline', 'Offline members.', () => c.nodesOffline);
    this.add(c.heartbeatFailures);
    this.gauge('blobstore_ring_version', 'Current consistent-hash ring version.', () => c.ringVersion);
    this.gauge('blobstore_replication_queue_depth', 'Pending replication operations.', () => c.replicationQueueDepth);
    this.gauge('blobstore_replication_lag_seconds', 'Estimated replication lag in seconds.', () => c.replicationLagSeconds);
    this.add(c.ecReconstructions);
    this.add(c.ecReadHolderLookups);
    this.add(c.ecReadsCut);
    this.add(c.ecStreamedStores);
    this.add(c.shardsMissing);
    // Beyond the spec: repair's progress and its bandwidth cap (docs/erasure-coding.md), the scrubber.
    this.gauge('blobstore_repair_queue_depth', 'Blobs queued for repair (EC columns to rebuild, replicas a peer lacks).', () => c.repair().queueDepth);
    this.gauge('blobstore_repair_bytes_left', 'Bytes the queued repairs are estimated to rebuild.', () => c.repair().bytesLeft);
    this.gauge('blobstore_repair_bytes_per_second', 'Bytes rebuilt per second in the last repair pass.', () => c.repair().bytesPerSecond);
    this.gauge('blobstore_repair_eta_seconds', 'Estimated seconds until the repair queue is empty.', () => c.repair().etaSeconds);
    this.gauge('blobstore_repair_rate_limit_bytes_per_second', 'The repair bandwidth cap in force (0: none).', () => c.repair().rateLimitBytesPerSecond);
    this.add(counterOf('blobstore_repair_bytes_total', 'Bytes repair rebuilt (EC columns) or copied (replicas).', () => c.repair().bytesRepaired));
    this.add(counterOf('blobstore_repair_blobs_total', 'Replicas repair copied to owners that lacked them.', () => c.repair().blobsRepaired));
    this.add(counterOf('blobstore_scrub_bytes_total', 'Bytes read and verified by the scrubber.', () => c.repair().scrubBytesChecked));
    this.add(c.ecRebuildMismatches);
    this.add(this.errors);
    this.add(this.requestFailures);
    // Beyond the spec: where the time goes.
    this.add(this.stages);
    this.gauge('blobstore_pool_threads', 'Worker pool threads (0 when the node runs no pool).', () => this.pool().threads);
    this.gauge('blobstore_pool_queue_depth', 'Tasks waiting for a worker thread.', () => this.pool().queueDepth);
    this.gauge('blobstore_pool_utilisation_ratio', 'Share of the worker threads\' time spent running tasks (0..1).', () => this.pool().utilisation);
    this.add(new EventLoopSummary(this.eventLoop));
    // The standard process_* and nodejs_* series (runtime.ts).
    registerRuntimeMetrics(this.registry);
  }
}

/** A counter whose value is read at scrape time (a running total kept elsewhere). */
function counterOf(name: string, help: string, read: () => number): CollectedMetric {
  return {
    name, help,
    get: () => Promise.resolve({ name, help, type: 'counter', aggregator: 'sum', values: [{ labels: {}, value: read() }] }),
    reset: () => undefined,
  } as unknown as CollectedMetric;
}

/** blobstore_event_loop_lag_seconds: quantiles of the last window, sum and count over the run. */
class EventLoopSummary implements CollectedMetric {
  readonly name = 'blobstore_event_loop_lag_seconds';
  readonly help = 'Event-loop delay in seconds (quantiles over the last 10 s window).';

  constructor(private readonly lag: EventLoopLag) {}

  async get(): Promise<Collected> {
    const q = this.lag.quantiles();
    const t = this.lag.totals();
    return {
      name: this.name, help: this.help, type: 'summary', aggregator: 'sum',
      values: [
        { labels: { quantile: 0.5 }, value: q.p50 },
        { labels: { quantile: 0.99 }, value: q.p99 },
        { metricName: `${this.name}_sum`, labels: {}, value: t.sumSeconds },
        { metricName: `${this.name}_count`, labels: {}, value: t.count },
      ],
    };
  }

  reset(): void {}
}
