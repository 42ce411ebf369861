/**
 * The blob records, as reads see them: the staged overlay, then the journal's table of records
 * committed but not merged yet (blob-journal.ts), then `blobs` (LMDB, in id order); and a Bloom
 * filter of the ids held (id-filter.ts) that answers "not here" for a new blob's id without an
 * index read.
 */
import type { Database } from 'lmdb';
import type { BlobJournal } from './blob-journal.js';
import { copyEntry, decodeEntry, type IndexEntry } from './entry.js';
import { IdFilter } from './id-filter.js';
import { keysOf, mergedKeys } from './id-list.js';
import { mergeRange } from './overlay.js';
import type { StagedIds } from './staged-ids.js';

/** Ids read from LMDB per turn of the event loop while the id filter is built, at most... */
const FILTER_SLICE_IDS = 2048;
/** ...and for at most this long (a slice of cold leaf pages read from disk took 25 ms). */
const FILTER_SLICE_MS = 2;

export class BlobRecords {
  /** Which ids are certainly not held here: the one answering, and the one being built. */
  private filter: IdFilter | undefined;
  private building: IdFilter | undefined;
  private closed = false;

  constructor(
    private readonly blobs: Database<Buffer, Buffer>,
    /** Blob records committed but not merged into `blobs` yet. */
    private readonly journal: BlobJournal,
    /** The overlay's blob slots: records staged whose transaction has not committed. */
    private readonly staged: StagedIds<IndexEntry>,
    /** Blobs held now (a new filter is sized for twice as many). */
    private readonly heldCount: () => number,
  ) {}

  get(id: Buffer): IndexEntry | undefined {
    const slot = this.staged.lookup(id);
    // A copy: the overlay's entry may be a pooled record, reused once its commit is in (copyEntry).
    if (slot) return slot.value === null ? undefined : copyEntry(slot.value);
    return this.getForCommit(id);
  }

  /**
   * The raw index record of `id` (entry.ts layout), without decoding or copying it: a buffer
   * lmdb-js reuses, valid until the next read of the index. The GET fast path reads it in place.
   */
  peek(id: Buffer): Buffer | undefined {
    // A record in the overlay (stored or deleted, not yet committed) is not LMDB's to answer: the
    // caller takes the long path (get), which sees it. Empty in a read-only workload: one size check.
    if (this.staged.lookup(id)) return undefined;
    return this.committedRaw(id);
  }

  has(id: Buffer): boolean {
    // Every id staged or committed was added to the filter: a "no" needs no lookup.
    if (this.filter !== undefined && !this.filter.mayHave(id)) return false;
    const slot = this.staged.lookup(id);
    if (slot) return slot.value !== null;
    return this.hasCommitted(id);
  }

  /** The record as a commit reads it: its own writes (the journal's pending ones) first, then what is committed. */
  getForCommit(id: Buffer): IndexEntry | undefined {
    const own = this.journal.pendingGet(id);
    const raw = own === undefined ? this.committedRaw(id) : own ?? undefined;
    return raw === undefined ? undefined : decodeEntry(raw);
  }

  hasForCommit(id: Buffer): boolean {
    const own = this.journal.pendingGet(id);
    return own === undefined ? this.hasCommitted(id) : own !== null;
  }

  /** A record staged by the record `lsn` (null: removed); the filter learns a stored id. */
  stage(id: Buffer, entry: IndexEntry | null, lsn: number): void {
    if (entry !== null) {
      const filter = this.filter;
      if (filter !== undefined) {
        filter.add(id);
        // Full: a bigger one is built (this one answers meanwhile).
        if (filter.added > filter.capacity) this.startFilter();
      }
      this.building?.add(id);
    }
    this.staged.set(id, entry, lsn);
  }

