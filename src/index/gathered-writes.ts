/**
 * The writes of an index commit whose records only add keys (BlobIndex.commit, `addsOnly`),
 * gathered in order and then handed to lmdb-js as plain asynchronous puts and removes inside one
 * `batch`: one transaction, run by lmdb-js's write thread. A transaction callback runs its B-tree
 * work on the event loop instead: ~5.9 us of main-thread time per 4 KiB PUT's record against
 * ~1.6 us queued (docs/adr/0012-hot-path.md). Such a commit reads nothing it wrote, which is what
 * lets the writes wait until the end.
 */
import type { Database, Key, RootDatabase } from 'lmdb';

export class GatheredWrites {
  private readonly dbs: Database<unknown, Key>[] = [];
  private readonly keys: Key[] = [];
  /** The value to put, or undefined to remove the key. */
  private readonly values: unknown[] = [];
  private count = 0;

  constructor(private readonly root: RootDatabase) {}

  put<K extends Key, V>(db: Database<V, K>, key: K, value: V): void {
    this.add(db as Database<unknown, Key>, key, value);
  }

  remove<K extends Key, V>(db: Database<V, K>, key: K): void {
    this.add(db as Database<unknown, Key>, key, undefined);
  }

  private add(db: Database<unknown, Key>, key: Key, value: unknown): void {
    this.dbs[this.count] = db;
    this.keys[this.count] = key;
    this.values[this.count] = value;
    this.count++;
  }

  /** Drops what was gathered (a commit that failed before queueing). */
  clear(): void {
    this.dbs.length = this.keys.length = this.values.length = this.count = 0;
  }

  /**
   * Queues every gathered write, then `more` (writes of its own, inside the same batch), as one
   * transaction; resolves once it has committed. lmdb-js copies keys and encodes values as they
   * are queued, so the arrays are free again at once; a value Buffer must not change afterwards.
   */
  queue(more: () => void): Promise<unknown> {
    try {
      return this.root.batch(() => {
        for (let i = 0; i < this.count; i++) {
          const value = this.values[i];
          if (value === undefined) void this.dbs[i]!.remove(this.keys[i]);
          else void this.dbs[i]!.put(this.keys[i], value);
        }
        more();
      });
    } finally {
      this.clear();
    }
  }
}
