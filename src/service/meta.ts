/**
 * BlobMeta as the spec and the .proto define it. `modified_at` equals `created_at`: blobs are
 * immutable (there is no update), so the first write is also the last modification.
 */
import type { BlobMeta } from '../blob/meta.js';
import { decodeLabels } from '../blob/labels.js';

export interface MetaMessage {
  size: number;
  created_at: bigint;
  modified_at: bigint;
  /** BLAKE3-256 of the content (the id is its first 16 bytes). */
  checksum: Buffer;
  labels: Record<string, string>;
  policy: number;
}

export function metaMessage(meta: BlobMeta): MetaMessage {
  return {
    size: meta.size,
    created_at: meta.createdAtNs,
    modified_at: meta.createdAtNs,
    checksum: meta.checksum,
    labels: decodeLabels(meta.labels),
    policy: meta.policy,
  };
}
