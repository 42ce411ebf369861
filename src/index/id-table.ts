/**
 * A table of blob ids, each with the latest of its index records (entry.ts layout) or a removal,
 * and the log sequence number of the change: the index journal's memory (blob-journal.ts). It
 * lives in typed arrays, so the tens of thousands of records it holds cost the garbage collector
 * nothing and a lookup allocates nothing.
 *
 *   slots (open addressing, linear probing on the id's first 4 bytes; ids are uniform hashes):
 *     ids      16 bytes per slot          lsns     f64 per slot
 *     valueAt  i32 per slot: offset of the record in `values`, REMOVED, or EMPTY
 *   values: records appended one after another (an overwritten one stays until the table is
 *   rebuilt by dropThrough)
 *   order:  per first byte of the id, the slots holding such ids (sorted when an ordered read
 *   needs that bucket): list pages and scans visit only the buckets their range reaches
 * ids, valueAt and values live in shared memory: the merge thread reads a frozen table's arrays
 * where they are (exportSlots), with no copy on the event loop (~30 ms for 2^20 slots here). Views
 * of them are not for lmdb-js to write: it takes a value's address from its ArrayBuffer, which a
 * shared one is not (the merge thread copies the arrays first).
 */

import { sameId, wordAt } from '../util/id-words.js';
import { ScratchViews } from '../util/scratch-views.js';

/** A table's entries as another thread gets them (IdTable.exportSlots): views of shared memory. */
export interface ExportedSlots {
  ids: Uint8Array;
  valueAt: Int32Array<ArrayBufferLike>;
  values: Uint8Array;
}

const EMPTY = -2;
const REMOVED = -1;
const ID_BYTES = 16;
const MIN_CAPACITY = 1024;
/** Records up to this long are answered from a scratch copy (an index entry without labels is ~70 bytes). */
const SCRATCH_BYTES = 1024;

/** `bytes` zeroed bytes of shared memory (what exportSlots hands over). */
const sharedBytes = (bytes: number): Buffer => Buffer.from(new SharedArrayBuffer(bytes));

export class IdTable {
  private capacity = 0;
  private mask = 0;
  private ids: Buffer = Buffer.alloc(0);
  private lsns = new Float64Array(0);
  private valueAt: Int32Array<ArrayBufferLike> = new Int32Array(0);
  private values: Buffer = Buffer.alloc(0);
  private valuesUsed = 0;
  /** Slots by the first byte of their id; `sorted[b]` says whether bucket b is in id order. */
  private readonly buckets = new SlotBuckets();
  private readonly sorted = new Uint8Array(256);
  /** get()'s answer for a record up to SCRATCH_BYTES. */
  private readonly scratch = new ScratchViews(Buffer.allocUnsafeSlow(SCRATCH_BYTES));
  size = 0;

  constructor(expectedEntries = MIN_CAPACITY) {
    this.allocate(capacityFor(expectedEntries), 64 * expectedEntries);
  }

  /**
   * The record of `id` (valid until the next get or change), null when removed, undefined when not
   * here. A record up to SCRATCH_BYTES is copied into a scratch buffer and answered as a view of it
   * made once per length (a GET's index read allocates nothing); a longer one is a view of its own.
   */
  get(id: Uint8Array): Buffer | null | undefined {
    if (this.size === 0) return undefined;
    const slot = this.find(id, 0);
    if (slot < 0) return undefined;
    const at = this.valueAt[slot]!;
    if (at === REMOVED) return null;
    const values = this.values;
    const length = values.readUInt32LE(at);
    if (length > SCRATCH_BYTES) return this.recordAt(at);
    const out = this.scratch.buffer;
    // A loop, not Buffer.copy: copy makes a view of the source range first.
    for (let i = 0, from = at + 4; i < length; i++) out[i] = values[from + i]!;
    return this.scratch.of(length);
  }

  /** The change's sequence number of `id`, or -1 when not here. */
  lsnOf(id: Uint8Array): number {
    if (this.size === 0) return -1;
    const slot = this.find(id, 0);
    return slot < 0 ? -1 : this.lsns[slot]!;
  }

