/**
 * How an erasure-coded blob is cut into stripes and shard columns (docs/erasure-coding.md):
 *
 *   blob bytes:  | stripe 0: k shards of shardBytes | stripe 1 | ... | last stripe (short) |
 *   stripe s:    data 0 .. data k-1 (the blob's bytes in order) | parity 0 .. parity m-1
 *   column i:    shard i of stripe 0, shard i of stripe 1, ...   (one column per node)
 *
 * Every stripe but the last holds k * shardBytes of the blob; the last holds the rest, cut into k
 * shards of ceil(rest / k) bytes (zero-padded). A column is one node's part: shard i of every
 * stripe, so it is shardBytes * (stripes - 1) + lastShardBytes long, and stripe s of it starts at
 * s * shardBytes.
 */

/**
 * Shards move between nodes, are encoded and are reconstructed in cells of at most 1 MiB (the
 * engine's chunk size): a 16 MiB shard is 16 cells, a short one is one cell.
 */
export const CELL_BYTES = 1024 * 1024;

/** Data and parity shards per stripe of an EC policy (spec: EC42 4+2, EC82 8+2). */
export interface EcScheme {
  readonly k: number;
  readonly m: number;
}

const SCHEMES: Readonly<Record<number, EcScheme>> = { 4: { k: 4, m: 2 }, 5: { k: 8, m: 2 } };

/** The scheme of an EC policy number, or undefined for a replica policy. */
export function ecScheme(policy: number): EcScheme | undefined {
  return SCHEMES[policy];
}

/** Shard sizes (settings ecShardBytes, ecLargeShardBytes, ecLargeBlobBytes). */
export interface ShardSizes {
  readonly ecShardBytes: number;
  readonly ecLargeShardBytes: number;
  readonly ecLargeBlobBytes: number;
}

/** The spec's shard size: 1 MiB, 16 MiB for blobs larger than 64 MiB (all settings). */
export function shardBytesFor(blobBytes: number, sizes: ShardSizes): number {
  return blobBytes > sizes.ecLargeBlobBytes ? sizes.ecLargeShardBytes : sizes.ecShardBytes;
}

export class StripeLayout {
  /** Stripes (0 for an empty blob). */
  readonly stripes: number;
  /** Shard length in the last stripe (shardBytes when the blob fills it). */
  readonly lastShardBytes: number;
  /** Bytes of each column. */
  readonly columnBytes: number;

  constructor(
    readonly k: number,
    readonly m: number,
    readonly shardBytes: number,
    readonly blobBytes: number,
  ) {
    const stripeBytes = k * shardBytes;
    this.stripes = Math.ceil(blobBytes / stripeBytes);
    const rest = blobBytes - (this.stripes - 1) * stripeBytes;
    this.lastShardBytes = this.stripes === 0 ? 0 : Math.ceil(rest / k);
    this.columnBytes = this.stripes === 0 ? 0 : (this.stripes - 1) * shardBytes + this.lastShardBytes;
  }

  get shards(): number {
    return this.k + this.m;
  }

  /** Length of each shard of stripe s. */
  shardLength(stripe: number): number {
    return stripe === this.stripes - 1 ? this.lastShardBytes : this.shardBytes;
  }

  /** Where stripe s starts in every column. */
  columnOffset(stripe: number): number {
    return stripe * this.shardBytes;
  }

  /** Where stripe s starts in the blob. */
  blobOffset(stripe: number): number {
    return stripe * this.k * this.shardBytes;
  }

  /**
   * The blob bytes data shard `index` of stripe s holds: [start, end) in the blob (end - start may
   * be shorter than the shard, or 0, in the last stripe: the rest is padding).
   */
  dataRange(stripe: number, index: number): { start: number; end: number } {
    const length = this.shardLength(stripe);
    const start = Math.min(this.blobBytes, this.blobOffset(stripe) + index * length);
    return { start, end: Math.min(this.blobBytes, start + length) };
  }

  /** Shards a node holding one column keeps (the `shard_count` a column adds). */
  get shardsPerColumn(): number {
    return Math.max(1, this.stripes);
  }
}
