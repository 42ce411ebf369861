import { join } from 'node:path';
import { xdgDataHome } from './paths.js';
import { LOG_SETTINGS, type SettingSpec } from './settings.js';

/**
 * Every setting of the orders service, declared once (file section `orders`, env BLOBSTORE_ORDERS_*,
 * flags --orders-*). The spec-style names (OrdersAddr, OrdersDataDir, OrdersApiKeysFile) are
 * accepted as flag, env variable and file key, like the node's NodeID.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

export const ORDERS_SETTINGS = {
  ordersAddr: { type: 'addr', default: () => '127.0.0.1:8000', specName: 'OrdersAddr', help: 'orders HTTP address host:port' },
  ordersDataDir: {
    type: 'string', default: () => join(xdgDataHome(), 'blobstore', 'orders'), specName: 'OrdersDataDir',
    help: 'orders data directory (LMDB)',
  },
  ordersApiKeysFile: {
    type: 'string', default: () => '', specName: 'OrdersApiKeysFile',
    help: 'JSON file of API keys ([{"key","scope":"read"|"read-write"}]); empty = no authentication',
  },
  ordersMaxBodyBytes: { type: 'bytes', default: () => 1 * MiB, min: 1, max: 64 * MiB, help: 'largest request body (413 above)' },
  ...LOG_SETTINGS,
} as const satisfies Record<string, SettingSpec>;