  /** Sets `id`'s record (copied from `record`, entry.ts layout) or its removal (null), at `lsn`. */
  set(id: Uint8Array, record: Uint8Array | null, lsn: number): void {
    const slot = this.slotFor(id, 0);
    this.lsns[slot] = lsn;
    this.valueAt[slot] = record === null ? REMOVED : this.store(record, 0, record.length);
  }

  /**
   * set() from a buffer of changes, by offsets (no views): the id at `idAt`, its record's `length`
   * bytes at `recordAt`, or a removal when `length` < 0.
   */
  setFrom(src: Buffer, idAt: number, recordAt: number, length: number, lsn: number): void {
    const slot = this.slotFor(src, idAt);
    this.lsns[slot] = lsn;
    this.valueAt[slot] = length < 0 ? REMOVED : this.store(src, recordAt, length);
  }

  /** The slot of the id at `at` of `src`, taken now if it is new. */
  private slotFor(src: Uint8Array, at: number): number {
    if ((this.size + 1) * 2 > this.capacity) this.rehash(this.capacity * 2);
    let slot = this.find(src, at);
    if (slot >= 0) return slot;
    slot = ~slot;
    const to = slot * ID_BYTES;
    for (let i = 0; i < ID_BYTES; i++) this.ids[to + i] = src[at + i]!;
    this.size++;
    const first = src[at]!;
    this.buckets.add(first, slot);
    this.sorted[first] = 0;
    return slot;
  }

  /** Empties the table, keeping its room. */
  clear(): void {
    this.valueAt.fill(EMPTY);
    this.buckets.clear();
    this.sorted.fill(0);
    this.size = 0;
    this.valuesUsed = 0;
  }

  /**
   * The arrays that hold the entries, in shared memory (no copy): read them with ExportedEntries,
   * on any thread, while nothing changes the table (the journal's frozen table until its merge
   * is done).
   */
  exportSlots(): ExportedSlots {
    return { ids: this.ids, valueAt: this.valueAt, values: this.values.subarray(0, this.valuesUsed) };
  }

  /** Calls `visit(ids, at)` for every id held (`ids` from `at`, 16 bytes), in no order: no views are made. */
  forEachIdAt(visit: (ids: Buffer, at: number) => void): void {
    if (this.size === 0) return;
    for (let slot = 0; slot < this.capacity; slot++) if (this.valueAt[slot] !== EMPTY) visit(this.ids, slot * ID_BYTES);
  }

  /**
   * Visits every id with its record (null: removed) and change LSN in no particular order: a
   * plain pass over the slots, cheaper than an ordered one. Views are valid during the call.
   */
  forEachUnordered(visit: (id: Buffer, record: Buffer | null, lsn: number) => void): void {
    if (this.size === 0) return;
    for (let slot = 0; slot < this.capacity; slot++) {
      const at = this.valueAt[slot]!;
      if (at === EMPTY) continue;
      visit(this.idAt(slot), at === REMOVED ? null : this.recordAt(at), this.lsns[slot]!);
    }
  }

  /**
   * Visits the ids from `start` (inclusive; every id when undefined) in byte order with their
   * records (null: removed), until `visit` returns false. The views are valid during the call;
   * the table must not change meanwhile.
   */
  forEachFrom(start: Uint8Array | undefined, visit: (id: Buffer, record: Buffer | null, lsn: number) => boolean): void {
    for (const e of this.from(start)) if (!visit(e.id, e.record, e.lsn)) return;
  }

  /** forEachFrom as an iterator: each step's views are valid until the table changes. */
  *from(start: Uint8Array | undefined): Generator<{ id: Buffer; record: Buffer | null; lsn: number }> {
    if (this.size === 0) return;
    for (let b = start === undefined ? 0 : start[0]!; b < 256; b++) {
      const slots = this.bucket(b);
      let i = 0;
      if (start !== undefined && b === start[0]) {
        // The first slot whose id is not below `start`.
        let hi = slots.length;
        while (i < hi) {
          const mid = (i + hi) >> 1;
          if (this.compareWith(slots[mid]!, start) < 0) i = mid + 1;
          else hi = mid;
        }
      }
      for (; i < slots.length; i++) {
        const slot = slots[i]!;
        const at = this.valueAt[slot]!;
        yield { id: this.idAt(slot), record: at === REMOVED ? null : this.recordAt(at), lsn: this.lsns[slot]! };
      }
    }
  }

