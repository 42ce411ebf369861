/**
 * A running node: data dir, engine, API listener, and the signals that stop it. SIGTERM/SIGINT stop
 * accepting, let requests in progress finish (at most shutdownTimeoutMs), flush, close LMDB and
 * exit 0.
 */
import type { Gate } from './auth/gate.js';
import { startAuth } from './auth/tokens.js';
import type { NodeConfig } from './config/settings.js';
import { Engine } from './engine/engine.js';
import { GrpcServer } from './grpc/server.js';
import { hashName, initHashing } from './hash/blake3.js';
import { ApiServer } from './http/server.js';
import { NO_RECORDER } from './metrics/recorder.js';
import { NodeMetrics } from './metrics/node-metrics.js';
import { OpsServer, opsLayout, opsMount } from './ops/ops-server.js';
import { BlobService } from './service/blob-service.js';

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
  stop(): Promise<void>;
}

export async function startNode(config: NodeConfig): Promise<RunningNode> {
  // First: a bad token file stops the start (ConfigError, exit 2) before the data dir is touched.
  const auth = startAuth(config);
  const gate = auth.gate;
  await initHashing();
  const layout = opsLayout(config.metricsAddr);
  const metrics = layout.kind === 'off' ? undefined : new NodeMetrics({ nodeId: config.nodeId, dataDir: config.dataDir, healthCheckTimeoutMs: config.healthCheckTimeoutMs });
  const engine = await Engine.open(config, metrics ?? NO_RECORDER);
  metrics?.attach(engine);
  const service = new BlobService(engine, config, metrics ?? NO_RECORDER);
  const ops = metrics && { metrics, gate, variant: config.apiVariant };
  const server = new ApiServer(service, config, { gate, mount: ops && layout.kind === 'same' ? opsMount(ops) : undefined });
  const opsServer = ops && layout.kind === 'separate' ? new OpsServer(ops) : undefined;
  let metricsPort: number | undefined;
  const grpc = config.grpcAddr === '' ? undefined : new GrpcServer(config, service, gate);
  let port: number;
  let grpcPort: number | undefined;
  try {
    port = await server.listen();
    metricsPort = layout.kind === 'separate' ? await opsServer?.listen(layout.host, layout.port) : layout.kind === 'same' ? port : undefined;
    grpcPort = await grpc?.listen();
  } catch (err) {
    await Promise.all([server.close(0), grpc?.close(0)]);
    opsServer?.close();
    metrics?.close();
    await engine.close();
    auth.close();
    throw err;
  }
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (metrics) metrics.stopping = true;
      opsServer?.close();
      const [httpDrained, grpcDrained] = await Promise.all([server.close(config.shutdownTimeoutMs), grpc?.close(config.shutdownTimeoutMs)]);
      const drained = httpDrained && grpcDrained !== false;
      if (!drained) console.error('blobstore: shutdown timeout: requests still in progress were cut off');
      await engine.close();
      metrics?.close();
      auth.close();
    })());
  return { engine, server, service, port, gate, metrics, metricsPort, grpc, grpcPort, stop };
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
export async function runNode(config: NodeConfig): Promise<void> {
  const node = await startNode(config);
  const onSignal = (signal: NodeJS.Signals): void => {
    console.log(`blobstore: ${signal}: shutting down`);
    node.stop().then(
      () => process.exit(0),
      (err: Error) => {
        console.error(`blobstore: shutdown failed: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const ecPath = await ecPathName();
  const host = config.listen.replace(/:\d+$/, '');
  console.log(`blobstore: data dir ${config.dataDir}`);
  console.log(`blobstore: hashing ${hashName()}; small blobs up to ${config.smallBlobMaxBytes} bytes go to segments`);
  console.log(`blobstore: erasure-coding kernel ${ecPath}`);
  if (node.grpcPort !== undefined) console.log(`blobstore: gRPC listening on ${config.grpcAddr.replace(/:\d+$/, '')}:${node.grpcPort}`);
  if (node.metricsPort !== undefined) {
    const layout = opsLayout(config.metricsAddr);
    const metricsHost = layout.kind === 'separate' ? layout.host : host;
    console.log(`blobstore: metrics on http://${metricsHost}:${node.metricsPort}`);
  }
  console.log(`blobstore: node ${config.nodeId} listening on http://${host}:${node.port}`);
}
