import type { SettingSpec } from './settings.js';

/**
 * Stacks that `blobstore deploy` brings up on this machine, declared in the config file under
 * `stacks.<name>` (set with `blobstore config set stacks.<name>.<key> --value ...`). `dev` works
 * without any config: 3 nodes + the orders service.
 *
 * Ports: each region gets a block of 100 ports from basePort, so one stack can run in several
 * regions side by side; each node has its HTTP API, its metrics listener (metrics, /health and the
 * web UI) and its gRPC listener:
 *
 *   block = basePort + 100 * regionIndex   (us-east-1: 0, us-west-2: 1, eu-central-1: 2)
 *   node i API      -> block + i           (i = 0 .. nodes-1, nodes <= 32)
 *   node i metrics  -> block + 32 + i
 *   node i gRPC     -> block + 64 + i
 *   orders          -> ordersPort, or block + 99
 */

export const REGIONS = ['us-east-1', 'us-west-2', 'eu-central-1'] as const;
export type Region = (typeof REGIONS)[number];

export const STACK_SETTINGS = {
  nodes: { type: 'int', default: () => 3, min: 1, max: 32, help: 'blob nodes (one process each)' },
  basePort: { type: 'int', default: () => 7100, min: 1024, max: 65_000, help: 'first port of the stack (see the port layout)' },
  policy: { type: 'string', default: () => '', help: 'default storage policy handed to the nodes, when the node has that setting' },
  orders: { type: 'bool', default: () => true, help: 'run the orders service with the stack' },
  ordersPort: { type: 'int', default: () => 0, min: 0, max: 65_535, help: 'orders port (0: block + 99)' },
  ordersApiKeysFile: { type: 'string', default: () => '', help: 'API keys file of the orders service (empty: no auth)' },
} as const satisfies Record<string, SettingSpec>;
