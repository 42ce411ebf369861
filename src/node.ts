/**
 * A running node: data dir, engine, API listener, and the signals that stop it. SIGTERM/SIGINT stop
 * accepting, let requests in progress finish (at most shutdownTimeoutMs), flush, close LMDB and
 * exit 0.
 *
 * startNode builds the node in stages (src/node/), each returning finished parts:
 *
 *   access (TLS, tokens) ─▶ storage (metrics, engine) ─▶ service ─▶ listeners (bound)
 *        ─▶ cluster (made, slot set, started) ─▶ /healthz 200
 *
 * A part made before the part it needs (the metrics before the engine, the listeners and the
 * service before the cluster) holds a set-once slot of it (src/util/late.ts), made here and set
 * by the stage that makes the part: nothing is rewired after it is made.
 */
import type { Gate } from './auth/gate.js';
import { resolveClusterSecret } from './auth/cluster-secret.js';
import { startAuth } from './auth/tokens.js';
import { NodeTls, reloadOnHangup } from './tls/node-tls.js';
import { ConfigError, withChanges } from './config/load.js';
import type { NodeConfig } from './config/settings.js';
import { ClusterApi } from './cluster/cluster-api.js';
import type { Cluster } from './cluster/cluster.js';
import { clusterSlot } from './cluster/cluster-slot.js';
import type { Engine } from './engine/engine.js';
import type { GrpcServer } from './grpc/server.js';
import { hashName, initHashing } from './hash/blake3.js';
import type { ApiServer } from './http/server.js';
import type { Logger } from './log/logger.js';
import { NO_RECORDER } from './metrics/recorder.js';
import type { ClusterViewSource, NodeMetrics } from './metrics/node-metrics.js';
import { startCluster } from './node/cluster-stage.js';
import { Listeners } from './node/listeners.js';
import { openStorage } from './node/storage.js';
import { opsLayout } from './ops/ops-server.js';
import { BlobService } from './service/blob-service.js';
import { LatePlacement } from './service/late-placement.js';
import { SINGLE_NODE } from './service/placement.js';
import { Late } from './util/late.js';

export interface RunningNode {
  readonly engine: Engine;
  readonly server: ApiServer;
  /** The blob operations every transport serves. */
  readonly service: BlobService;
  readonly port: number;
  /** Bearer authentication (OPEN_GATE when AuthTokensFile is empty); pass it to every listener. */
  readonly gate: Gate;
  /** Metrics (undefined when MetricsAddr is empty) and the metrics listener's port (separate layout). */
  readonly metrics: NodeMetrics | undefined;
  readonly metricsPort: number | undefined;
  /** The gRPC listener and its bound port; undefined when GrpcAddr is empty. */
  readonly grpc: GrpcServer | undefined;
  readonly grpcPort: number | undefined;
  /** The cluster side (membership, replication, repair); undefined without gRPC. */
  readonly cluster: Cluster | undefined;
  stop(): Promise<void>;
}

