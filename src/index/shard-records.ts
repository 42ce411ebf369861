/**
 * The records of the shard columns held here (`shards`): one per column, keyed by the blob id and
 * the column index (src/engine/shard-info.ts), in the blob records' entry format.
 */
import type { Database, RootDatabase } from 'lmdb';
import { decodeEntry, encodeEntry, type IndexEntry } from './entry.js';
import type { GatheredWrites } from './gathered-writes.js';
import { mergeRange, type StagedMap } from './overlay.js';
import { mergedKeys } from './id-list.js';

const ZERO = Buffer.from([0]);
const FF = Buffer.from([0xff]);

export class ShardRecords {
  private readonly db: Database<Buffer, Buffer>;

  constructor(
    root: RootDatabase,
    /** The overlay's column slots: columns staged by records whose transaction has not committed. */
    private readonly staged: StagedMap<IndexEntry>,
  ) {
    this.db = root.openDB<Buffer, Buffer>({ name: 'shards', keyEncoding: 'binary', encoding: 'binary' });
  }

  /** The record of a shard column (key: shardKey(id, index)). */
  get(key: Buffer): IndexEntry | undefined {
    const slot = this.staged.lookup(key);
    if (slot) return slot.value ?? undefined;
    return this.committed(key);
  }

  has(key: Buffer): boolean {
    const slot = this.staged.lookup(key);
    if (slot) return slot.value !== null;
    return this.db.doesExist(key);
  }

  /** The committed record (what a write transaction reads, its own writes included). */
  committed(key: Buffer): IndexEntry | undefined {
    const raw = this.db.getBinaryFast(key);
    return raw === undefined ? undefined : decodeEntry(raw);
  }

  hasCommitted(key: Buffer): boolean {
    return this.db.doesExist(key);
  }

  /** The columns of blob `id` held here, by column index. */
  of(id: Buffer): { index: number; entry: IndexEntry }[] {
    const out: { index: number; entry: IndexEntry }[] = [];
    const start = Buffer.concat([id, ZERO]);
    mergeRange(this.db.getRange({ start, end: Buffer.concat([id, FF, FF]) }), this.staged, start,
      (key, value) => out.push({ index: key[16]!, entry: decodeEntry(value) }) > 0,
      () => true);
    for (const { key, slot } of this.staged.withPrefix(id)) if (slot.value) out.push({ index: key[16]!, entry: slot.value });
    return out.sort((a, b) => a.index - b.index);
  }

  /**
   * Every shard column held here from blob id `start` (inclusive) in byte order, with its blob
   * id (valid only during the call), column index, policy and column size, until `visit` returns false.
   */
  scan(start: Buffer | undefined, visit: (id: Buffer, index: number, policy: number, size: number) => boolean): void {
    mergeRange(this.db.getRange({ start }), this.staged, start,
      (k, raw) => {
        const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        return visit(k.subarray(0, 16), k[16]!, b[1]!, Number(b.readBigUInt64LE(16)));
      },
      (k, e) => visit(k.subarray(0, 16), k[16]!, e.policy, e.size));
  }

  /** Column keys from `start`, staged ones included. */
  keysFrom(start: Buffer): Generator<Buffer> {
    return mergedKeys(this.db.getKeys({ start }), this.staged, start);
  }

  /** Inside a write transaction, or gathered for a commit's batch (`gathered`). */
  put(key: Buffer, entry: IndexEntry, gathered?: GatheredWrites): void {
    if (gathered) gathered.put(this.db, key, encodeEntry(entry));
    else void this.db.putSync(key, encodeEntry(entry));
  }

  remove(key: Buffer, gathered?: GatheredWrites): void {
    if (gathered) gathered.remove(this.db, key);
    else void this.db.removeSync(key);
  }
}
