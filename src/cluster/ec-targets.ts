/**
 * Where the columns of an erasure-coded store go, and how each went: column i to the i-th owner
 * of the placement key (the blob's id, or the key a streamed store chose before the id was known).
 */
import { BlobstoreError } from '../errors/errors.js';
import type { ClusterNode } from './cluster-node.js';
import type { PeerRef } from './transport/peer-transport.js';

/** Where one column goes and how it went. */
export interface ColumnTarget {
  index: number;
  node: string;
  /** The peer (undefined: this node). */
  peer: PeerRef | undefined;
  failure?: Error;
  created?: boolean;
}

/** Column i goes to the i-th owner of `key`; an owner known to be offline fails at once. */
export function columnTargets(cluster: ClusterNode, key: Buffer, shards: number): ColumnTarget[] {
  const owners = cluster.ring.owners(key, shards);
  if (owners.length < shards) {
    throw new BlobstoreError('failed_precondition', `not enough nodes for EC: have ${owners.length}, need ${shards}`);
  }
  return owners.map((node, index) => {
    const self = node === cluster.nodeId;
    const member = self ? undefined : cluster.member(node);
    const target: ColumnTarget = { index, node, peer: member };
    if (!self && (!member || member.grpcAddress === '' || !cluster.online(node))) target.failure = new Error(`node ${node} is offline`);
    return target;
  });
}
