/**
 * How a log record changes the index. Runs inside the index transaction of the record's batch,
 * in log order, both for live writes and for recovery replay, so both end in the same state.
 */
import type { BlobIndex } from '../index/blob-index.js';
import { type IndexEntry, Location } from '../index/entry.js';
import { RecordFlag, RecordType, recordLength } from './record.js';

export interface ApplyInput {
  type: number;
  policy: number;
  id: Buffer;
  checksum: Buffer;
  size: number;
  createdAtNs: bigint;
  labels: Buffer;
  relocatedFromSegment: number;
  relocatedFromOffset: number;
  segment: number;
  offset: number;
  length: number;
  flags: number;
}

/** Applies one record; returns true when a put found its id already stored (a duplicate). */
export function applyRecord(index: BlobIndex, r: ApplyInput): boolean {
  index.space(r.segment).totalBytes += r.length;
  if (r.type !== RecordType.DELETE && r.relocatedFromSegment === 0) {
    // A plain put: only whether the id exists matters (no decoding on the hot path).
    if (index.has(r.id)) return true;
    index.put(r.id, entryOf(r));
    index.counters.blobCount++;
    index.counters.storedBytes += r.size;
    if (r.type === RecordType.PUT_INLINE) index.space(r.segment).liveBytes += r.length;
    index.clearDeleted(r.id);
    // The intent to copy it to the owners is as durable as the blob: same transaction, and replay queues it again.
    if (r.flags & RecordFlag.REPLICATE) index.enqueue(r.id, Date.now());
    return false;
  }
  const existing = index.get(r.id);
  if (r.type === RecordType.DELETE) {
    if (!existing) return false;
    if (!(r.flags & RecordFlag.HANDOFF)) index.markDeleted(r.id, Date.now(), existing.policy);
    index.remove(r.id);
    index.counters.blobCount--;
    index.counters.storedBytes -= existing.size;
    if (existing.location === Location.SEGMENT) {
      index.space(existing.segment).liveBytes -= recordLength(existing.labels.length, existing.size);
    }
    return false;
  }
  // A relocation, compaction's copy: it counts only while the index still points at the original.
  const current =
    existing?.location === Location.SEGMENT && existing.segment === r.relocatedFromSegment && existing.offset === r.relocatedFromOffset;
  if (!current) return false;
  index.put(r.id, entryOf(r));
  index.space(existing.segment).liveBytes -= r.length;
  index.space(r.segment).liveBytes += r.length;
  return false;
}

function entryOf(r: ApplyInput): IndexEntry {
  const file = r.type === RecordType.PUT_FILE;
  return {
    location: file ? Location.FILE : Location.SEGMENT,
    policy: r.policy,
    segment: file ? 0 : r.segment,
    offset: file ? 0 : r.offset,
    size: r.size,
    createdAtNs: r.createdAtNs,
    checksum: r.checksum,
    labels: r.labels,
  };
}
