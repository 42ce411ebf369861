/**
 * The node's cluster as the parts made before it see it. A cluster node's listeners open before
 * its cluster is made (peers learn its ports from them), so the cluster API, the node-to-node
 * routes and handlers, the blob service's placement and the repair gauges hold this slot; the
 * node's builder sets it once, as soon as the cluster is made (before it starts: peers call in
 * while it joins). A call that needs the cluster before then answers 503 with Retry-After.
 */
import { unavailable } from '../errors/errors.js';
import { Late, type LateRead } from '../util/late.js';
import type { Cluster } from './cluster.js';

export type ClusterSlot = LateRead<Cluster>;

/** An empty slot, for the builder (which alone sets it). */
export function clusterSlot(): Late<Cluster> {
  return new Late<Cluster>('the cluster', () => unavailable('the cluster side of this node is starting', 1));
}
