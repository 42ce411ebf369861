/**
 * What a blob is to every part of the store: its metadata as stored (BlobMeta: size, creation
 * time, BLAKE3 checksum, labels, policy, and where the local store keeps it), the answer of a store
 * and of a list, and where a store comes from. Not storage: the engine, the cluster and the
 * transports all speak these.
 */
import type { IndexEntry } from '../index/entry.js';

export interface PutResult {
  id: Buffer;
  size: number;
  /** False when the bytes were already stored (the first write's metadata stays). */
  created: boolean;
}

/** A blob's metadata as stored here (the index record and its id). */
export interface BlobMeta extends IndexEntry {
  id: Buffer;
}

export interface ListResult {
  ids: Buffer[];
  nextCursor: string | undefined;
  hasMore: boolean;
}

/** Where a store comes from, for the cluster. */
export interface StoreOrigin {
  /** A client's store in a cluster: the index commit queues copies for the ring's owners. */
  readonly replicate: boolean;
  /** The original write's time (a replica keeps the sender's metadata); now when absent. */
  readonly createdAtNs?: bigint;
}

/** A client's store on a node alone: nothing to copy anywhere. */
export const LOCAL_STORE: StoreOrigin = { replicate: false };
