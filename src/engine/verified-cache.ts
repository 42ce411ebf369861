/**
 * Small blobs already read from their segment and verified (BLAKE3 against the index's checksum),
 * kept in memory: a hot blob is answered again without a pread and without re-hashing it. RocksDB
 * does the same with its block cache (a hit is not re-verified); the bytes on disk stay checked by
 * the scrubber. Bounded by readCacheBytes (buffer bytes) and readCacheRecordMaxBytes (largest
 * record kept); readCacheBytes 0 turns it off.
 *
 * A hit allocates nothing and calls nothing native. The table is set-associative (WAYS entries per
 * set), indexed by bits of the id (a BLAKE3 output, so uniform). An entry is keyed by
 * the id and the index entry's size, created-at time and checksum: a blob stored again after a
 * delete (a new created-at time) misses, while a record moved by compaction (same bytes) keeps its
 * entry. The engine also drops a blob's record when its delete is staged (invalidate), so a hot
 * GET finds the record by the id alone (getById), without reading the index.
 *
 * A record is kept on its second read (a doorkeeper, as in TinyLFU), so a scan does not evict
 * what is hot. Eviction is CLOCK over the table slots. An evicted record whose buffer fits the record coming
 * in is reused for it, buffer and all, so a stream of misses of same-sized blobs (a working set
 * larger than the cache) allocates no buffers either.
 */
import type { BlobMeta } from '../blob/meta.js';

/**
 * Entries per set. The table has a slot for twice the 4 KiB records that fit, so a set holds one
 * such record on average (Poisson): with 4 ways about one set in 10,000 overflows (a hot set of
 * 4096 lost two records to it), with 8 one in a million.
 */
const WAYS = 8;
/** The index entry's location byte of a segment record (src/index/entry.ts Location.SEGMENT). */
const SEGMENT_LOCATION = 1;
/** Key words: id (16 bytes), size (8), created-at (8), checksum (32), as 16 int32 words. */
const KEY_WORDS = 16;
/** Doorkeeper marks per table slot: at most one in eight is set, so few first reads pass as second ones. */
const DOORKEEPER_BYTES_PER_SLOT = 4;
/** Buffers are sized in steps of this, so an evicted buffer fits records of nearly the same size. */
const BUFFER_STEP = 512;

export class CachedRecord {
  /** id, size, created-at, checksum as int32 words (see KEY_WORDS). */
  readonly key = new Int32Array(KEY_WORDS);
  /** The same key as bytes. */
  readonly keyBytes = Buffer.from(this.key.buffer, this.key.byteOffset, this.key.byteLength);
  policy = 0;
  /** The verified bytes: a view of `buffer` (or `buffer` itself). */
  data: Buffer;
  /**
   * Owned by the HTTP GET path: the status line and headers of this record's 200 answer, made on
   * its first hit (the record never changes, so neither does its answer); reset on reuse.
   */
  answerHead: Buffer | undefined = undefined;
  /** The answer head of the record this one held before (reused by the next head of its length). */
  spareHead: Buffer | undefined = undefined;
  referenced = false;
  /** Its table slot; -1 once evicted. */
  slot = -1;

  constructor(readonly buffer: Buffer) {
    this.data = buffer;
  }

}

export interface VerifiedCacheStats {
  entries: number;
  bytes: number;
  hits: number;
  misses: number;
}

