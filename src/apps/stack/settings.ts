import { ConfigError, coerce } from '../../config/load.js';
import type { SettingSpec } from '../../config/settings.js';
import { REGIONS, type Region, STACK_SETTINGS } from '../../config/stack-settings.js';

/** A stack's definition and port layout; the settings and the layout's description: src/config/stack-settings.ts. */
export { REGIONS, type Region, STACK_SETTINGS };

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
