/**
 * A running node: data dir, engine, API listener, and the signals that stop it. SIGTERM/SIGINT stop
 * accepting, let requests in progress finish (at most shutdownTimeoutMs), flush, close LMDB and
 * exit 0.
 */
import type { Gate } from './auth/gate.js';
import { resolveClusterSecret } from './auth/cluster-secret.js';
import { startAuth } from './auth/tokens.js';
import { NodeTls, reloadOnHangup } from './tls/node-tls.js';
import { ConfigError } from './config/load.js';
import { SETTINGS, type NodeConfig } from './config/settings.js';
import { advertisedApi, advertisedGrpc } from './cluster/addresses.js';
import { ClusterApi } from './cluster/cluster-api.js';
import { Cluster } from './cluster/cluster.js';
import { clusterSlot } from './cluster/cluster-slot.js';
import { ClusterMetrics } from './metrics/cluster-metrics.js';
import { Engine } from './engine/engine.js';
import { GrpcServer } from './grpc/server.js';
import { hashName, initHashing } from './hash/blake3.js';
import { ApiServer } from './http/server.js';
import type { Router } from './http/router.js';
import type { Logger } from './log/logger.js';
import { Late } from './util/late.js';
import { NO_RECORDER } from './metrics/recorder.js';
import { type ClusterViewSource, NodeMetrics } from './metrics/node-metrics.js';
import { registerOpenApiRoute } from './openapi/api-routes.js';
import { blobApiDocument } from './openapi/blob-api.js';
import { OpsServer, opsLayout, opsMount, registerUiOnApiPort } from './ops/ops-server.js';
import { BlobService } from './service/blob-service.js';
import { LatePlacement } from './service/late-placement.js';
import { SINGLE_NODE } from './service/placement.js';
import { packageVersion } from './version.js';

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
  // What the metrics read of parts made after them: each slot is set once, below.
  const late = { engine: new Late<Engine>('the engine'), cluster: clusterSlot(), view: new Late<ClusterViewSource>('the running cluster') };
  const metrics = layout.kind === 'off' ? undefined : new NodeMetrics({
    nodeId: config.nodeId, dataDir: config.dataDir, healthCheckTimeoutMs: config.healthCheckTimeoutMs, log,
    engine: late.engine, repair: late.cluster, clusterView: late.view,
  });
  const engine = await Engine.open(config, metrics ?? NO_RECORDER, log);
  try {
    config = { ...config, clusterSecret: resolveClusterSecret(config, log) };
  } catch (err) {
    await engine.close();
    auth.close();
    stopReloading();
    throw err;
  }
  late.engine.set(engine);
  // Ports are known once the listeners are bound (before any request for the UI page).
  let port = 0;
  let metricsPort: number | undefined;
  const ops = metrics && {
    metrics, gate, variant: config.apiVariant, log, accessLogEvery: config.accessLogEvery,
    ui: () => ({ metricsHere: true, apiHere: layout.kind === 'same', apiPort: port, metricsPort }),
  };
  const apiDocument = blobApiDocument({
    variant: config.apiVariant === 'a' ? 'a' : 'b', opsOnApiPort: ops !== undefined && layout.kind === 'same', uiOnApiPort: ops !== undefined, version: packageVersion(),
  });
  // Routes beside the blob API on its port: the OpenAPI document, the UI page with the blob browser
  // at /ui/ (monitoring links to the metrics listener), and the operations routes in `same`.
  const mount = (routes: Router): void => {
    registerOpenApiRoute(routes, apiDocument);
    if (!ops) return;
    registerUiOnApiPort(routes, () => ({ metricsHere: layout.kind === 'same', apiHere: true, apiPort: port, metricsPort }));
    if (layout.kind === 'same') opsMount(ops)(routes);
  };
  // Nodes talk over gRPC: without it a node runs alone (and cannot join anything).
  const clusterEnabled = config.grpcAddr !== '';
  if (!clusterEnabled && config.seedNodes.length > 0) {
    await engine.close();
    auth.close();
    stopReloading();
    throw new ConfigError('SeedNodes needs the gRPC listener (GrpcAddr): cluster nodes talk to each other over gRPC');
  }
  // The cluster for the parts made before it (the listeners open first): set once it is made.
  const slot = late.cluster;
  // Until the cluster runs (and has admitted this node), stores and reads of blobs not here wait.
  const service = new BlobService(engine, config, metrics ?? NO_RECORDER, clusterEnabled ? new LatePlacement(slot) : SINGLE_NODE);
  const clusterApi = new ClusterApi(clusterEnabled ? slot : undefined);
  const server = new ApiServer(service, config, log, { gate, mount, cluster: clusterApi, internal: clusterEnabled ? slot : undefined, tls });
  const opsServer = ops && layout.kind === 'separate' ? new OpsServer(ops, tls) : undefined;
  const grpc = clusterEnabled ? new GrpcServer(config, service, gate, log, { api: clusterApi, internal: slot }, tls) : undefined;
  let grpcPort: number | undefined;
  try {
    port = await server.listen();
    // The default metrics and gRPC ports may be taken by another node on this host: a free port
    // then (peers learn the gRPC one from the member state). An address set by hand must bind.
    metricsPort = layout.kind === 'separate'
      ? await orFreePort(config.metricsAddr === SETTINGS.metricsAddr.default(), 'metrics', log, (p) => opsServer!.listen(layout.host, p ?? layout.port))
      : layout.kind === 'same' ? port : undefined;
    if (grpc) grpcPort = await orFreePort(config.grpcAddr === SETTINGS.grpcAddr.default(), 'gRPC', log, (p) => grpc.listen(p));
    if (clusterEnabled) {
      const address = advertisedApi(config.advertiseAddr, config.listen, port);
      const cluster = new Cluster(engine, engine.index, config, {
        nodeId: config.nodeId, address, grpcAddress: advertisedGrpc(config.grpcAddr, address, grpcPort!), region: config.region,
        capacityBytes: engine.space.capacityBytes,
      }, metrics?.cluster ?? new ClusterMetrics(), log, () => ({
        usedBytes: engine.index.counters.storedBytes + engine.index.counters.shardBytes, blobCount: engine.index.counters.blobCount,
      }), metrics ?? NO_RECORDER, tls);
      // Before the start: peers call in while this node joins.
      slot.set(cluster);
      await cluster.start();
      late.view.set(clusterApi);
    }
  } catch (err) {
    await Promise.all([server.close(0), grpc?.close(0)]);
    opsServer?.close();
    await slot.peek()?.stop();
    metrics?.close();
    await engine.close();
    auth.close();
    stopReloading();
    throw err;
  }
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
      await slot.peek()?.stop();
      await engine.close();
      metrics?.close();
      auth.close();
      stopReloading();
    })());
  return { engine, server, service, port, gate, metrics, metricsPort, grpc, grpcPort, cluster: slot.peek(), stop };
}

/** Binds with `bind()`; a default address that is taken falls back to a free port (logged). */
async function orFreePort(isDefault: boolean, what: string, log: Logger, bind: (port?: number) => Promise<number>): Promise<number> {
  try {
    return await bind();
  } catch (err) {
    if (!isDefault) throw err;
    const port = await bind(0);
    log.warn({ listener: what, port }, `the default ${what} port is taken (another node on this host?): listening on free port ${port}`);
    return port;
  }
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
