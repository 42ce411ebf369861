/**
 * The replication queue (`replq`): an entry per blob this node took from a client whose copies
 * are not all on the owners yet, written in the same transaction as the blob's record. The
 * replicator's changes to it (owners that confirmed, entries done) ride along in the next index
 * transaction instead of one of their own: a lost change only repeats a copy (the owner answers
 * that it has it), and a transaction of their own cost each replication pass an LMDB commit and
 * flush, as many as the stores' own on the REPLICA3 bench.
 */
import type { Database, RootDatabase } from 'lmdb';
import type { BlobQueue } from './blob-queue.js';
import type { GatheredWrites } from './gathered-writes.js';
import { mergeRange, type QueueEntry, type StagedMap } from './overlay.js';

/** The queue's operations outside the index transaction (the replicator's view of it). */
export interface ReplicationQueue extends BlobQueue<QueueEntry> {
  update(id: Buffer, entry: QueueEntry): Promise<unknown>;
}

/**
 * How long the replicator's queue changes wait for an index transaction to ride along in (a busy
 * node commits every few ms) before they get one of their own.
 */
const QUEUE_WRITE_DELAY_MS = 50;

const NOTHING_TAKEN: ChangesSettled = () => undefined;

/** An entry to put, or null to remove it. */
interface Change {
  id: Buffer;
  entry: QueueEntry | null;
}

/** Tells the queue how the commit that took its changes ended (false: they were not written, and are taken again). */
export type ChangesSettled = (committed: boolean) => void;

export class ReplicationQueueStore implements ReplicationQueue {
  private readonly db: Database<QueueEntry, Buffer>;
  /** Entries as reads see them (staged ones included; counted at open, kept up to date). */
  private count: number;
  /**
   * Changes not yet written, by id (hex): an entry to put, or null to remove it. Reads of the
   * queue see them at once; the next commit writes them, or a transaction of their own once
   * QUEUE_WRITE_DELAY_MS passed without one.
   */
  private readonly changes = new Map<string, Change>();
  /**
   * Changes a commit took (writeChanges) that it has not committed yet, oldest first: until it
   * has, LMDB still reads as before them, so reads see them here. Without them a second removal
   * of an entry whose first was on its way counted the entry out twice (the depth gauge read -4).
   */
  private readonly writing: Map<string, Change>[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly root: RootDatabase,
    /** The overlay's queue slots: entries staged by records whose transaction has not committed. */
    private readonly staged: StagedMap<QueueEntry>,
  ) {
    this.db = root.openDB<QueueEntry, Buffer>({ name: 'replq', keyEncoding: 'binary' });
    this.count = this.db.getCount();
  }

  get depth(): number {
    return this.count;
  }

  /** The oldest-first page of the replication queue is not kept in order: entries by id, from `after`. */
  page(limit: number, after?: Buffer): { id: Buffer; entry: QueueEntry }[] {
    const out: { id: Buffer; entry: QueueEntry }[] = [];
    // Removals not yet written are skipped, so a page may come short while there are more: read on.
    mergeRange(this.db.getRange({ start: after }), this.staged, after,
      (key, value) => {
        if (after && key.equals(after)) return true;
        if (out.length === limit) return false;
        const change = this.pending(key.toString('hex'));
        if (change?.entry !== null) out.push({ id: Buffer.from(key), entry: change?.entry ?? value });
        return true;
      },
      (key, entry) => {
        if (after && key.equals(after)) return true;
        if (out.length === limit) return false;
        out.push({ id: key, entry });
        return true;
      });
    return out;
  }

  get(id: Buffer): QueueEntry | undefined {
    // A staged entry is kept up to date by the replicator's changes (they also go to `changes` once written).
    const slot = this.staged.lookup(id);
    if (slot) return slot.value ?? undefined;
    const change = this.pending(id.toString('hex'));
    if (change) return change.entry ?? undefined;
    return this.db.get(id);
  }

  /** The newest change of the entry not yet in LMDB: not yet taken by a commit, or taken by one still under way. */
  private pending(key: string): Change | undefined {
    const change = this.changes.size === 0 ? undefined : this.changes.get(key);
    if (change) return change;
    for (let i = this.writing.length - 1; i >= 0; i--) {
      const taken = this.writing[i]!.get(key);
      if (taken) return taken;
    }
    return undefined;
  }

  /** Whether `id`, staged nowhere, has an entry (a pending change, else LMDB; get() without decoding it). */
  private hasUnstaged(id: Buffer): boolean {
    const change = this.pending(id.toString('hex'));
    if (change) return change.entry !== null;
    return this.db.doesExist(id);
  }

