/**
 * The whole blob's metadata as a column of it tells it (every column carries it): what stat,
 * HEAD and the first bytes of a GET of an EC blob answer on any node that holds a column.
 */
import { Location } from '../index/entry.js';
import type { ShardMeta } from '../blob/shard.js';
import type { Located } from './placement.js';
import type { EcManifest } from '../index/ec-manifests.js';

export function ecBlobMeta(column: ShardMeta): Located {
  return {
    id: column.id,
    location: Location.SEGMENT,
    policy: column.policy,
    segment: 0,
    offset: 0,
    size: column.shard.blobBytes,
    createdAtNs: column.createdAtNs,
    checksum: column.shard.blobChecksum,
    labels: column.blobLabels,
    ec: {
      shardBytes: column.shard.shardBytes,
      ...(column.shard.placement ? { placement: column.shard.placement } : {}),
      ...(column.shard.columnChecksums ? { columnChecksums: column.shard.columnChecksums } : {}),
    },
  };
}

/** The whole blob's metadata as its manifest tells it (a node among its id's first owners). */
export function manifestMeta(id: Buffer, m: EcManifest): Located {
  return {
    id,
    location: Location.SEGMENT,
    policy: m.policy,
    segment: 0,
    offset: 0,
    size: m.size,
    createdAtNs: BigInt(m.createdAtNs),
    checksum: m.checksum,
    labels: m.labels,
    ec: { shardBytes: m.shardBytes, placement: m.placement },
  };
}
