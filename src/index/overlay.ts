/**
 * The index overlay: what acknowledged log records did to the index before their LMDB transaction
 * committed. A store is acknowledged once its segment record is fsynced (durableAck=log); its
 * index records are staged here at once (in log order, by the same applyRecord that later runs in
 * the transaction) and every read of the index looks here first. Once the transaction holding a
 * record commits, its slots go: LMDB answers from then on. A crash loses the overlay, never a
 * record: recovery replays the log past the checkpoint, which commits with the records it covers.
 *
 * Keys are the index keys as latin1 strings (so strings sort as the bytes do); a slot holds the
 * latest staged value of its key, or null for a removal, and the LSN of the record that staged it.
 */
import type { Slot, Staged } from './staged.js';
import type { IndexEntry } from './entry.js';
import { StagedIds } from './staged-ids.js';

/** What a log record may change in the index (apply.ts): in the LMDB transaction, or in the overlay. */
export interface IndexWriter {
  readonly counters: Counters;
  /** A segment's space accounting (the overlay keeps none: it follows at the commit). */
  space(segment: number): SegmentSpace;
  get(id: Buffer): IndexEntry | undefined;
  has(id: Buffer): boolean;
  put(id: Buffer, entry: IndexEntry): void;
  remove(id: Buffer): void;
  getShard(key: Buffer): IndexEntry | undefined;
  hasShard(key: Buffer): boolean;
  putShard(key: Buffer, entry: IndexEntry): void;
  removeShard(key: Buffer): void;
  markDeleted(id: Buffer, atMs: number, policy: number): void;
  clearDeleted(id: Buffer): void;
  enqueue(id: Buffer, queuedAtMs: number): void;
  /**
   * A record added a key of its keyspace (`added`) or removed one, not a relocation: the staged
   * writer tells the index's id watcher (IdWatcher), the others ignore it.
   */
  changed(column: boolean, id: Buffer, entry: IndexEntry, added: boolean): void;
}

/** Which of the index's id sets an id entered or left: whole blobs, blobs with a column here, a user's deletes. */
export type IdSet = 'blob' | 'column' | 'deleted';

/**
 * Called as an id enters or leaves one of the index's id sets, as reads see them (at staging, in
 * log order; a column counts for its blob's id while any column of it is held). `entry`: the
 * record that entered or left (undefined for a delete mark). `id` may be a buffer reused once the
 * call returns.
 */
export type IdWatcher = (set: IdSet, id: Buffer, policy: number, entry: IndexEntry | undefined) => void;

export interface Counters {
  blobCount: number;
  /** Sum of the sizes of the blobs stored. */
  storedBytes: number;
  /** Shards held (a column holds one per stripe) and the bytes of their columns. */
  shardCount: number;
  shardBytes: number;
}

export interface SegmentSpace {
  /** Bytes of records appended to the segment. */
  totalBytes: number;
  /** Bytes of records the index still points at. */
  liveBytes: number;
}

const keyOf = (key: Buffer): string => key.toString('latin1');

/** Staged values of one keyspace, in a Map by key string (the blobs' keyspace is a StagedIds). */
export type { Slot, Staged };

export class StagedMap<T> implements Staged<T> {
  private readonly slots = new Map<string, Slot<T>>();

  get size(): number {
    return this.slots.size;
  }

  lookup(key: Buffer): Slot<T> | undefined {
    return this.slots.size === 0 ? undefined : this.slots.get(keyOf(key));
  }

  /** Sets the key's slot, and returns it. */
  set(key: Buffer, value: T | null, lsn: number): Slot<T> {
    const k = keyOf(key);
    let slot = this.slots.get(k);
    if (slot) {
      slot.value = value;
      slot.lsn = lsn;
      slot.written = false;
      slot.absent = undefined;
    } else {
      this.slots.set(k, (slot = { value, lsn, written: false }));
    }
    return slot;
  }

  /** Slots from `start` (inclusive) in byte order, with their keys. */
  sortedFrom(start: Buffer | undefined): { key: Buffer; slot: Slot<T> }[] {
    const from = start ? keyOf(start) : '';
    const keys: string[] = [];
    for (const k of this.slots.keys()) if (k >= from) keys.push(k);
    keys.sort();
    return keys.map((k) => ({ key: Buffer.from(k, 'latin1'), slot: this.slots.get(k)! }));
  }

  /** Slots whose key starts with `prefix`, in byte order. */
  withPrefix(prefix: Buffer): { key: Buffer; slot: Slot<T> }[] {
    const p = keyOf(prefix);
    const out: { key: Buffer; slot: Slot<T> }[] = [];
    for (const [k, slot] of this.slots) if (k.startsWith(p)) out.push({ key: Buffer.from(k, 'latin1'), slot });
    return out.sort((a, b) => Buffer.compare(a.key, b.key));
  }

  /** Drops the slots staged by records up to `lsn` (their transaction committed). */
  dropThrough(lsn: number): void {
    // forEach hands key and value apart (for...of makes an [k, v] array per entry); deleting the
    // entry being visited is allowed.
    this.slots.forEach((slot, k) => {
      if (slot.lsn <= lsn) this.slots.delete(k);
    });
  }
}

/** A user's delete kept for repair (blob-index.ts). */
export interface DeletedEntry {
  atMs: number;
  policy: number;
}

/** A replication queue entry (blob-index.ts). */
export interface QueueEntry {
  queuedAtMs: number;
  done: string[];
}

export class IndexOverlay {
  /** By far the busiest (a record per store): typed arrays (staged-ids.ts). */
  readonly blobs = new StagedIds<IndexEntry>();
  readonly shards = new StagedMap<IndexEntry>();
  readonly deleted = new StagedMap<DeletedEntry>();
  readonly queue = new StagedMap<QueueEntry>();
  /** LSN of the record being staged. */
  lsn = 0;
  /** The highest LSN staged. */
  stagedLsn = 0;

  get empty(): boolean {
    return this.blobs.size === 0 && this.shards.size === 0 && this.deleted.size === 0 && this.queue.size === 0;
  }

  dropThrough(lsn: number): void {
    if (this.empty) return;
    this.blobs.dropThrough(lsn);
    this.shards.dropThrough(lsn);
    this.deleted.dropThrough(lsn);
    this.queue.dropThrough(lsn);
  }
}

/**
 * Visits the keys of `base` (an LMDB range from `start`) and the staged slots from `start` in byte
 * order, a staged value hiding the base's value of its key and a staged removal hiding the key,
 * until a visit returns false.
 */
export function mergeRange<B, T>(
  base: Iterable<{ key: Buffer; value: B }>,
  staged: Staged<T>,
  start: Buffer | undefined,
  onBase: (key: Buffer, value: B) => boolean,
  onStaged: (key: Buffer, value: T) => boolean,
): void {
  if (staged.size === 0) {
    for (const { key, value } of base) if (!onBase(key, value)) return;
    return;
  }
  const extra = staged.sortedFrom(start);
  let i = 0;
  for (const { key, value } of base) {
    while (i < extra.length && Buffer.compare(extra[i]!.key, key) < 0) {
      const { key: k, slot } = extra[i++]!;
      if (slot.value !== null && !onStaged(k, slot.value)) return;
    }
    if (i < extra.length && extra[i]!.key.equals(key)) {
      const { key: k, slot } = extra[i++]!;
      if (slot.value !== null && !onStaged(k, slot.value)) return;
      continue;
    }
    if (!onBase(key, value)) return;
  }
  for (; i < extra.length; i++) {
    const { key: k, slot } = extra[i]!;
    if (slot.value !== null && !onStaged(k, slot.value)) return;
  }
}
