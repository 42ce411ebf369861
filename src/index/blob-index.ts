/**
 * The LMDB index: one record per blob (`blobs`), per-segment space accounting (`segments`), and
 * small metadata (`meta`): the log checkpoint and the node's counters. Start-up reads only `meta`
 * and `segments`, never the blob records, so it does not grow with the number of blobs.
 * Writes go through `commit()`: one asynchronous LMDB transaction per group commit of the log.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { type IndexEntry, decodeEntry, encodeEntry } from './entry.js';

/** Every record before this log position has been applied to the index. */
export interface Checkpoint {
  segment: number;
  offset: number;
  /** The log sequence number the next record carries. */
  nextLsn: number;
}

export interface SegmentSpace {
  /** Bytes of records appended to the segment. */
  totalBytes: number;
  /** Bytes of records the index still points at. */
  liveBytes: number;
}

export interface Counters {
  blobCount: number;
  /** Sum of the sizes of the blobs stored. */
  storedBytes: number;
}

export interface ListPage {
  ids: Buffer[];
  hasMore: boolean;
}

export class BlobIndex {
  private readonly root: RootDatabase;
  private readonly blobs: Database<Buffer, Buffer>;
  private readonly meta: Database<unknown, string>;
  private readonly segmentDb: Database<SegmentSpace, number>;
  readonly segments = new Map<number, SegmentSpace>();
  private readonly dirtySegments = new Set<number>();
  counters: Counters;
  checkpoint: Checkpoint;

  constructor(path: string) {
    // overlappingSync: a commit resolves before its flush; callers that need durability await flushed().
    this.root = open({ path, compression: false, maxDbs: 8, overlappingSync: true, mapSize: 1024 ** 3 });
    this.blobs = this.root.openDB<Buffer, Buffer>({ name: 'blobs', keyEncoding: 'binary', encoding: 'binary' });
    this.meta = this.root.openDB<unknown, string>({ name: 'meta' });
    this.segmentDb = this.root.openDB<SegmentSpace, number>({ name: 'segments', keyEncoding: 'uint32' });
    this.counters = (this.meta.get('counters') as Counters | undefined) ?? { blobCount: 0, storedBytes: 0 };
    this.checkpoint = (this.meta.get('checkpoint') as Checkpoint | undefined) ?? { segment: 1, offset: 0, nextLsn: 1 };
    for (const { key, value } of this.segmentDb.getRange()) this.segments.set(key, { ...value });
  }

  get(id: Buffer): IndexEntry | undefined {
    const raw = this.blobs.getBinaryFast(id);
    return raw === undefined ? undefined : decodeEntry(raw);
  }

  has(id: Buffer): boolean {
    return this.blobs.doesExist(id);
  }

  /** Inside commit(): writes happen in the open transaction. */
  put(id: Buffer, entry: IndexEntry): void {
    this.blobs.putSync(id, encodeEntry(entry));
  }

  remove(id: Buffer): void {
    this.blobs.removeSync(id);
  }

  space(segment: number): SegmentSpace {
    let s = this.segments.get(segment);
    if (!s) {
      s = { totalBytes: 0, liveBytes: 0 };
      this.segments.set(segment, s);
    }
    this.dirtySegments.add(segment);
    return s;
  }

  dropSegment(segment: number): Promise<unknown> {
    this.segments.delete(segment);
    this.dirtySegments.delete(segment);
    return this.segmentDb.remove(segment);
  }

  /**
   * Runs `apply` in one write transaction with the new checkpoint, counters and segment space,
   * resolving once committed (visible to reads); flushed() tells when it is on disk.
   */
  async commit(checkpoint: Checkpoint, apply: () => void): Promise<void> {
    await this.root.transaction(() => {
      apply();
      this.checkpoint = checkpoint;
      this.meta.putSync('checkpoint', checkpoint);
      this.meta.putSync('counters', this.counters);
      for (const segment of this.dirtySegments) {
        const s = this.segments.get(segment);
        if (s) this.segmentDb.putSync(segment, s);
      }
      this.dirtySegments.clear();
    });
  }

  /** Resolves once every transaction committed so far is flushed to disk. */
  flushed(): Promise<unknown> {
    return this.root.flushed;
  }

  /** Ids in byte order after `after` (exclusive) whose hex form starts with `prefix`. */
  list(prefix: string, after: Buffer | undefined, limit: number): ListPage {
    const start = after ?? Buffer.from(prefix.padEnd(32, '0').slice(0, 32), 'hex');
    const ids: Buffer[] = [];
    let hasMore = false;
    for (const key of this.blobs.getKeys({ start })) {
      if (after && key.equals(after)) continue;
      if (!key.toString('hex').startsWith(prefix)) break;
      if (ids.length === limit) {
        hasMore = true;
        break;
      }
      ids.push(Buffer.from(key));
    }
    return { ids, hasMore };
  }

  async close(): Promise<void> {
    await this.root.flushed;
    await this.root.close();
  }
}
