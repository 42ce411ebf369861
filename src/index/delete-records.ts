/**
 * The ids a user deleted here (`deleted`), with when and the policy the blob had: repair never
 * copies those back. Kept until pruned; counted, so a node that keeps none looks nothing up.
 *
 * A second table (`deleted-at`) keys each record by when ‖ id, so that pruning reads only the
 * records it forgets, a page per transaction, rather than scanning every delete on the event
 * loop (a node keeping a million deletes stalled for seconds at each look). Only `mark` writes
 * it; a key whose record was cleared or marked again later is dropped when pruning reaches it.
 */
import type { Database, RootDatabase } from 'lmdb';
import type { GatheredWrites } from './gathered-writes.js';
import { type DeletedEntry, type IdWatcher, mergeRange, type StagedMap } from './overlay.js';
import { pruneOldest, timeKey } from './time-key.js';

export class DeleteRecords {
  private readonly db: Database<DeletedEntry, Buffer>;
  private readonly byTime: Database<boolean, Buffer>;
  private count: number;

  constructor(
    private readonly root: RootDatabase,
    /** The overlay's delete slots: deletes staged by records whose transaction has not committed. */
    private readonly staged: StagedMap<DeletedEntry>,
  ) {
    this.db = root.openDB<DeletedEntry, Buffer>({ name: 'deleted', keyEncoding: 'binary' });
    this.byTime = root.openDB<boolean, Buffer>({ name: 'deleted-at', keyEncoding: 'binary' });
    this.count = this.db.getCount();
    // Records written before the time table existed (or by a build without it) get their keys once.
    if (this.byTime.getCount() < this.count) {
      root.transactionSync(() => {
        for (const { key, value } of this.db.getRange()) this.byTime.putSync(timeKey(value.atMs, key), true);
      });
    }
  }

  /** When a user deleted the blob here, if one did. */
  deletedAt(id: Buffer): number | undefined {
    return this.entryOf(id)?.atMs;
  }

  /** Forgets deletes older than `beforeMs` (repair may bring those blobs back); how many went. */
  async prune(beforeMs: number, left?: IdWatcher): Promise<number> {
    const gone: { id: Buffer; policy: number }[] = [];
    await pruneOldest(this.root, this.byTime, (atMs) => atMs < beforeMs, (id, atMs) => {
      // A key of a delete cleared since, or made again later, stands for nothing.
      const entry = this.db.get(id);
      if (entry !== undefined && Math.floor(entry.atMs) === atMs && this.db.removeSync(id)) gone.push({ id, policy: entry.policy });
    });
    this.count -= gone.length;
    // What reads see changed only where no staged record says otherwise.
    for (const { id, policy } of gone) if (!this.staged.lookup(id)) left?.('deleted', id, policy, undefined);
    return gone.length;
  }

  /** Ids a user deleted here, from `start` in byte order, with their policy, until `visit` returns false. */
  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void {
    if (this.count === 0 && this.staged.size === 0) return;
    mergeRange(this.db.getRange({ start }), this.staged, start, (key, value) => visit(key, value.policy), (key, e) => visit(key, e.policy));
  }

  /** Inside a write transaction. */
  mark(id: Buffer, atMs: number, policy: number): void {
    if (!this.db.doesExist(id)) this.count++;
    this.db.putSync(id, { atMs, policy });
    this.byTime.putSync(timeKey(atMs, id), true);
  }

  /** Inside a write transaction, or gathered for a commit's batch (nothing to look up while no delete is kept). */
  clear(id: Buffer, gathered?: GatheredWrites): void {
    if (this.count === 0) return;
    if (gathered) {
      if (!this.db.doesExist(id)) return;
      this.count--;
      gathered.remove(this.db, id);
    } else if (this.db.removeSync(id)) {
      this.count--;
    }
  }

  /**
   * A record stages the delete, or (`atMs` undefined) its end: the blob was stored again. An end
   * returns the policy of the delete it ended, if there was one.
   */
  stage(id: Buffer, lsn: number, atMs?: number, policy = 0): number | undefined {
    if (atMs !== undefined) {
      this.staged.set(id, { atMs, policy }, lsn);
      return undefined;
    }
    const ended = this.entryOf(id);
    if (ended) this.staged.set(id, null, lsn);
    return ended?.policy;
  }

  private entryOf(id: Buffer): DeletedEntry | undefined {
    const slot = this.staged.lookup(id);
    if (slot) return slot.value ?? undefined;
    return this.count === 0 ? undefined : this.db.get(id);
  }
}
