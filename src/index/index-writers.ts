/**
 * The three ways a log record's changes reach the index (IndexWriter, apply.ts): `direct` writes
 * LMDB inside a commit's transaction, reading LMDB alone (the transaction's own writes included);
 * `gathering` collects an addsOnly commit's writes for one batch on lmdb-js's write thread;
 * `staged` writes the overlay (a record acknowledged before its transaction), reading what reads see.
 */
import type { BlobJournal } from './blob-journal.js';
import type { BlobRecords } from './blob-records.js';
import type { DeleteRecords } from './delete-records.js';
import type { IndexEntry } from './entry.js';
import type { GatheredWrites } from './gathered-writes.js';
import type { Counters, IdWatcher, IndexOverlay, IndexWriter, SegmentSpace } from './overlay.js';
import type { ReplicationQueueStore } from './replication-queue.js';
import type { ShardRecords } from './shard-records.js';

/** The index's parts the writers write through. */
export interface WriterParts {
  readonly blobs: BlobRecords;
  readonly journal: BlobJournal;
  readonly shards: ShardRecords;
  readonly deletes: DeleteRecords;
  readonly queue: ReplicationQueueStore;
  readonly overlay: IndexOverlay;
  readonly gathered: GatheredWrites;
  /** Counters as committed in LMDB (written with each transaction). */
  readonly committedCounters: Counters;
  /** Counters as reads see them: committed plus what staged records changed. */
  readonly counters: Counters;
  /** A segment's committed space accounting, marked to be written with the commit under way. */
  spaceToCommit(segment: number): SegmentSpace;
  /** Who is told of ids entering and leaving the id sets (BlobIndex.watchIds), if anyone. */
  readonly watch: { watcher: IdWatcher | undefined };
}

const unwatched = (): void => undefined;

/** Writes to LMDB inside a commit, reading LMDB alone (the transaction's own writes included). */
export function directWriter(p: WriterParts): IndexWriter {
  return {
    get counters(): Counters {
      return p.committedCounters;
    },
    space: (segment: number): SegmentSpace => p.spaceToCommit(segment),
    // Blob records go through the journal (written with the commit), shard columns straight to LMDB.
    get: (id: Buffer) => p.blobs.getForCommit(id),
    has: (id: Buffer) => p.blobs.hasForCommit(id),
    put: (id: Buffer, entry: IndexEntry) => p.journal.put(id, entry),
    remove: (id: Buffer) => p.journal.remove(id),
    getShard: (key: Buffer) => p.shards.committed(key),
    hasShard: (key: Buffer) => p.shards.hasCommitted(key),
    putShard: (key: Buffer, entry: IndexEntry) => p.shards.put(key, entry),
    removeShard: (key: Buffer) => p.shards.remove(key),
    markDeleted: (id: Buffer, atMs: number, policy: number) => p.deletes.mark(id, atMs, policy),
    clearDeleted: (id: Buffer) => p.deletes.clear(id),
    enqueue: (id: Buffer, queuedAtMs: number) => p.queue.enqueue(id, queuedAtMs),
    changed: unwatched,
  };
}

/**
 * Writes of an addsOnly commit: gathered for one batch on lmdb-js's write thread. Its records
 * only add keys no other record of the commit touches, so nothing it would read was written by
 * the commit itself: what LMDB holds is the answer. A record that reads a key (a delete, a
 * relocation, a put whose existence is not known) does not belong in it.
 */
export function gatheringWriter(p: WriterParts): IndexWriter {
  const g = p.gathered;
  const reads = (): never => {
    throw new Error('an index commit of added keys only read a key');
  };
  return {
    get counters(): Counters {
      return p.committedCounters;
    },
    space: (segment: number): SegmentSpace => p.spaceToCommit(segment),
    get: reads,
    has: reads,
    put: (id: Buffer, entry: IndexEntry) => p.journal.put(id, entry),
    remove: (id: Buffer) => p.journal.remove(id),
    getShard: reads,
    hasShard: reads,
    putShard: (key: Buffer, entry: IndexEntry) => p.shards.put(key, entry, g),
    removeShard: (key: Buffer) => p.shards.remove(key, g),
    markDeleted: reads,
    clearDeleted: (id: Buffer) => p.deletes.clear(id, g),
    enqueue: (id: Buffer, queuedAtMs: number) => p.queue.enqueue(id, queuedAtMs, g),
    changed: unwatched,
  };
}

/** Writes to the overlay (a record acknowledged before its transaction), reading what reads see. */
export function stagedWriter(p: WriterParts, reads: Pick<IndexWriter, 'get' | 'has' | 'getShard' | 'hasShard'>): IndexWriter {
  const o = p.overlay;
  const scratch: SegmentSpace = { totalBytes: 0, liveBytes: 0 };
  return {
    get counters(): Counters {
      return p.counters;
    },
    space: () => scratch,
    get: (id: Buffer) => reads.get(id),
    has: (id: Buffer) => reads.has(id),
    put: (id: Buffer, entry: IndexEntry) => p.blobs.stage(id, entry, o.lsn),
    remove: (id: Buffer) => p.blobs.stage(id, null, o.lsn),
    getShard: (key: Buffer) => reads.getShard(key),
    hasShard: (key: Buffer) => reads.hasShard(key),
    putShard: (key: Buffer, entry: IndexEntry) => o.shards.set(key, entry, o.lsn),
    removeShard: (key: Buffer) => o.shards.set(key, null, o.lsn),
    markDeleted: (id: Buffer, atMs: number, policy: number) => {
      const watcher = p.watch.watcher;
      const entered = watcher !== undefined && p.deletes.deletedAt(id) === undefined;
      p.deletes.stage(id, o.lsn, atMs, policy);
      if (entered) watcher('deleted', id, policy, undefined);
    },
    clearDeleted: (id: Buffer) => {
      const left = p.deletes.stage(id, o.lsn);
      if (left !== undefined) p.watch.watcher?.('deleted', id, left, undefined);
    },
    enqueue: (id: Buffer, queuedAtMs: number) => p.queue.stage(id, queuedAtMs, o.lsn),
    changed: (column: boolean, id: Buffer, entry: IndexEntry, added: boolean) => {
      const watcher = p.watch.watcher;
      if (!watcher) return;
      // A blob's id is in the column set while any column of it is held: its first in, its last out.
      if (column && p.shards.of(id).length !== (added ? 1 : 0)) return;
      watcher(column ? 'column' : 'blob', id, entry.policy, entry);
    },
  };
}
