import { BlobstoreError, invalidArgument } from '../errors/errors.js';

/** Replication policies, numbered as in the spec (variant B uses the numbers). */
export const POLICIES = [
  'REPLICATION_POLICY_UNSPECIFIED',
  'REPLICATION_POLICY_NONE',
  'REPLICATION_POLICY_REPLICA2',
  'REPLICATION_POLICY_REPLICA3',
  'REPLICATION_POLICY_EC42',
  'REPLICATION_POLICY_EC82',
] as const;

export type Policy = 0 | 1 | 2 | 3 | 4 | 5;
export const DEFAULT_POLICY: Policy = 3;

/** Shards an EC policy spreads over distinct nodes. */
const EC_NODES: Partial<Record<Policy, number>> = { 4: 6, 5: 10 };

/** Accepts a number (0-5), a numeric string, or a name with or without the REPLICATION_POLICY_ prefix. */
export function parsePolicy(value: unknown): Policy {
  if (value === undefined || value === null || value === '') return DEFAULT_POLICY;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < POLICIES.length) return value as Policy;
  if (typeof value === 'string') {
    const text = value.trim();
    if (/^\d$/.test(text) && Number(text) < POLICIES.length) return Number(text) as Policy;
    const name = text.toUpperCase();
    const index = POLICIES.findIndex((p) => p === name || p === `REPLICATION_POLICY_${name}`);
    if (index >= 0) return index as Policy;
  }
  throw invalidArgument(`invalid replication policy ${describe(value)}: expected 0-5 or one of ${POLICIES.join(', ')}`);
}

/**
 * A short rendering of a rejected value for an error message: JSON.stringify of a client's value
 * can be megabytes long, or overflow the stack on deep nesting (a 500 instead of a 400).
 */
function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? 'an array' : typeof value;
}

/**
 * The placement step: where the copies of a new blob go. On a single node every replica policy
 * stores one local copy (replication is best effort by the spec); EC needs k+m distinct nodes.
 * The cluster issue replaces this with the ring's placement.
 */
export function checkPlacement(policy: Policy, nodesAvailable: number): void {
  const need = EC_NODES[policy];
  if (need !== undefined && nodesAvailable < need) {
    throw new BlobstoreError('failed_precondition', `not enough nodes for EC: have ${nodesAvailable}, need ${need}`);
  }
}

/**
 * NONE's one copy is the receiving node's (the spec: durable on the receiving node, 1x overhead):
 * it is not queued for the ring's owner nor handed off to it, so a store of it on a cluster costs
 * what it costs on a node alone. It moves only when its node leaves (docs/adr/0017-none-stays.md).
 */
export function staysWhereStored(policy: number): boolean {
  return policy === 1;
}

/** Full copies a replica policy asks for (NONE 1, REPLICA2 2, REPLICA3 and UNSPECIFIED 3); 0 for EC. */
export function replicaCount(policy: number): number {
  switch (policy) {
    case 1:
      return 1;
    case 2:
      return 2;
    case 0:
    case 3:
      return 3;
    default:
      return 0;
  }
}