export async function startNode(config: NodeConfig, log: Logger): Promise<RunningNode> {
  // First: a bad token file stops the start (ConfigError, exit 2) before the data dir is touched.
  // So does a missing or mismatched certificate or key.
  const tls = NodeTls.load(config);
  const auth = startAuth(config, log);
  const gate = auth.gate;
  const stopReloading = tls ? reloadOnHangup(tls, log) : () => undefined;
  await initHashing();
  const layout = opsLayout(config.metricsAddr);
  // The cluster for the parts made before it: set once it is made, and once it runs.
  const late = { cluster: clusterSlot(), view: new Late<ClusterViewSource>('the running cluster') };
  const { engine, metrics } = await openStorage(config, layout, { repair: late.cluster, view: late.view }, log);
  // A start that stops before the listeners: what is open so far closes.
  const closeOpened = async (): Promise<void> => {
    await engine.close();
    auth.close();
    stopReloading();
  };
  try {
    config = withChanges(config, { clusterSecret: resolveClusterSecret(config, log) });
  } catch (err) {
    await closeOpened();
    throw err;
  }
  // Nodes talk over gRPC: without it a node runs alone (and cannot join anything).
  const clusterEnabled = config.grpcAddr !== '';
  if (!clusterEnabled && config.seedNodes.length > 0) {
    await closeOpened();
    throw new ConfigError('SeedNodes needs the gRPC listener (GrpcAddr): cluster nodes talk to each other over gRPC');
  }
  const cluster = clusterEnabled ? late.cluster : undefined;
  // Until the cluster runs (and has admitted this node), stores and reads of blobs not here wait.
  const service = new BlobService(engine, config, metrics ?? NO_RECORDER, cluster ? new LatePlacement(cluster) : SINGLE_NODE);
  const clusterApi = new ClusterApi(cluster);
  const listeners = new Listeners({ config, log, service, gate, tls, layout, metrics, clusterApi, cluster });
  const { server, ops: opsServer, grpc } = listeners;
  const started = await (async () => {
    const ports = await listeners.listen();
    const running = clusterEnabled ? await startCluster({ config, log, engine, metrics, tls, clusterApi }, ports, late) : undefined;
    return { ports, cluster: running };
  })().catch(async (err: unknown) => {
    await Promise.all([server.close(0), grpc?.close(0)]);
    opsServer?.close();
    // The cluster, if it was made: its stop does nothing unless its start finished.
    await late.cluster.peek()?.stop();
    metrics?.close();
    await engine.close();
    auth.close();
    stopReloading();
    throw err;
  });
  // Only now: a probe that sees /healthz 200 finds the metrics and gRPC listeners bound too.
  server.started();
  let stopping: Promise<void> | undefined;
  // Shutdown in the reverse order of the start: listeners drain, then the cluster's background
  // work (heartbeats, replication, handoff, anti-entropy) stops, then the engine closes.
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      metrics?.markStopping();
      opsServer?.close();
      const [httpDrained, grpcDrained] = await Promise.all([server.close(config.shutdownTimeoutMs), grpc?.close(config.shutdownTimeoutMs)]);
      const drained = httpDrained && grpcDrained !== false;
      if (!drained) log.warn({ shutdownTimeoutMs: config.shutdownTimeoutMs }, 'shutdown timeout: requests still in progress were cut off');
      await started.cluster?.stop();
      await engine.close();
      metrics?.close();
      auth.close();
      stopReloading();
    })());
  const { ports } = started;
  return {
    engine, server, service, port: ports.api, gate, metrics, metricsPort: ports.metrics, grpc, grpcPort: ports.grpc, cluster: started.cluster, stop,
  };
}

/** Which Reed-Solomon code path this CPU runs (the EC policies need a cluster to be used). */
async function ecPathName(): Promise<string> {
  try {
    const { ecKernelPath } = await import('./ec/index.js');
    return ecKernelPath();
  } catch (err) {
    return `unavailable (${(err as Error).message.split('\n')[0]})`;
  }
}

/** `blobstore serve`: runs until SIGTERM/SIGINT. */
export async function runNode(config: NodeConfig, log: Logger): Promise<void> {
  const node = await startNode(config, log);
  const onSignal = (signal: NodeJS.Signals): void => {
    log.info({ signal }, `${signal}: shutting down`);
    node.stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: Error) => {
        log.fatal({ err }, `shutdown failed: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  // Started over an IPC channel by a supervisor (the tests do): when it goes away, so does the node,
  // as on SIGTERM. The channel itself keeps nothing alive.
  if (process.channel) {
    process.channel.unref();
    process.once('disconnect', () => onSignal('SIGTERM'));
  }
  const ecPath = await ecPathName();
  const host = config.listen.replace(/:\d+$/, '');
  log.info({ dataDir: config.dataDir }, `data dir ${config.dataDir}`);
  log.info({ hashing: hashName(), smallBlobMaxBytes: config.smallBlobMaxBytes }, `hashing ${hashName()}; small blobs up to ${config.smallBlobMaxBytes} bytes go to segments`);
  log.info({ ecKernel: ecPath }, `erasure-coding kernel ${ecPath}`);
  if (node.grpcPort !== undefined) {
    const grpcAddress = `${config.grpcAddr.replace(/:\d+$/, '')}:${node.grpcPort}`;
    log.info({ listener: 'grpc', address: grpcAddress }, `gRPC listening on ${grpcAddress}`);
  }
  if (node.metricsPort !== undefined) {
    const layout = opsLayout(config.metricsAddr);
    const url = `${node.server.scheme}://${layout.kind === 'separate' ? layout.host : host}:${node.metricsPort}`;
    log.info({ listener: 'metrics', url }, `metrics on ${url}`);
  }
  const url = `${node.server.scheme}://${host}:${node.port}`;
  log.info({ listener: 'api', url }, `node ${config.nodeId} listening on ${url}`);
}
