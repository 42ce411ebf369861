/**
 * A column of an erasure-coded blob, as every part of the store speaks of it
 * (docs/erasure-coding.md): what a node holds (ShardMeta) and what it needs to store one
 * (ShardWrite). How a column's record encodes it on disk is the engine's (engine/shard-info.ts).
 */
import type { BlobMeta } from './meta.js';

export interface ShardInfo {
  /** The column: 0..k-1 data, k..k+m-1 parity. */
  readonly index: number;
  readonly shardBytes: number;
  readonly blobBytes: number;
  readonly blobChecksum: Buffer;
  /**
   * The key the column's owners were chosen by, when not the blob's id (16 bytes): a blob stored
   * as it streamed in was placed before its id was known (docs/erasure-coding.md).
   */
  readonly placement?: Buffer;
  /**
   * Every column's checksum as its store computed it (k + m of 32 bytes, in column order): what a
   * rebuilt column must match before it is stored (docs/erasure-coding.md). Absent on columns
   * stored before they were kept.
   */
  readonly columnChecksums?: Buffer;
}

/** The ring key a blob's columns are placed by: its placement key, or its id. */
export function placementKey(id: Buffer, info: Pick<ShardInfo, 'placement'> | undefined): Buffer {
  return info?.placement ?? id;
}

/** A column held here: its index entry (size and checksum are the column's), its shard info and the blob's labels. */
export interface ShardMeta extends BlobMeta {
  readonly shard: ShardInfo;
  /** The whole blob's labels (a column record carries them after its shard info). */
  readonly blobLabels: Buffer;
}

/** What a node needs to store a column: the blob's metadata, the column's index and checksum. */
export interface ShardWrite {
  readonly id: Buffer;
  readonly index: number;
  readonly policy: number;
  readonly shardBytes: number;
  readonly blobBytes: number;
  readonly blobChecksum: Buffer;
  readonly blobLabels: Buffer;
  readonly createdAtNs: bigint;
  /** BLAKE3-256 of the column's bytes. */
  readonly columnChecksum: Buffer;
  /** See ShardInfo.placement. */
  readonly placement?: Buffer;
  /** See ShardInfo.columnChecksums; its entry at `index` is `columnChecksum`. */
  readonly columnChecksums?: Buffer;
}

/** What a column's header says before its bytes: all but the checksums, which are known only after them. */
export type ShardHeaderInfo = Omit<ShardWrite, 'columnChecksum' | 'columnChecksums'>;

/** Column `index`'s entry of a blob's column checksums. */
export function columnChecksumAt(checksums: Buffer, index: number): Buffer {
  return checksums.subarray(index * 32, index * 32 + 32);
}

/** What a column held here says of itself, as another node needs it to store a copy (all but its checksums). */
export function columnWriteOf(meta: ShardMeta): ShardHeaderInfo {
  return {
    id: meta.id, index: meta.shard.index, policy: meta.policy, shardBytes: meta.shard.shardBytes, blobBytes: meta.shard.blobBytes,
    blobChecksum: meta.shard.blobChecksum, blobLabels: meta.blobLabels, createdAtNs: meta.createdAtNs,
    ...(meta.shard.placement ? { placement: meta.shard.placement } : {}),
  };
}
