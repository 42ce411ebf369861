import type { Command } from 'commander';
import { ORDERS_SETTINGS, loadOrdersConfig } from './settings.js';
import { createLogger } from '../../log/logger.js';
import { exitOnStartFailure, loadSettingsOrUsageError } from '../../cli/service-start.js';
import { addSettingOptions, settingFlags } from '../../cli/setting-options.js';

/** `blobstore orders serve`: runs the orders HTTP service alone until SIGTERM/SIGINT. */
export function registerOrders(program: Command): void {
  const orders = program.command('orders').description('the orders HTTP service');
  const serve = orders
    .command('serve')
    .description('run the orders HTTP service (create, list, get, cancel orders; durable in LMDB)')
    .option('--config <file>', 'config file (default: $BLOBSTORE_CONFIG or $XDG_CONFIG_HOME/blobstore/config.json)');
  addSettingOptions(serve, ORDERS_SETTINGS);
  serve.action(async (opts: Record<string, unknown>) => {
    const flags = settingFlags(opts, ORDERS_SETTINGS);
    const config = loadSettingsOrUsageError(() => loadOrdersConfig({ flags, file: opts.config as string | undefined }));
    const log = createLogger({ level: config.logLevel, format: config.logFormat, name: 'orders' });
    const { runOrders } = await import('./run.js');
    await runOrders(config, log).catch((err: unknown) => exitOnStartFailure(log, err));
  });
}
