/**
 * The storage stage: the node's metrics and its engine. The engine records into the metrics from
 * its first write, so the metrics come first, holding a slot the engine fills once it is open
 * (their gauges and the backend check read it); the cluster's parts reach them the same way,
 * through the builder's slots, when the cluster stage makes them.
 */
import type { NodeConfig } from '../config/settings.js';
import { Engine } from '../engine/engine.js';
import type { Logger } from '../log/logger.js';
import type { RepairSource } from '../metrics/cluster-metrics.js';
import { type ClusterViewSource, NodeMetrics } from '../metrics/node-metrics.js';
import { NO_RECORDER } from '../metrics/recorder.js';
import type { OpsLayout } from '../ops/ops-server.js';
import { Late, type LateRead } from '../util/late.js';

export interface Storage {
  readonly engine: Engine;
  /** undefined when MetricsAddr is empty: the request path records into NO_RECORDER. */
  readonly metrics: NodeMetrics | undefined;
}

/** What the metrics read of the cluster, made by a later stage. */
export interface ClusterFigures {
  /** The repair gauges: from the moment the cluster is made. */
  readonly repair: LateRead<RepairSource>;
  /** The cluster in the UI's detail: from the moment it runs. */
  readonly view: LateRead<ClusterViewSource>;
}

export async function openStorage(config: NodeConfig, layout: OpsLayout, cluster: ClusterFigures, log: Logger): Promise<Storage> {
  const engine = new Late<Engine>('the engine');
  const metrics = layout.kind === 'off' ? undefined : new NodeMetrics({
    nodeId: config.nodeId, dataDir: config.dataDir, healthCheckTimeoutMs: config.healthCheckTimeoutMs, log,
    engine, repair: cluster.repair, clusterView: cluster.view,
  });
  const opened = await Engine.open(config, metrics ?? NO_RECORDER, log);
  engine.set(opened);
  return { engine: opened, metrics };
}