  /** Bucket `b`'s slots in id order (a view, valid until the table changes). */
  private bucket(b: number): Int32Array {
    const slots = this.buckets.of(b);
    if (this.sorted[b] === 0) {
      slots.sort((x, y) => this.compareSlots(x, y));
      this.sorted[b] = 1;
    }
    return slots;
  }

  /** The slot holding the id at `at` of `src`, or ~slot of the empty one where it would go. */
  private find(src: Uint8Array, at: number): number {
    const ids = this.ids;
    for (let slot = wordAt(src, at) & this.mask; ; slot = (slot + 1) & this.mask) {
      if (this.valueAt[slot] === EMPTY) return ~slot;
      const p = slot * ID_BYTES;
      if (sameId(ids, p, src, at)) return slot;
    }
  }

  private idAt(slot: number): Buffer {
    return this.ids.subarray(slot * ID_BYTES, slot * ID_BYTES + ID_BYTES);
  }

  /** A record stored at `at`: its length first (u32), then its bytes. */
  private recordAt(at: number): Buffer {
    return this.values.subarray(at + 4, at + 4 + this.values.readUInt32LE(at));
  }

  /** Appends `length` bytes of `src` from `from` to `values`; returns where. */
  private store(src: Uint8Array, from: number, length: number): number {
    const need = 4 + length;
    if (this.valuesUsed + need > this.values.length) {
      const grown = sharedBytes(Math.max(this.values.length * 2, this.valuesUsed + need));
      this.values.copy(grown, 0, 0, this.valuesUsed);
      this.values = grown;
    }
    const at = this.valuesUsed;
    this.values.writeUInt32LE(length, at);
    const values = this.values;
    for (let i = 0; i < length; i++) values[at + 4 + i] = src[from + i]!;
    this.valuesUsed += need;
    return at;
  }

  /** Byte order of two slots' ids, four bytes at a time (no views: sorting a bucket allocates nothing). */
  private compareSlots(x: number, y: number): number {
    const ids = this.ids;
    for (let k = 0; k < ID_BYTES; k += 4) {
      const a = ids.readUInt32BE(x * ID_BYTES + k);
      const b = ids.readUInt32BE(y * ID_BYTES + k);
      if (a !== b) return a < b ? -1 : 1;
    }
    return 0;
  }

  private compareWith(slot: number, id: Uint8Array): number {
    const ids = this.ids;
    for (let k = 0; k < ID_BYTES; k++) {
      const d = ids[slot * ID_BYTES + k]! - id[k]!;
      if (d !== 0) return d;
    }
    return 0;
  }

  private rehash(capacity: number): void {
    const { ids, lsns, valueAt, values } = this;
    const old = this.buckets.copy();
    this.allocate(capacity, values.length, values, this.valuesUsed);
    for (const slots of old) {
      for (const slot of slots) {
        const from = slot * ID_BYTES;
        const target = ~this.find(ids, from);
        ids.copy(this.ids, target * ID_BYTES, from, from + ID_BYTES);
        this.lsns[target] = lsns[slot]!;
        this.valueAt[target] = valueAt[slot]!;
        this.buckets.add(ids[from]!, target);
        this.size++;
      }
    }
  }

  private allocate(capacity: number, valueBytes: number, values?: Buffer, valuesUsed = 0): void {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.ids = sharedBytes(capacity * ID_BYTES);
    this.lsns = new Float64Array(capacity);
    this.valueAt = new Int32Array(new SharedArrayBuffer(capacity * 4)).fill(EMPTY);
    this.values = values ?? sharedBytes(valueBytes);
    this.valuesUsed = valuesUsed;
    this.buckets.clear();
    this.sorted.fill(0);
    this.size = 0;
  }
}

/**
 * Slots by the first byte of their id: 256 typed arrays that keep their room when emptied. (Arrays
 * emptied with `length = 0` at each merge dropped their room, and pushes grew them again: ~26
 * bytes of garbage per journaled store.)
 */
class SlotBuckets {
  private readonly slots: Int32Array[] = Array.from({ length: 256 }, () => new Int32Array(16));
  private readonly counts = new Int32Array(256);