  /** Records owners that confirmed a copy (written with the next index transaction). */
  update(id: Buffer, entry: QueueEntry): Promise<void> {
    const slot = this.staged.lookup(id);
    if (slot) {
      if (slot.value === null) return Promise.resolve();
      slot.value = entry;
      // Not written yet: the record's transaction writes the entry as it is then.
      if (!slot.written) return Promise.resolve();
    }
    const key = id.toString('hex');
    if (this.pending(key)?.entry !== null) this.changes.set(key, { id: Buffer.from(id), entry });
    this.scheduleWrite();
    return Promise.resolve();
  }

  /** Every owner has the blob: the entry goes (written with the next index transaction). */
  remove(id: Buffer): Promise<void> {
    const slot = this.staged.lookup(id);
    if (slot) {
      if (slot.value === null) return Promise.resolve();
      slot.value = null;
      this.count--;
      if (!slot.written) return Promise.resolve();
    }
    const key = id.toString('hex');
    if (!slot) {
      if (!this.hasUnstaged(id)) return Promise.resolve();
      this.count--;
    }
    this.changes.set(key, { id: Buffer.from(id), entry: null });
    this.scheduleWrite();
    return Promise.resolve();
  }

  /** A record stages the blob's entry (its copies are queued for the owners). */
  stage(id: Buffer, queuedAtMs: number, lsn: number): void {
    const before = this.staged.lookup(id);
    const held = before ? before.value !== null : this.hasUnstaged(id);
    if (!held) this.count++;
    const slot = this.staged.set(id, { queuedAtMs, done: [] }, lsn);
    // Nothing of it in LMDB (a pending removal is written first in the next commit anyway).
    if (before === undefined && !held) slot.absent = true;
  }

  /**
   * Queues the blob's copies for the owners in the commit under way (after the pending changes,
   * so it wins): inside the write transaction, or gathered for its batch (`gathered`). An entry
   * staged before was counted then, and the replicator may have changed it since: that goes in.
   */
  enqueue(id: Buffer, queuedAtMs: number, gathered?: GatheredWrites): void {
    const slot = this.staged.lookup(id);
    if (slot) {
      slot.written = true;
      if (slot.value) this.put(id, slot.value, gathered);
      else if (!slot.absent) this.drop(id, gathered);
      return;
    }
    if (!this.hasUnstaged(id)) this.count++;
    this.put(id, { queuedAtMs, done: [] }, gathered);
  }

  /**
   * The pending changes: inside a write transaction, or gathered for a commit's batch
   * (`gathered`). They come first in a commit and touch distinct ids, so what they read is what
   * LMDB held before the commit either way. Reads see them until the commit tells how it ended.
   */
  writeChanges(gathered?: GatheredWrites): ChangesSettled {
    if (this.changes.size === 0) return NOTHING_TAKEN;
    const taken = new Map(this.changes);
    this.changes.clear();
    for (const { id, entry } of taken.values()) {
      if (entry === null) this.drop(id, gathered);
      else if (this.db.doesExist(id)) this.put(id, entry, gathered);
    }
    this.writing.push(taken);
    return (committed) => {
      const at = this.writing.indexOf(taken);
      if (at < 0) return;
      this.writing.splice(at, 1);
      if (committed) return;
      // Not written: each change is pending again, unless a newer one replaced it meanwhile.
      for (const [key, change] of taken) if (!this.changes.has(key)) this.changes.set(key, change);
      this.scheduleWrite();
    };
  }

  /** Writes what changed since the last commit, in a transaction of its own. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    if (this.changes.size > 0) await this.writeOwn();
  }

  /** The pending changes in a transaction of their own. */
  private async writeOwn(): Promise<void> {
    let settled: ChangesSettled = NOTHING_TAKEN;
    try {
      await this.root.transaction(() => {
        settled = this.writeChanges();
      });
    } catch (err) {
      settled(false);
      throw err;
    }
    settled(true);
  }

  private put(id: Buffer, entry: QueueEntry, gathered: GatheredWrites | undefined): void {
    if (gathered) gathered.put(this.db, id, entry);
    else this.db.putSync(id, entry);
  }

  private drop(id: Buffer, gathered: GatheredWrites | undefined): void {
    if (gathered) gathered.remove(this.db, id);
    else this.db.removeSync(id);
  }

  private scheduleWrite(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A failed write leaves the changes pending (writeChanges' settle) for the next commit.
      if (this.changes.size > 0) this.writeOwn().catch(() => undefined);
    }, QUEUE_WRITE_DELAY_MS);
    this.timer.unref();
  }
}
