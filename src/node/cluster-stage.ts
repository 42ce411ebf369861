/**
 * The cluster stage: a cluster node's cluster side (membership, replication, repair), made once
 * its listeners are bound (it advertises their ports) and handed to the parts made before it
 * through the builder's slot, then started. The slot is set before the start, as peers call in
 * while this node joins; the UI's view of the cluster appears only once it runs.
 */
import { advertisedApi, advertisedGrpc, grpcUnreachable } from '../cluster/addresses.js';
import type { ClusterApi } from '../cluster/cluster-api.js';
import { Cluster } from '../cluster/cluster.js';
import type { NodeConfig } from '../config/settings.js';
import type { Engine } from '../engine/engine.js';
import type { Logger } from '../log/logger.js';
import { ClusterMetrics } from '../metrics/cluster-metrics.js';
import type { ClusterViewSource, NodeMetrics } from '../metrics/node-metrics.js';
import { NO_RECORDER } from '../metrics/recorder.js';
import type { NodeTls } from '../tls/node-tls.js';
import { assert } from '../util/assert.js';
import type { Late } from '../util/late.js';
import type { Ports } from './listeners.js';

export interface ClusterParts {
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly engine: Engine;
  readonly metrics: NodeMetrics | undefined;
  readonly tls: NodeTls | undefined;
  /** Its state() is the cluster's view in the metrics' detail. */
  readonly clusterApi: ClusterApi;
}

/** The builder's slots this stage sets, each once. */
export interface ClusterSlots {
  readonly cluster: Late<Cluster>;
  readonly view: Late<ClusterViewSource>;
}

/** Makes the cluster, sets the slots and starts it; on a failure the slot still holds it (the builder stops it). */
export async function startCluster(parts: ClusterParts, ports: Ports, slots: ClusterSlots): Promise<Cluster> {
  const { config, log, engine, metrics, tls } = parts;
  assert(ports.grpc !== undefined, 'a cluster node has a bound gRPC listener: peers reach it there');
  const address = advertisedApi(config.advertiseAddr, config.listen, ports.api);
  const grpcAddress = advertisedGrpc(config.grpcAddr, address, ports.grpc);
  const unreachable = grpcUnreachable(address, grpcAddress);
  if (unreachable) log.warn({ address, grpcAddress }, unreachable);
  const cluster = new Cluster(engine, engine.index, config, {
    nodeId: config.nodeId, address, grpcAddress, region: config.region,
    capacityBytes: engine.space.capacityBytes,
  }, metrics?.cluster ?? new ClusterMetrics(), log, () => ({
    usedBytes: engine.index.counters.storedBytes + engine.index.counters.shardBytes, blobCount: engine.index.counters.blobCount,
  }), metrics ?? NO_RECORDER, tls);
  slots.cluster.set(cluster);
  await cluster.start();
  slots.view.set(parts.clusterApi);
  return cluster;
}
