import { ConfigError, type LoadOptions, loadSettings } from '../../config/load.js';
import { ORDERS_SETTINGS } from '../../config/orders-settings.js';

export { ORDERS_SETTINGS };

export type OrdersSettingKey = keyof typeof ORDERS_SETTINGS;

export interface OrdersConfig {
  ordersAddr: string;
  ordersDataDir: string;
  ordersApiKeysFile: string;
  ordersMaxBodyBytes: number;
  logLevel: string;
  logFormat: string;
}

/** The orders service's configuration: ORDERS_SETTINGS under the file's `orders` section. */
export function loadOrdersConfig(options: LoadOptions<OrdersSettingKey> = {}): OrdersConfig {
  const config = loadSettings(ORDERS_SETTINGS, 'orders', options, true) as unknown as OrdersConfig;
  if (config.ordersDataDir === '') throw new ConfigError('setting ordersDataDir (OrdersDataDir) must not be empty');
  return config;
}
