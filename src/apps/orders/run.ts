import type { OrdersConfig } from './settings.js';
import type { Logger } from '../../log/logger.js';
import { ApiKeys } from './auth.js';
import { startOrdersServer } from './server.js';
import { OrdersService } from './service.js';
import { OrderStore } from './store.js';

/** How long shutdown waits for creates and cancels in progress to answer. */
const SHUTDOWN_TIMEOUT_MS = 5000;

/** Runs the orders service until SIGTERM/SIGINT, then stops listening, flushes and exits 0. */
export async function runOrders(config: OrdersConfig, log: Logger): Promise<void> {
  const keys = config.ordersApiKeysFile ? ApiKeys.fromFile(config.ordersApiKeysFile) : undefined;
  const store = OrderStore.open(config.ordersDataDir);
  const service = new OrdersService(store, { keys, log });
  const server = startOrdersServer(service, config.ordersAddr, config.ordersMaxBodyBytes);
  const host = config.ordersAddr.slice(0, config.ordersAddr.lastIndexOf(':')) || '0.0.0.0';
  const url = `http://${host}:${server.port}`;
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, `${signal}: stopping`);
    server
      .close(SHUTDOWN_TIMEOUT_MS)
      .then(() => store.close())
      .then(
        () => {
          log.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          log.fatal({ err }, `close failed: ${(err as Error)?.message ?? String(err)}`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Only now: a supervisor that signals as soon as it reads this line finds the handlers in place
  // (before, a SIGTERM right after it killed the process with no clean stop).
  log.info({ listener: 'orders', url, dataDir: config.ordersDataDir, auth: keys !== undefined }, `listening on ${url} (data ${config.ordersDataDir}, auth ${keys ? 'on' : 'off'})`);
}
