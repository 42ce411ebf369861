/**
 * A running node: data dir, engine, API listener, and the signals that stop it. SIGTERM/SIGINT stop
 * accepting, let requests in progress finish (at most shutdownTimeoutMs), flush, close LMDB and
 * exit 0.
 */
import type { Gate } from './auth/gate.js';
import { startAuth } from './auth/tokens.js';
import type { NodeConfig } from './config/settings.js';
import { Engine } from './engine/engine.js';
import { hashName, initHashing } from './hash/blake3.js';
import { ApiServer } from './http/server.js';
import { BlobService } from './service/blob-service.js';

export interface RunningNode {
  readonly engine: Engine;
  readonly server: ApiServer;
  /** The blob operations every transport serves. */
  readonly service: BlobService;
  readonly port: number;
  /** Bearer authentication (OPEN_GATE when AuthTokensFile is empty); pass it to every listener. */
  readonly gate: Gate;
  stop(): Promise<void>;
}

export async function startNode(config: NodeConfig): Promise<RunningNode> {
  // First: a bad token file stops the start (ConfigError, exit 2) before the data dir is touched.
  const auth = startAuth(config);
  const gate = auth.gate;
  await initHashing();
  const engine = await Engine.open(config);
  const service = new BlobService(engine, config);
  const server = new ApiServer(service, config, { gate });
  let port: number;
  try {
    port = await server.listen();
  } catch (err) {
    await engine.close();
    auth.close();
    throw err;
  }
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const drained = await server.close(config.shutdownTimeoutMs);
      if (!drained) console.error('blobstore: shutdown timeout: requests still in progress were cut off');
      await engine.close();
      auth.close();
    })());
  return { engine, server, service, port, gate, stop };
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
  console.log(`blobstore: node ${config.nodeId} listening on http://${host}:${node.port}`);
}
