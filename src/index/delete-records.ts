/**
 * The ids a user deleted here (`deleted`), with when and the policy the blob had: repair never
 * copies those back. Kept until pruned; counted, so a node that keeps none looks nothing up.
 */
import type { Database, RootDatabase } from 'lmdb';
import type { GatheredWrites } from './gathered-writes.js';
import { type DeletedEntry, type IdWatcher, mergeRange, type StagedMap } from './overlay.js';

export class DeleteRecords {
  private readonly db: Database<DeletedEntry, Buffer>;
  private count: number;

  constructor(
    root: RootDatabase,
    /** The overlay's delete slots: deletes staged by records whose transaction has not committed. */
    private readonly staged: StagedMap<DeletedEntry>,
  ) {
    this.db = root.openDB<DeletedEntry, Buffer>({ name: 'deleted', keyEncoding: 'binary' });
    this.count = this.db.getCount();
  }

  /** When a user deleted the blob here, if one did. */
  deletedAt(id: Buffer): number | undefined {
    return this.entryOf(id)?.atMs;
  }

  /** Forgets deletes older than `beforeMs` (repair may bring those blobs back); how many went. */
  async prune(beforeMs: number, left?: IdWatcher): Promise<number> {
    const old: { id: Buffer; policy: number }[] = [];
    for (const { key, value } of this.db.getRange()) if (value.atMs < beforeMs) old.push({ id: Buffer.from(key), policy: value.policy });
    const removed = await Promise.all(old.map(({ id }) => this.db.remove(id)));
    this.count -= removed.filter(Boolean).length;
    // What reads see changed only where no staged record says otherwise.
    old.forEach(({ id, policy }, i) => {
      if (removed[i] && !this.staged.lookup(id)) left?.('deleted', id, policy, undefined);
    });
    return old.length;
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
