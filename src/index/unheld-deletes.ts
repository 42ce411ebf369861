/**
 * Deletes of blobs this node held nothing of (`unheld`: id → when; `unheld-at`: the same by
 * time), kept so that a copy made before such a delete and arriving after it is declined, across
 * restarts too (src/engine/delete-memory.ts). Unlike the deletes of blobs held here they are
 * nobody's record of a blob: anti-entropy never sees them, and pruning keeps only the newest.
 */
import type { Database, RootDatabase } from 'lmdb';
import { pruneOldest, timeKey } from './time-key.js';

export class UnheldDeletes {
  private readonly db: Database<number, Buffer>;
  private readonly byTime: Database<boolean, Buffer>;
  private kept: number;

  constructor(private readonly root: RootDatabase) {
    this.db = root.openDB<number, Buffer>({ name: 'unheld', keyEncoding: 'binary' });
    this.byTime = root.openDB<boolean, Buffer>({ name: 'unheld-at', keyEncoding: 'binary' });
    this.kept = this.db.getCount();
  }

  /** Deletes kept (a delete written and not yet pruned). */
  get count(): number {
    return this.kept;
  }

  /** When the blob was deleted here while held nothing of, if that is kept. */
  at(id: Buffer): number | undefined {
    return this.kept === 0 ? undefined : this.db.get(id);
  }

  /** Written in a transaction of its own, durable once it resolves. */
  async add(id: Buffer, atMs: number): Promise<void> {
    let added = false;
    await this.root.transaction(() => {
      added = !this.db.doesExist(id);
      this.db.putSync(id, atMs);
      this.byTime.putSync(timeKey(atMs, id), true);
    });
    if (added) this.kept++;
    // With overlappingSync a commit resolves before its flush.
    await this.root.flushed;
  }

  /** Forgets the deletes made before `beforeMs`, and the oldest beyond `keep`; how many went. */
  async prune(beforeMs: number, keep: number): Promise<number> {
    let excess = Math.max(0, this.kept - keep);
    let pruned = 0;
    const take = (atMs: number): boolean => {
      if (atMs >= beforeMs && excess <= 0) return false;
      excess--;
      return true;
    };
    await pruneOldest(this.root, this.byTime, take, (id, atMs) => {
      if (this.db.get(id) === atMs && this.db.removeSync(id)) pruned++;
    });
    this.kept -= pruned;
    return pruned;
  }
}
