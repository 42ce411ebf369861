/**
 * A user's delete here against copies of the blob from elsewhere: replication, repair and
 * handoff bring no copy back that was made before the delete (docs/cluster.md, Deletes).
 */
import type { LocalStore } from '../service/local-store.js';

/**
 * Whether a user's delete of the blob on this node holds against a copy of it (a manifest, a
 * replica, a column) that says it was made at `createdAtNs`: made before the delete (a copy of
 * the blob as it was), not by a store after it. The two times come from different nodes' clocks.
 */
export function deleteHolds(store: Pick<LocalStore, 'deletedAt'>, id: Buffer, copy: { readonly createdAtNs: bigint | number | string }): boolean {
  const deletedAtMs = store.deletedAt(id);
  return deletedAtMs !== undefined && BigInt(copy.createdAtNs) / 1_000_000n <= BigInt(deletedAtMs);
}