  /**
   * Calls `visit` with every stored id from `start` (inclusive) in byte order, with its policy and
   * size, until it returns false. The id is valid only during the call (copy it to keep it).
   */
  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number, size: number) => boolean): void {
    mergeRange(this.committedFrom(start), this.staged, start,
      (key, raw) => {
        const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        return visit(key, b[1]!, Number(b.readBigUInt64LE(16)));
      },
      (key, e) => visit(key, e.policy, e.size));
  }

  /** Ids held from `start`, staged ones included. */
  keysFrom(start: Buffer): Generator<Buffer> {
    return mergedKeys(keysOf(this.committedFrom(start)), this.staged, start);
  }

  /**
   * Builds the id filter in the background: the ids of the journal and the overlay at once, then
   * LMDB's a slice per turn of the event loop; ids staged meanwhile are added as they come. Once
   * done it answers has(); a bigger one is built the same way once it fills up. Start it once the
   * index holds everything recovery replayed.
   */
  startFilter(): void {
    if (this.building !== undefined || this.closed) return;
    const filter = new IdFilter(Math.max(this.heldCount(), this.filter?.added ?? 0) * 2);
    this.building = filter;
    // In no order (a filter needs none): the journal's ids in order would sort every bucket of its
    // tables first (~150 ms of event loop for 262,144 changes; this pass ~20-30 ms). In one turn:
    // sliced, a merge could move ids the pass has not reached into LMDB behind the LMDB pass.
    this.journal.forEachIdAt((ids, at) => filter.addAt(ids, at));
    for (const { key } of this.staged.sortedFrom(undefined)) filter.add(key);
    let after: Buffer | undefined;
    // The last id read, copied into one buffer (lmdb-js may reuse a key's): where the next slice starts.
    const last = Buffer.alloc(16);
    const slice = (): void => {
      if (this.closed || this.building !== filter) return;
      let n = 0;
      const until = performance.now() + FILTER_SLICE_MS;
      for (const key of this.blobs.getKeys({ start: after, limit: FILTER_SLICE_IDS + 1 })) {
        // Only the first key of a slice can be the last one of the slice before.
        if (n === 0 && after !== undefined && key.equals(after)) continue;
        filter.add(key);
        key.copy(last);
        n++;
        if ((n & 63) === 0 && performance.now() > until) break;
      }
      after = last;
      if (n > 0) {
        setImmediate(slice);
        return;
      }
      filter.complete = true;
      this.filter = filter;
      this.building = undefined;
    };
    setImmediate(slice);
  }

  /** The id filter, if one answers (tests and metrics). */
  get idFilter(): IdFilter | undefined {
    return this.filter;
  }

  /** No filter is built any more. */
  close(): void {
    this.closed = true;
  }

  /** The committed record of `id` (a view valid until the next read or commit): the journal's, else LMDB's. */
  private committedRaw(id: Buffer): Buffer | undefined {
    const journaled = this.journal.get(id);
    if (journaled !== undefined) return journaled ?? undefined;
    return this.blobs.getBinaryFast(id);
  }

  private hasCommitted(id: Buffer): boolean {
    const journaled = this.journal.get(id);
    if (journaled !== undefined) return journaled !== null;
    return this.blobs.doesExist(id);
  }

  /**
   * The committed blob records from `start` (inclusive) in id order: LMDB's, with the journal's
   * changes over them (a journaled removal hides its key). Keys and values are valid until the next step.
   */
  private *committedFrom(start: Buffer | undefined): Generator<{ key: Buffer; value: Buffer }> {
    const base = this.blobs.getRange({ start });
    if (this.journal.size === 0) {
      yield* base;
      return;
    }
    // Both sides are read lazily: a page of a list needs only the records up to its end.
    const extra = this.journal.from(start);
    let next = extra.next();
    for (const entry of base) {
      for (; !next.done && Buffer.compare(next.value.id, entry.key) < 0; next = extra.next()) {
        if (next.value.record !== null) yield { key: next.value.id, value: next.value.record };
      }
      if (!next.done && next.value.id.equals(entry.key)) {
        if (next.value.record !== null) yield { key: next.value.id, value: next.value.record };
        next = extra.next();
        continue;
      }
      yield entry;
    }
    for (; !next.done; next = extra.next()) if (next.value.record !== null) yield { key: next.value.id, value: next.value.record };
  }
}