export class VerifiedCache {
  readonly enabled: boolean;
  private readonly table: (CachedRecord | undefined)[];
  /**
   * Per slot, kept flat beside the table so that a lookup touches a few cache lines rather than
   * an object per way (pointer chasing cost a hit ~0.3 us): a tag (key word 1; a set's tags share
   * one line), the key words and the policy.
   */
  private readonly tags: Int32Array;
  private readonly keys: Int32Array;
  private readonly policies: Uint8Array;
  /** Marks of records read once (firstSight); cleared after as many marks as the table has records of 4 KiB. */
  private readonly doorkeeper: Uint8Array;
  private doorkeeperMarks = 0;
  /** What admitMissed hands back for a record it does not keep. */
  private readonly transient = new CachedRecord(Buffer.alloc(0));
  private readonly setMask: number;
  private hand = 0;
  private bytes = 0;
  private entries = 0;
  /** The key being looked up or admitted (int32 words read little endian, as Node's platforms are). */
  private readonly probe = new Int32Array(KEY_WORDS);
  private readonly probeBytes = Buffer.from(this.probe.buffer);
  /** Views for get()'s reads: the id is a scratch buffer and lmdb-js reuses its value buffer, so both are made once. */
  private readonly ids = new ViewOf();
  private readonly entryViews = new ViewOf();
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly maxRecordBytes: number,
  ) {
    this.enabled = maxBytes > 0 && maxRecordBytes > 0;
    // Slots for twice the records of 4 KiB that fit in maxBytes: a table at most half full.
    let sets = 1;
    while (sets * WAYS < (2 * maxBytes) / 4096 && sets < 1 << 22) sets *= 2;
    this.setMask = sets - 1;
    const slots = this.enabled ? sets * WAYS : 0;
    this.table = new Array<CachedRecord | undefined>(slots).fill(undefined);
    this.tags = new Int32Array(slots);
    this.keys = new Int32Array(slots * KEY_WORDS);
    this.policies = new Uint8Array(slots);
    this.doorkeeper = new Uint8Array(slots * DOORKEEPER_BYTES_PER_SLOT);
  }

  /**
   * The record of `id` whose index entry (its raw bytes, src/index/entry.ts) is `entry`; only
   * entries of segment records (location 1) are ever cached.
   */
  get(id: Buffer, entry: Buffer): CachedRecord | undefined {
    if (!this.enabled) return undefined;
    const p = this.probe;
    const iv = this.ids.of(id);
    const io = this.ids.offset;
    const ev = this.entryViews.of(entry);
    const eo = this.entryViews.offset;
    if (ev.getUint8(eo) !== SEGMENT_LOCATION) return undefined;
    for (let i = 0; i < 4; i++) p[i] = iv.getInt32(io + 4 * i, true);
    for (let i = 4; i < KEY_WORDS; i++) p[i] = ev.getInt32(eo + 4 * i, true);
    return this.counted(this.find(ev.getUint8(eo + 1)));
  }

  /**
   * The record of `id`, if cached, found by the id alone: the engine drops a record when its blob
   * is deleted (invalidate, as the delete is staged), so a record kept is the blob's current one.
   * A hot GET is answered without reading the index. A miss is not counted: get() follows.
   */
  getById(id: Buffer): CachedRecord | undefined {
    if (!this.enabled) return undefined;
    const slot = this.slotOfId(id);
    if (slot < 0) return undefined;
    const e = this.table[slot]!;
    e.referenced = true;
    this.hits++;
    return e;
  }

  /** Forgets the record of `id` (its blob is being deleted). */
  invalidate(id: Buffer): void {
    if (!this.enabled) return;
    for (let slot = this.slotOfId(id); slot >= 0; slot = this.slotOfId(id)) {
      const e = this.remove(this.table[slot]!);
      this.bytes -= e.buffer.length;
    }
  }

  /** The slot holding a record of `id` (any size, time or checksum), or -1. */
  private slotOfId(id: Buffer): number {
    const iv = this.ids.of(id);
    const io = this.ids.offset;
    const w0 = iv.getInt32(io, true);
    const w1 = iv.getInt32(io + 4, true);
    const w2 = iv.getInt32(io + 8, true);
    const w3 = iv.getInt32(io + 12, true);
    const base = ((w0 ^ w3) & this.setMask) * WAYS;
    const keys = this.keys;
    for (let i = base; i < base + WAYS; i++) {
      if (this.tags[i] !== w1 || this.table[i] === undefined) continue;
      const at = i * KEY_WORDS;
      if (keys[at] === w0 && keys[at + 2] === w2 && keys[at + 3] === w3) return i;
    }
    return -1;
  }

  /** The record of a blob's metadata, if cached. */
  getMeta(meta: BlobMeta): CachedRecord | undefined {
    if (!this.enabled) return undefined;
    this.probeOf(meta);
    return this.counted(this.find(meta.policy));
  }

  /**
   * Keeps a copy of `data`, the verified bytes of `meta`: on its second read within the
   * doorkeeper's window (nothing when too large or off).
   */
  admit(meta: BlobMeta, data: Buffer): CachedRecord | undefined {
    if (!this.enabled || data.length > this.maxRecordBytes) return undefined;
    this.probeOf(meta);
    return this.firstSight() ? undefined : this.admitProbed(meta.policy, data);
  }

  /** The largest record kept (0 when off). */
  get recordMaxBytes(): number {
    return this.enabled ? this.maxRecordBytes : 0;
  }

  /** `digest` is the checksum of the entry that the last get() missed. */
  missedChecksumIs(digest: Buffer): boolean {
    return digest.length === 32 && digest.compare(this.probeBytes, 32, 64) === 0;
  }

  /**
   * admit() for the entry that the last get() missed, its bytes verified by the caller. A record
   * not kept (seen for the first time, or too large) comes back as a transient record over `data`,
   * valid until the next call, so that the caller answers it the same way.
   */
  admitMissed(policy: number, data: Buffer): CachedRecord {
    const kept = !this.enabled || data.length > this.maxRecordBytes || this.firstSight() ? undefined : this.admitProbed(policy, data);
    if (kept !== undefined) return kept;
    const t = this.transient;
    t.key.set(this.probe);
    t.policy = policy;
    t.data = data;
    if (t.answerHead !== undefined) t.spareHead = t.answerHead;
    t.answerHead = undefined;
    return t;
  }

  /**
   * The doorkeeper (as in TinyLFU): the first read of a record only marks it, the second within
   * the window keeps it. A working set larger than the cache, read in a cycle, then costs no
   * copies or evictions and does not push the hot records out.
   */
  private firstSight(): boolean {
    const d = this.doorkeeper;
    const i = this.probe[2]! & (d.length - 1);
    if (d[i] === 1) return false;
    if (this.doorkeeperMarks >= d.length / DOORKEEPER_BYTES_PER_SLOT / 2) {
      d.fill(0);
      this.doorkeeperMarks = 0;
    }
    d[i] = 1;
    this.doorkeeperMarks++;
    return true;
  }

  private admitProbed(policy: number, data: Buffer): CachedRecord | undefined {
    const found = this.find(policy);
    if (found) return found;
    const need = Math.ceil(Math.max(data.length, 1) / BUFFER_STEP) * BUFFER_STEP;
    if (need > this.maxBytes) return undefined;
    let reuse: CachedRecord | undefined;
    const base = this.setOf(this.probe);
    let slot = -1;
    for (let i = base; i < base + WAYS && slot < 0; i++) if (this.table[i] === undefined) slot = i;
    if (slot < 0) {
      // A full set: its first unreferenced way goes (or its first way).
      slot = base;
      for (let i = base; i < base + WAYS; i++) {
        if (!this.table[i]!.referenced) {
          slot = i;
          break;
        }
      }
      const victim = this.remove(this.table[slot]!);
      if (fits(victim, need)) reuse = victim;
      else this.bytes -= victim.buffer.length;
    }
    // CLOCK: a referenced entry gets a second chance, an unreferenced one goes; two turns at most.
    for (let steps = 2 * this.table.length; reuse === undefined && this.bytes + need > this.maxBytes && steps > 0; steps--) {
      const e = this.table[this.hand];
      this.hand = (this.hand + 1) % this.table.length;
      if (e === undefined) continue;
      if (e.referenced) {
        e.referenced = false;
        continue;
      }
      this.remove(e);
      if (fits(e, need)) reuse = e;
      else this.bytes -= e.buffer.length;
    }
    if (reuse === undefined && this.bytes + need > this.maxBytes) return undefined;
    let rec = reuse;
    if (rec === undefined) {
      rec = new CachedRecord(Buffer.allocUnsafeSlow(need));
      this.bytes += need;
    }
    data.copy(rec.buffer);
    rec.data = data.length === rec.buffer.length ? rec.buffer : rec.buffer.subarray(0, data.length);
    rec.key.set(this.probe);
    rec.policy = policy;
    if (rec.answerHead !== undefined) rec.spareHead = rec.answerHead;
    rec.answerHead = undefined;
    rec.referenced = false;
    rec.slot = slot;
    this.table[slot] = rec;
    this.tags[slot] = this.probe[1]!;
    this.keys.set(this.probe, slot * KEY_WORDS);
    this.policies[slot] = policy;
    this.entries++;
    return rec;
  }

  stats(): VerifiedCacheStats {
    return { entries: this.entries, bytes: this.bytes, hits: this.hits, misses: this.misses };
  }

  private counted(e: CachedRecord | undefined): CachedRecord | undefined {
    if (e === undefined) this.misses++;
    else this.hits++;
    return e;
  }

  /** The entry keyed by the probe, marked as used. */
  private find(policy: number): CachedRecord | undefined {
    const p = this.probe;
    const base = this.setOf(p);
    const tag = p[1]!;
    for (let i = base; i < base + WAYS; i++) {
      if (this.tags[i] !== tag || this.policies[i] !== policy || !this.keyAt(i)) continue;
      const e = this.table[i];
      if (e === undefined) continue;
      e.referenced = true;
      return e;
    }
    return undefined;
  }

  /** The key in `slot` is the probe. */
  private keyAt(slot: number): boolean {
    const keys = this.keys;
    const p = this.probe;
    const at = slot * KEY_WORDS;
    for (let i = 0; i < KEY_WORDS; i++) if (keys[at + i] !== p[i]) return false;
    return true;
  }

  /**
   * The first slot of the key's set: from the id's first and last words, as ids that share a
   * prefix (a listing's page, a prefix of hot ids) have the same first bytes.
   */
  private setOf(key: Int32Array): number {
    return ((key[0]! ^ key[3]!) & this.setMask) * WAYS;
  }

  private probeOf(meta: BlobMeta): void {
    const b = this.probeBytes;
    meta.id.copy(b, 0, 0, 16);
    b.writeUInt32LE(meta.size % 2 ** 32, 16);
    b.writeUInt32LE(Math.floor(meta.size / 2 ** 32), 20);
    b.writeBigUInt64LE(meta.createdAtNs, 24);
    meta.checksum.copy(b, 32, 0, 32);
  }

  /** Out of the table (its buffer still counted in `bytes`: the caller reuses or drops it). */
  private remove(e: CachedRecord): CachedRecord {
    this.table[e.slot] = undefined;
    this.tags[e.slot] = 0;
    e.slot = -1;
    this.entries--;
    return e;
  }
}

/**
 * A DataView of a buffer's memory and the buffer's offset in it, made again only when another
 * buffer comes. Reads through it stay monomorphic and inlined: Buffer's read methods are shared by
 * every kind of buffer, and lmdb-js's reused value buffer has a shape of its own (even its
 * `byteOffset` and elements are slow to read). The buffer is compared by identity (reading
 * `.buffer` is a call into V8's runtime); a typed array's memory and offset never change.
 */
class ViewOf {
  private last: Buffer | undefined = undefined;
  private view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
  offset = 0;

  of(buf: Buffer): DataView<ArrayBufferLike> {
    if (buf !== this.last) {
      this.last = buf;
      this.view = new DataView(buf.buffer);
      this.offset = buf.byteOffset;
    }
    return this.view;
  }
}

/** An evicted buffer is reused for a record of `need` bytes (rounded) if it is at most twice that. */
function fits(e: CachedRecord, need: number): boolean {
  return e.buffer.length >= need && e.buffer.length <= 2 * need;
}
