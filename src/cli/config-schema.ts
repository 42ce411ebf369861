import { ORDERS_SETTINGS } from '../config/orders-settings.js';
import { SETTINGS, type SettingSpec } from '../config/settings.js';
import { STACK_SETTINGS } from '../config/stacks.js';

/**
 * Which config file keys have a known type, so that `config set` stores numbers and booleans as
 * such and refuses invalid values before the node or deploy would:
 *
 *   node.<setting>            the node's settings (camelCase key or spec name: node.NodeID)
 *   orders.<setting>          the orders service's settings (orders.ordersAddr, orders.OrdersAddr)
 *   stacks.<stack>.<key>      deploy's stack definitions (nodes, basePort, policy, orders, ...)
 *
 * Every other key is free-form and stored as a string.
 */

export interface KnownKey {
  readonly spec: SettingSpec;
  readonly section: string;
}

function lookup(table: Record<string, SettingSpec>, key: string): SettingSpec | undefined {
  if (Object.hasOwn(table, key)) return table[key];
  return Object.values(table).find((spec) => spec.specName === key);
}

export function knownKey(segments: readonly string[]): KnownKey | undefined {
  const [section, a, b] = segments;
  if (segments.length === 2 && section === 'node') {
    const spec = lookup(SETTINGS, a!);
    return spec && { spec, section: 'node' };
  }
  if (segments.length === 2 && section === 'orders') {
    const spec = lookup(ORDERS_SETTINGS, a!);
    return spec && { spec, section: 'orders' };
  }
  if (segments.length === 3 && section === 'stacks') {
    const spec = lookup(STACK_SETTINGS, b!);
    return spec && { spec, section: 'stacks' };
  }
  return undefined;
}

/** True for a section whose keys are all known, so an unknown key there is probably a typo. */
export function isTypedSection(segments: readonly string[]): boolean {
  return (segments[0] === 'node' || segments[0] === 'orders') && segments.length === 2
    || (segments[0] === 'stacks' && segments.length === 3);
}
