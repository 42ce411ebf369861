import { ORDERS_SETTINGS } from '../config/orders-settings.js';
import { SETTINGS, type SettingSpec } from '../config/settings.js';
import { STACK_SETTINGS } from '../config/stack-settings.js';

/**
 * The config file keys `config set` accepts, each with its type, so that numbers and booleans are
 * stored as such and invalid values are refused before the node or deploy would see them:
 *
 *   node.<setting>            the node's settings (camelCase key or spec name: node.NodeID)
 *   orders.<setting>          the orders service's settings (orders.ordersAddr, orders.OrdersAddr)
 *   stacks.<stack>.<key>      deploy's stack definitions (nodes, basePort, policy, orders, ...)
 *
 * A key in these sections that none of them reads is refused (a typo would otherwise sit in the
 * file, read by nothing); keys outside them are the user's own (config-set.ts).
 */

export interface KnownKey {
  readonly spec: SettingSpec;
  readonly section: 'node' | 'orders' | 'stacks';
  /** The setting's camelCase name (a spec name given in the key resolves to it). */
  readonly name: string;
}

const TABLES = { node: SETTINGS, orders: ORDERS_SETTINGS, stacks: STACK_SETTINGS } as const satisfies Record<KnownKey['section'], Record<string, SettingSpec>>;

function lookup(section: KnownKey['section'], key: string): KnownKey | undefined {
  const table: Record<string, SettingSpec> = TABLES[section];
  if (Object.hasOwn(table, key)) return { spec: table[key]!, section, name: key };
  const found = Object.entries(table).find(([, spec]) => spec.specName === key);
  return found && { spec: found[1], section, name: found[0] };
}

/**
 * Every path in the file the services read a setting from, in the order they read them
 * (config/load.ts): its camelCase name and its spec name in its section, then the spec name at the
 * top of the file. A stack's keys have one spelling.
 */
export function spellings(known: KnownKey, segments: readonly string[]): string[][] {
  if (known.section === 'stacks') return [[...segments]];
  const specName = known.spec.specName;
  return specName === undefined ? [[known.section, known.name]] : [[known.section, known.name], [known.section, specName], [specName]];
}

/** Whether a key lies in a section blobstore reads (node, orders, stacks). */
export function ownedByBlobstore(segments: readonly string[]): boolean {
  return segments[0] === 'node' || segments[0] === 'orders' || segments[0] === 'stacks';
}

export function knownKey(segments: readonly string[]): KnownKey | undefined {
  const [section, a, b] = segments;
  if (segments.length === 2 && (section === 'node' || section === 'orders')) return lookup(section, a!);
  if (segments.length === 3 && section === 'stacks') return lookup('stacks', b!);
  return undefined;
}

/** The keys of a section, for messages and `config list --all`. */
export function sectionKeys(section: KnownKey['section']): string[] {
  return Object.keys(TABLES[section]);
}

/** What `config set` accepts, as the lines of its refusal message. */
export function knownKeysText(): string {
  const names = (section: KnownKey['section']): string => {
    const table: Record<string, SettingSpec> = TABLES[section];
    return Object.entries(table).map(([key, spec]) => (spec.specName ? `${key} (${spec.specName})` : key)).join(', ');
  };
  return [
    'known keys:',
    `  node.<setting>        ${names('node')}`,
    `  orders.<setting>      ${names('orders')}`,
    `  stacks.<name>.<key>   ${names('stacks')}`,
  ].join('\n');
}
