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
 */

const EMPTY = -2;
const REMOVED = -1;
const ID_BYTES = 16;
const MIN_CAPACITY = 1024;

export class IdTable {
  private capacity = 0;
  private mask = 0;
  private ids: Buffer = Buffer.alloc(0);
  private lsns = new Float64Array(0);
  private valueAt = new Int32Array(0);
  private values: Buffer = Buffer.alloc(0);
  private valuesUsed = 0;
  /** Slots by the first byte of their id; `sorted[b]` says whether bucket b is in id order. */
  private readonly buckets: number[][] = Array.from({ length: 256 }, () => []);
  private readonly sorted = new Uint8Array(256);
  size = 0;

  constructor(expectedEntries = MIN_CAPACITY) {
    this.allocate(capacityFor(expectedEntries), 64 * expectedEntries);
  }

  /** The record of `id` (a view, valid until the table changes), null when removed, undefined when not here. */
  get(id: Uint8Array): Buffer | null | undefined {
    if (this.size === 0) return undefined;
    const slot = this.find(id);
    if (slot < 0) return undefined;
    const at = this.valueAt[slot]!;
    return at === REMOVED ? null : this.recordAt(at);
  }

  /** The change's sequence number of `id`, or -1 when not here. */
  lsnOf(id: Uint8Array): number {
    if (this.size === 0) return -1;
    const slot = this.find(id);
    return slot < 0 ? -1 : this.lsns[slot]!;
  }

  /** Sets `id`'s record (copied from `record`, entry.ts layout) or its removal (null), at `lsn`. */
  set(id: Uint8Array, record: Uint8Array | null, lsn: number): void {
    if ((this.size + 1) * 2 > this.capacity) this.rehash(this.capacity * 2);
    let slot = this.find(id);
    if (slot < 0) {
      slot = ~slot;
      this.ids.set(id.subarray(0, ID_BYTES), slot * ID_BYTES);
      this.size++;
      const b = this.buckets[id[0]!]!;
      b.push(slot);
      this.sorted[id[0]!] = 0;
    }
    this.lsns[slot] = lsn;
    this.valueAt[slot] = record === null ? REMOVED : this.store(record);
  }

  /**
   * Keeps only the changes made after `lsn` (those up to it are in LMDB now), rebuilding the
   * table: what was overwritten goes too.
   */
  dropThrough(lsn: number): void {
    const keep: { id: Buffer; record: Buffer | null; lsn: number }[] = [];
    this.forEachSlot((slot) => {
      if (this.lsns[slot]! <= lsn) return;
      const at = this.valueAt[slot]!;
      keep.push({ id: Buffer.from(this.idAt(slot)), record: at === REMOVED ? null : Buffer.from(this.recordAt(at)), lsn: this.lsns[slot]! });
    });
    // The same room again: the table fills up to the same size before the next merge.
    this.allocate(this.capacity, this.values.length);
    for (const k of keep) this.set(k.id, k.record, k.lsn);
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

  /** Bucket `b`'s slots in id order. */
  private bucket(b: number): number[] {
    const slots = this.buckets[b]!;
    if (this.sorted[b] === 0) {
      slots.sort((x, y) => this.compareSlots(x, y));
      this.sorted[b] = 1;
    }
    return slots;
  }

  private forEachSlot(visit: (slot: number) => void): void {
    for (const slots of this.buckets) for (const slot of slots) visit(slot);
  }

  /** The slot holding `id`, or ~slot of the empty one where it would go. */
  private find(id: Uint8Array): number {
    const w0 = word(id, 0);
    const w1 = word(id, 4);
    const w2 = word(id, 8);
    const w3 = word(id, 12);
    const ids = this.ids;
    for (let slot = w0 & this.mask; ; slot = (slot + 1) & this.mask) {
      if (this.valueAt[slot] === EMPTY) return ~slot;
      const at = slot * ID_BYTES;
      if (ids.readUInt32LE(at) === w0 && ids.readUInt32LE(at + 4) === w1 && ids.readUInt32LE(at + 8) === w2 && ids.readUInt32LE(at + 12) === w3) return slot;
    }
  }

  private idAt(slot: number): Buffer {
    return this.ids.subarray(slot * ID_BYTES, slot * ID_BYTES + ID_BYTES);
  }

  /** A record stored at `at`: its length first (u32), then its bytes. */
  private recordAt(at: number): Buffer {
    return this.values.subarray(at + 4, at + 4 + this.values.readUInt32LE(at));
  }

  private store(record: Uint8Array): number {
    const need = 4 + record.length;
    if (this.valuesUsed + need > this.values.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.values.length * 2, this.valuesUsed + need));
      this.values.copy(grown, 0, 0, this.valuesUsed);
      this.values = grown;
    }
    const at = this.valuesUsed;
    this.values.writeUInt32LE(record.length, at);
    this.values.set(record, at + 4);
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
    const old = this.buckets.map((b) => b.slice());
    this.allocate(capacity, values.length, values, this.valuesUsed);
    for (const slots of old) {
      for (const slot of slots) {
        const id = ids.subarray(slot * ID_BYTES, slot * ID_BYTES + ID_BYTES);
        const target = ~this.find(id);
        this.ids.set(id, target * ID_BYTES);
        this.lsns[target] = lsns[slot]!;
        this.valueAt[target] = valueAt[slot]!;
        this.buckets[id[0]!]!.push(target);
        this.size++;
      }
    }
  }

  private allocate(capacity: number, valueBytes: number, values?: Buffer, valuesUsed = 0): void {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.ids = Buffer.allocUnsafeSlow(capacity * ID_BYTES);
    this.lsns = new Float64Array(capacity);
    this.valueAt = new Int32Array(capacity).fill(EMPTY);
    this.values = values ?? Buffer.allocUnsafeSlow(valueBytes);
    this.valuesUsed = valuesUsed;
    for (const b of this.buckets) b.length = 0;
    this.sorted.fill(0);
    this.size = 0;
  }
}

const word = (id: Uint8Array, at: number): number => (id[at]! | (id[at + 1]! << 8) | (id[at + 2]! << 16) | (id[at + 3]! << 24)) >>> 0;

/** A power of two with room for `entries` at most half full. */
function capacityFor(entries: number): number {
  let c = MIN_CAPACITY;
  while (c < entries * 2) c *= 2;
  return c;
}
