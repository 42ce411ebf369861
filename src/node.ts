import type { NodeConfig } from './config/settings.js';

/** Starts a node and runs it until SIGTERM/SIGINT. (The engine and HTTP API land next.) */
export async function runNode(config: NodeConfig): Promise<void> {
  console.error(`blobstore: node ${config.nodeId}: the engine is not built yet`);
  process.exit(1);
}
