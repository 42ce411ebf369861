import { ConfigError, coerce } from '../../config/load.js';
import type { SettingSpec } from '../../config/settings.js';

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

export type StackSettingKey = keyof typeof STACK_SETTINGS;

export interface StackDefinition {
  readonly name: string;
  readonly nodes: number;
  readonly basePort: number;
  readonly policy: string;
  readonly orders: boolean;
  readonly ordersPort: number;
  readonly ordersApiKeysFile: string;
}

/** A stack name is a config key segment and a directory name. */
export const STACK_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function isRegion(value: string): value is Region {
  return (REGIONS as readonly string[]).includes(value);
}

/** The stack from the config file's `stacks` object; `dev` has built-in defaults. */
export function resolveStack(name: string, file: Record<string, unknown>, configPath: string): StackDefinition {
  const stacks = file.stacks as Record<string, unknown> | undefined;
  const section = stacks && typeof stacks === 'object' ? stacks[name] : undefined;
  if (section === undefined && name !== 'dev') {
    const known = ['dev', ...Object.keys(stacks ?? {}).filter((k) => k !== 'dev')];
    throw new ConfigError(`unknown stack "${name}": known stacks are ${known.join(', ')}; define one with blobstore config set stacks.${name}.nodes --value 3`);
  }
  if (section !== undefined && (section === null || typeof section !== 'object' || Array.isArray(section))) {
    throw new ConfigError(`config file ${configPath}: stacks.${name} must be an object`);
  }
  const values: Record<string, unknown> = { name };
  for (const [key, spec] of Object.entries(STACK_SETTINGS) as [StackSettingKey, SettingSpec][]) {
    const raw = (section as Record<string, unknown> | undefined)?.[key];
    values[key] = raw === undefined ? spec.default() : coerce(`stacks.${name}.${key}`, spec, raw, `config file ${configPath}`);
  }
  return values as unknown as StackDefinition;
}

/** Where a node's offsets start in its region's block (see the layout above). */
const METRICS_OFFSET = 32;
const GRPC_OFFSET = 64;

export interface NodePorts {
  readonly api: number;
  readonly metrics: number;
  readonly grpc: number;
}

export interface StackLayout {
  readonly nodes: readonly NodePorts[];
  /** Undefined when the stack runs without the orders service. */
  readonly ordersPort: number | undefined;
}

export function stackLayout(stack: StackDefinition, region: Region): StackLayout {
  const block = stack.basePort + 100 * REGIONS.indexOf(region);
  const nodes = Array.from({ length: stack.nodes }, (_, i) => ({ api: block + i, metrics: block + METRICS_OFFSET + i, grpc: block + GRPC_OFFSET + i }));
  const ordersPort = stack.orders ? stack.ordersPort || block + 99 : undefined;
  if (ordersPort !== undefined && nodes.some((n) => n.api === ordersPort || n.metrics === ordersPort || n.grpc === ordersPort)) {
    throw new ConfigError(`stack ${stack.name}: ordersPort ${ordersPort} collides with a node port`);
  }
  return { nodes, ordersPort };
}