  add(b: number, slot: number): void {
    let slots = this.slots[b]!;
    const n = this.counts[b]!;
    if (n === slots.length) {
      const grown = new Int32Array(2 * n);
      grown.set(slots);
      this.slots[b] = slots = grown;
    }
    slots[n] = slot;
    this.counts[b] = n + 1;
  }

  /** Bucket `b`'s slots (a view, valid until the next add). */
  of(b: number): Int32Array {
    return this.slots[b]!.subarray(0, this.counts[b]!);
  }

  /** Copies of every bucket (a rehash lays them out again). */
  copy(): Int32Array[] {
    return this.slots.map((_, b) => this.of(b).slice());
  }

  clear(): void {
    this.counts.fill(0);
  }
}

/** A power of two with room for `entries` at most half full. */
function capacityFor(entries: number): number {
  let c = MIN_CAPACITY;
  while (c < entries * 2) c *= 2;
  return c;
}

/**
 * The entries of exported slots (IdTable.exportSlots, another thread's copy) in id order, for the
 * journal's merge: a counting sort on the ids' first two bytes, then an insertion sort of each
 * bucket on the rest. Ids are content hashes, so a bucket holds about one id per 65,536 entries:
 * the order costs two passes and almost no comparisons, where a comparison sort made ~17 calls
 * into Buffer.compare per entry.
 */
export class ExportedEntries {
  /** The live slots in id order. */
  private readonly order: Uint32Array;
  private readonly ids: Buffer;
  private readonly values: Buffer;
  private readonly valueAt: Int32Array<ArrayBufferLike>;

  constructor(slots: ExportedSlots) {
    this.ids = Buffer.from(slots.ids.buffer, slots.ids.byteOffset, slots.ids.byteLength);
    this.values = Buffer.from(slots.values.buffer, slots.values.byteOffset, slots.values.byteLength);
    this.valueAt = slots.valueAt;
    const ids = slots.ids;
    const starts = new Uint32Array(65_537);
    let live = 0;
    for (let slot = 0; slot < this.valueAt.length; slot++) {
      if (this.valueAt[slot] === EMPTY) continue;
      starts[((ids[slot * ID_BYTES]! << 8) | ids[slot * ID_BYTES + 1]!) + 1]!++;
      live++;
    }
    for (let b = 1; b < starts.length; b++) starts[b]! += starts[b - 1]!;
    const order = new Uint32Array(live);
    const next = starts.slice(0, 65_536);
    for (let slot = 0; slot < this.valueAt.length; slot++) {
      if (this.valueAt[slot] === EMPTY) continue;
      order[next[(ids[slot * ID_BYTES]! << 8) | ids[slot * ID_BYTES + 1]!]!++] = slot;
    }
    for (let b = 0; b < 65_536; b++) if (starts[b + 1]! - starts[b]! > 1) ExportedEntries.sortBucket(ids, order, starts[b]!, starts[b + 1]!);
    this.order = order;
  }

  /** Insertion sort of order[from, to) by the ids' bytes 2..15 (the first two are the bucket's). */
  private static sortBucket(ids: Uint8Array, order: Uint32Array, from: number, to: number): void {
    const after = (a: number, b: number): boolean => {
      for (let i = 2; i < ID_BYTES; i++) {
        const d = ids[a * ID_BYTES + i]! - ids[b * ID_BYTES + i]!;
        if (d !== 0) return d > 0;
      }
      return false;
    };
    for (let i = from + 1; i < to; i++) {
      const slot = order[i]!;
      let j = i - 1;
      for (; j >= from && after(order[j]!, slot); j--) order[j + 1] = order[j]!;
      order[j + 1] = slot;
    }
  }

  get count(): number {
    return this.order.length;
  }

  /** The i-th id in order (a view). */
  id(i: number): Buffer {
    const slot = this.order[i]!;
    return this.ids.subarray(slot * ID_BYTES, slot * ID_BYTES + ID_BYTES);
  }

  /** The i-th id's record (a view), null when the change removes it. */
  record(i: number): Buffer | null {
    const at = this.valueAt[this.order[i]!]!;
    return at === REMOVED ? null : this.values.subarray(at + 4, at + 4 + this.values.readUInt32LE(at));
  }
}
