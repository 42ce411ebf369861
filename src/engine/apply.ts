/**
 * How a log record changes the index. Runs in log order, for live writes and for recovery replay,
 * so both end in the same state: once a record's batch is synced, into the index overlay (what
 * reads see until the transaction commits, index/overlay.ts), and again inside the index
 * transaction of the record's batch (`direct`).
 * Whole blobs and shard columns (record.ts) follow the same rules, each in its own keyspace.
 */
import { ecScheme, StripeLayout } from '../ec/layout.js';
import type { IndexWriter } from '../index/overlay.js';
import { type IndexEntry, Location } from '../index/entry.js';
import { isDeleteRecord, isFileRecord, isInlineRecord, isShardRecord, RecordFlag, recordLength } from './record.js';
import { decodeShardInfo, shardIndexOf, shardKey } from './shard-info.js';

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
  /** The entry applyRecord made of it before, if it keeps one (LogRecord.entry). */
  entry?: IndexEntry | undefined;
  /** CRC-32C of an inline record's bytes, when known: it goes into the index entry (entry.ts). */
  dataCrc?: number | undefined;
  segment: number;
  offset: number;
  length: number;
  flags: number;
}

/** The index operations of one keyspace, and what a record there adds to the counters. */
interface Keyspace {
  key(r: ApplyInput): Buffer;
  get(key: Buffer): IndexEntry | undefined;
  has(key: Buffer): boolean;
  put(key: Buffer, entry: IndexEntry): void;
  remove(key: Buffer): void;
  count(entry: { policy: number; size: number; labels: Buffer }, sign: 1 | -1): void;
}

function blobKeyspace(index: IndexWriter): Keyspace {
  return {
    key: (r) => r.id,
    get: (key) => index.get(key),
    has: (key) => index.has(key),
    put: (key, e) => index.put(key, e),
    remove: (key) => index.remove(key),
    count: (e, sign) => {
      index.counters.blobCount += sign;
      index.counters.storedBytes += sign * e.size;
    },
  };
}

function shardKeyspace(index: IndexWriter): Keyspace {
  return {
    key: (r) => shardKey(r.id, shardIndexOf(r.labels)),
    get: (key) => index.getShard(key),
    has: (key) => index.hasShard(key),
    put: (key, e) => index.putShard(key, e),
    remove: (key) => index.removeShard(key),
    count: (e, sign) => {
      index.counters.shardCount += sign * shardsOfColumn(e.policy, e.labels);
      index.counters.shardBytes += sign * e.size;
    },
  };
}

/** Shards (one per stripe) a column holds, for `shard_count`. */
function shardsOfColumn(policy: number, labels: Buffer): number {
  const scheme = ecScheme(policy);
  if (!scheme) return 1;
  const info = decodeShardInfo(labels);
  return new StripeLayout(scheme.k, scheme.m, info.shardBytes, info.blobBytes).shardsPerColumn;
}

const keyspaces = new WeakMap<IndexWriter, { blobs: Keyspace; shards: Keyspace }>();

function keyspaceOf(index: IndexWriter, type: number): Keyspace {
  let spaces = keyspaces.get(index);
  if (!spaces) {
    spaces = { blobs: blobKeyspace(index), shards: shardKeyspace(index) };
    keyspaces.set(index, spaces);
  }
  return isShardRecord(type) ? spaces.shards : spaces.blobs;
}

/**
 * Applies one record; returns true when a put found its key already stored (a duplicate).
 * `existed`, when the caller knows whether a plain put's key is stored at this point of the log:
 * at staging, the appender found it absent under the id's lock (LogRecord.absent); at commit,
 * staging's answer (the overlay and the index then stood at the same point of the log). The key
 * is then not looked up again.
 */
export function applyRecord(index: IndexWriter, r: ApplyInput, existed?: boolean): boolean {
  index.space(r.segment).totalBytes += r.length;
  const ks = keyspaceOf(index, r.type);
  const key = ks.key(r);
  if (!isDeleteRecord(r.type) && r.relocatedFromSegment === 0) {
    // A plain put: only whether the key exists matters (no decoding on the hot path).
    if (existed ?? ks.has(key)) return true;
    const entry = entryOf(r);
    ks.put(key, entry);
    ks.count(r, 1);
    if (isInlineRecord(r.type)) index.space(r.segment).liveBytes += r.length;
    index.changed(isShardRecord(r.type), r.id, entry, true);
    index.clearDeleted(r.id);
    // The intent to copy it to the owners is as durable as the blob: same transaction, and replay queues it again.
    if (r.flags & RecordFlag.REPLICATE) index.enqueue(r.id, Date.now());
    return false;
  }
  const existing = ks.get(key);
  if (isDeleteRecord(r.type)) {
    if (!existing) return false;
    if (!(r.flags & RecordFlag.HANDOFF)) index.markDeleted(r.id, Date.now(), existing.policy);
    ks.remove(key);
    ks.count(existing, -1);
    index.changed(isShardRecord(r.type), r.id, existing, false);
    if (existing.location === Location.SEGMENT) {
      index.space(existing.segment).liveBytes -= recordLength(existing.labels.length, existing.size);
    }
    return false;
  }
  // A relocation, compaction's copy: it counts only while the index still points at the original.
  const current =
    existing?.location === Location.SEGMENT && existing.segment === r.relocatedFromSegment && existing.offset === r.relocatedFromOffset;
  if (!current) return false;
  ks.put(key, entryOf(r));
  index.space(existing.segment).liveBytes -= r.length;
  index.space(r.segment).liveBytes += r.length;
  return false;
}

/** The record's index entry: made once, kept on the record (staging and the commit share it; nobody changes an entry). */
function entryOf(r: ApplyInput): IndexEntry {
  return (r.entry ??= makeEntry(r));
}

function makeEntry(r: ApplyInput): IndexEntry {
  const file = isFileRecord(r.type);
  return {
    location: file ? Location.FILE : Location.SEGMENT,
    policy: r.policy,
    segment: file ? 0 : r.segment,
    offset: file ? 0 : r.offset,
    size: r.size,
    createdAtNs: r.createdAtNs,
    checksum: r.checksum,
    labels: r.labels,
    dataCrc: file ? undefined : r.dataCrc,
  };
}
