/**
 * Where copies go, as the blob service sees it: the seam between the coordinator of a store or
 * read (blob-service.ts) and the cluster. A node alone places everything here; the cluster
 * (src/cluster/cluster.ts) answers from the ring, queues copies for the owners and reads what this
 * node lacks from them.
 */
import type { BlobMeta, PutResult } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import { BlobstoreError } from '../errors/errors.js';
import type { StoreContent } from './blob-writer.js';
import type { ByteRange, ChunkSink, FileSink } from './local-store.js';

/** How an erasure-coded blob is cut (its columns are read through Placement.fetch). */
export interface EcPlacement {
  readonly shardBytes: number;
  /** The key its columns are placed by, when not the id (a blob stored as it streamed in). */
  readonly placement?: Buffer;
  /** Every column's checksum as its store computed them, when the column that told of the blob keeps them. */
  readonly columnChecksums?: Buffer;
}

/**
 * A blob found: here (no `peer`), on the peer named, or as EC columns (`ec`) wherever they are.
 * `traceparent`: the W3C trace context of the request a read from `peer` serves, passed on to
 * the peer (src/log/access-log.ts).
 */
export type Located = BlobMeta & { readonly peer?: string; readonly ec?: EcPlacement; readonly traceparent?: string };

export interface Placement {
  /**
   * Whether this node can place copies and say who holds a blob: false on a cluster node until its
   * cluster runs and has admitted it (a fresh data dir joining through its seeds knows no owners),
   * and once it is removed (out of the ring: what it took would reach no owner).
   */
  ready(): boolean;
  /** Nodes copies can go to now, this one included (an EC policy needs data + parity of them). */
  nodesAvailable(): number;
  /** Stores an erasure-coded blob as columns on its owners (the coordinator's part of an EC store). */
  storeEc(content: StoreContent, policy: Policy, labels: Buffer): Promise<PutResult>;
  /**
   * A sink for the body of an erasure-coded store of `size` bytes that sends its columns as the
   * bytes arrive (its storeEc then seals them), or undefined: the body is taken whole first.
   */
  openEcStream(policy: Policy, size: number): FileSink | undefined;
  /** A client's store of `policy` here queues copies for the ring's owners (there are other members, and the policy has copies). */
  replicates(policy: Policy): boolean;
  /**
   * A store that queued copies was committed: they go out soon. Undefined when the store waits for
   * none (no promise per store then), or, with replicationAcks W, a promise that resolves once W
   * owners besides this node hold the blob (503 after the timeout). `data`: a small blob's bytes,
   * which the copies may take instead of reading them back (the caller does not change them
   * afterwards).
   */
  stored(id: Buffer, data?: Buffer): Promise<void> | undefined;
  /** A copy of a small store's bytes to pass as stored()'s `data` (from pooled memory the copies give back). */
  freshCopy(bytes: Uint8Array | ArrayBuffer): Buffer;
  /** A blob this node lacks, from the nodes that may hold it; undefined when none does. */
  find(id: Buffer): Promise<Located | undefined>;
  /** Streams (a range of) a blob found on a peer, or an EC blob from its columns, verified. */
  fetch(blob: Located, sink: ChunkSink, range?: ByteRange): Promise<void>;
  /** A local copy failed its checksum: it is replaced from an owner in the background. */
  repair(meta: BlobMeta): void;
}

/** A node on its own: every copy is the local one, nothing is anywhere else. */
export const SINGLE_NODE: Placement = {
  ready: () => true,
  nodesAvailable: () => 1,
  storeEc: () => Promise.reject(new BlobstoreError('failed_precondition', 'not enough nodes for EC: have 1')),
  openEcStream: () => undefined,
  replicates: () => false,
  stored: () => undefined,
  freshCopy: (bytes) => Buffer.from(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes),
  find: () => Promise.resolve(undefined),
  fetch: () => Promise.reject(new Error('no cluster to read from')),
  repair: () => undefined,
};

/**
 * A cluster node between its listener opening and its cluster running: local blobs are served,
 * while stores and reads of blobs it lacks wait (503) rather than place or answer as a node alone.
 */
export const STARTING: Placement = { ...SINGLE_NODE, ready: () => false };
