import type { Command } from 'commander';
import { ConfigError } from '../config/load.js';
import { ORDERS_SETTINGS, type OrdersSettingKey, loadOrdersConfig } from '../config/orders-settings.js';
import { type SettingSpec, flagName } from '../config/settings.js';
import { createLogger } from '../log/logger.js';
import { usageError } from './errors.js';
import { exitOnStartFailure } from './serve.js';

/** `blobstore orders serve`: runs the orders HTTP service alone until SIGTERM/SIGINT. */
export function registerOrders(program: Command): void {
  const orders = program.command('orders').description('the orders HTTP service');
  const serve = orders
    .command('serve')
    .description('run the orders HTTP service (create, list, get, cancel orders; durable in LMDB)')
    .option('--config <file>', 'config file (default: $BLOBSTORE_CONFIG or $XDG_CONFIG_HOME/blobstore/config.json)');
  for (const [key, spec] of Object.entries(ORDERS_SETTINGS) as [string, SettingSpec][]) {
    serve.option(`--${flagName(key)} <value>`, spec.help);
    if (spec.specName) serve.option(`--${spec.specName} <value>`, `same as --${flagName(key)}`);
  }
  serve.action(async (opts: Record<string, unknown>) => {
    const flags: Partial<Record<OrdersSettingKey, unknown>> = {};
    for (const [key, spec] of Object.entries(ORDERS_SETTINGS) as [OrdersSettingKey, SettingSpec][]) {
      const value = opts[key] ?? (spec.specName ? opts[spec.specName] : undefined);
      if (value !== undefined) flags[key] = value;
    }
    let config;
    try {
      config = loadOrdersConfig({ flags, file: opts.config as string | undefined });
    } catch (err) {
      if (err instanceof ConfigError) throw usageError(err.message);
      throw err;
    }
    const log = createLogger({ level: config.logLevel, format: config.logFormat, name: 'orders' });
    const { runOrders } = await import('../orders/run.js');
    await runOrders(config, log).catch((err: unknown) => exitOnStartFailure(log, err));
  });
}
