/**
 * The index journal: the blob records keyspace kept as a two-level log-structured index. Blob ids
 * are uniform hashes, so each new record put straight into the `blobs` B-tree dirties a leaf page
 * of its own: LMDB wrote and synced ~2 pages (8 KiB) for every 4 KiB store. Instead, each index
 * commit writes the blob records it changes as one journal record (one LMDB value, appended in
 * log order), keeps them in memory (id-table.ts), and every `mergeRecords` changes they are
 * merged into `blobs` in id order, a slice of the id space per transaction, on a thread of its
 * own (merge-worker.ts), so that a leaf page takes many records at once.
 *
 *   commit k:  changes ──▶ journal[k] = [change...]   (same transaction as the checkpoint)
 *              once committed ──▶ active table: id ─▶ latest record or removal
 *   merge:     active table frozen (a copy of its arrays goes to the merge thread), a spare one
 *              becomes active ──▶ sorted, slice by slice into blobs ──▶ flushed ──▶
 *              journal[<= frozen's last LSN] removed, the frozen table emptied: the next spare
 *   reads:     staged overlay ─▶ active ─▶ frozen ─▶ blobs          start: journal ─▶ active
 *
 * A crash at any point leaves the journal records of every commit not yet merged, and a merge
 * writes what the journal says, so replaying the journal over `blobs` at start always ends in the
 * same state. The journal records' layout is in journal-record.ts.
 */
import { Worker } from 'node:worker_threads';
import type { Database } from 'lmdb';
import { compiledPath } from '../util/repo-root.js';
import { type IndexEntry, encodeEntryInto, entryBytes } from './entry.js';
import { IdTable } from './id-table.js';
import { CHANGE_HEAD_BYTES, forEachChange, forEachChangeAt, writeChangeHead } from './journal-record.js';
import type { MergeAnswer, MergeRequest } from './merge-worker.js';

/** Merges' worth of changes held (merges failing) past which a commit first waits for a merge (relieve). */
export const BACKLOG_MERGES = 4;

/**
 * Records merged per transaction (a slice of the id space, in id order): the node's own commits
 * wait for LMDB's writer lock while one runs, so a slice is kept to a few milliseconds.
 */
const MERGE_SLICE_RECORDS = 1024;
/**
 * The merge thread waits this long between slices: without it the node's commits could wait out
 * whole runs of slices for the writer lock, and the log stops taking records once indexLagBatches
 * batches wait for their commit (the bench's PUT p99 was 63-77 ms in three runs of four; with the
 * wait 5.0 and 5.3 ms in two). ~0.26 s more per merge of 262,144 changes (~1 s of slices).
 */
const MERGE_SLICE_PAUSE_MS = 1;

export class BlobJournal {
  /** Changes committed since the last merge began. */
  private active: IdTable;
  /** Changes being merged (reads still find them here until the merge is done). */
  private frozen: IdTable | undefined;
  /** An emptied table, the next to become active. */
  private spare: IdTable | undefined;
  /** The current commit's changes, packed as a journal record. */
  private pending = Buffer.allocUnsafeSlow(64 * 1024);
  private pendingUsed = 0;
  /** The LSN the current commit's changes carry (its last record's). */
  private lsn = 0;
  /** The last LSN whose changes are in a table (the latest committed journal record's). */
  private lastLsn = 0;
  /**
   * The current commit's changes by id, for a commit that reads its own writes (BlobIndex's
   * `direct` writer); a failed commit leaves the tables as they were.
   */
  private local: Map<string, Buffer | null> | undefined;
  /** Keys of the journal records written and not merged yet, in order. */
  private readonly keys: number[] = [];
  private merging: Promise<void> | undefined;
  /** The merge thread (merge-worker.ts), started at the first merge, and the answer it owes. */
  private worker: Worker | undefined;
  private answer: ((a: MergeAnswer) => void) | undefined;

  constructor(
    /** The index's LMDB environment (the merge thread opens it too). */
    private readonly path: string,
    private readonly db: Database<Buffer, number>,
    /** Changes held before a merge starts (setting indexMergeRecords). */
    private readonly mergeRecords: number,
    private readonly onMergeError: (err: Error) => void,
  ) {
    this.active = this.newTable();
    for (const { key, value } of db.getRange()) {
      this.keys.push(key);
      this.lastLsn = key;
      forEachChange(value, (id, record) => this.active.set(id, record, key));
    }
  }

  /** Room for two merges' worth of changes (one merging while the next comes): no growth in steady state. */
  private newTable(): IdTable {
    return new IdTable(2 * Math.min(this.mergeRecords, 1 << 20));
  }

  /** The committed record of `id` not merged yet (valid until the next get or commit: id-table.ts), null when removed, undefined when not here. */
  get(id: Uint8Array): Buffer | null | undefined {
    const recent = this.active.get(id);
    if (recent !== undefined || this.frozen === undefined) return recent;
    return this.frozen.get(id);
  }

  /** Visits the id of every change held (`ids` from `at`; both tables, an id in both twice), in no order, with no views. */
  forEachIdAt(visit: (ids: Buffer, at: number) => void): void {
    this.active.forEachIdAt(visit);
    this.frozen?.forEachIdAt(visit);
  }

  /** Changes held (both tables; an id in both counts twice). */
  get size(): number {
    return this.active.size + (this.frozen?.size ?? 0);
  }

  /**
   * The ids held from `start` (inclusive) in byte order with their records (null: removed), the
   * active table's over the frozen one's. Each step's views are valid until the next commit.
   */
  *from(start: Uint8Array | undefined): Generator<{ id: Buffer; record: Buffer | null }> {
    if (this.frozen === undefined || this.frozen.size === 0) {
      yield* this.active.from(start);
      return;
    }
    const older = this.frozen.from(start);
    let o = older.next();
    for (const e of this.active.from(start)) {
      for (; !o.done && Buffer.compare(o.value.id, e.id) < 0; o = older.next()) yield o.value;
      if (!o.done && o.value.id.equals(e.id)) o = older.next();
      yield e;
    }
    for (; !o.done; o = older.next()) yield o.value;
  }

  /**
   * Starts collecting the changes of a commit whose records end at `lsn`; `reads`: the commit
   * reads its own writes (pendingGet).
   */
  begin(lsn: number, reads: boolean): void {
    this.lsn = lsn;
    this.pendingUsed = 0;
    this.local = reads ? new Map() : undefined;
  }

  put(id: Buffer, entry: IndexEntry): void {
    const length = entryBytes(entry);
    const at = this.reserve(id, 1, length);
    encodeEntryInto(this.pending, at, entry);
    this.local?.set(id.toString('latin1'), Buffer.from(this.pending.subarray(at, at + length)));
  }

  remove(id: Buffer): void {
    this.reserve(id, 0, 0);
    this.local?.set(id.toString('latin1'), null);
  }

  /** What the current commit wrote for `id` so far: its record, null when removed, undefined when untouched. */
  pendingGet(id: Buffer): Buffer | null | undefined {
    return this.local?.get(id.toString('latin1'));
  }

  /** The current commit's journal record (its key is the commit's LSN), or undefined when it changed nothing here. */
  take(): { key: number; value: Buffer } | undefined {
    this.local = undefined;
    if (this.pendingUsed === 0) return undefined;
    const value = Buffer.from(this.pending.subarray(0, this.pendingUsed));
    this.pendingUsed = 0;
    return { key: this.lsn, value };
  }

  /** The commit failed: what it wrote is forgotten. */
  abort(): void {
    this.local = undefined;
    this.pendingUsed = 0;
  }

  /**
   * The journal record (from take) is committed: its changes go into the active table, and a
   * merge starts once enough changes are held.
   */
  committed(record: { key: number; value: Buffer }): void {
    this.keys.push(record.key);
    this.lastLsn = record.key;
    forEachChangeAt(record.value, this.applyChange, record.key);
    if (this.merging === undefined && this.active.size >= this.mergeRecords) {
      this.merging = this.merge().catch(this.onMergeError).finally(() => (this.merging = undefined));
    }
  }

  /** The tables hold BACKLOG_MERGES merges' worth of changes: the next commit waits (relieve). */
  get backlogged(): boolean {
    return this.size >= BACKLOG_MERGES * this.mergeRecords;
  }

  /**
   * Before a commit: while the tables hold BACKLOG_MERGES merges' worth of changes (merges have
   * kept failing: each is retried at the next commit, and a failed one puts its changes back),
   * waits for a merge, running one if none is under way; its failure is the commit's. So the
   * tables stay bounded and the node stops taking writes (the log fails) rather than grow its
   * memory with every store while the index cannot merge.
   */
  async relieve(): Promise<void> {
    while (this.backlogged) {
      if (this.merging !== undefined) {
        await this.merging;
        continue;
      }
      const merge = this.merge();
      this.merging = merge.catch(this.onMergeError).finally(() => (this.merging = undefined));
      await merge;
    }
  }

  /**
   * Merges every change committed so far into `blobs` (on the merge thread): the active table is
   * frozen and its arrays handed over where they are (shared memory), so the event loop pays no
   * pass over the records and no copy; new commits go to a fresh table meanwhile, and until the
   * merge is done reads find its changes in the frozen one, which nothing changes until then.
   */
  async merge(): Promise<void> {
    if (this.active.size === 0) return;
    const frozen = this.active;
    const lsn = this.lastLsn;
    this.frozen = frozen;
    this.active = this.spare ?? this.newTable();
    this.spare = undefined;
    try {
      const slots = frozen.exportSlots();
      const request: MergeRequest = { ...slots, sliceRecords: MERGE_SLICE_RECORDS, slicePauseMs: MERGE_SLICE_PAUSE_MS };
      const worker = this.mergeThread();
      // Held while an answer is owed: awaiting the merge (close) must keep the process alive.
      worker.ref();
      const answer = await new Promise<MergeAnswer>((resolve) => {
        this.answer = resolve;
        worker.postMessage(request);
      }).finally(() => worker.unref());
      if ('error' in answer) throw new Error(`index journal merge: ${answer.error}`);
      // The merged changes are flushed: the journal records that held them may go (a crash before
      // that commits only replays them over what they already say).
      let merged = 0;
      while (merged < this.keys.length && this.keys[merged]! <= lsn) merged++;
      // Forgotten only once removed: a failed removal leaves them for the next merge to remove,
      // or a record older than a later change of its id would come back at the next start.
      await Promise.all(this.keys.slice(0, merged).map((key) => this.db.remove(key)));
      this.keys.splice(0, merged);
      this.frozen = undefined;
      frozen.clear();
      this.spare = frozen;
    } catch (err) {
      // The frozen changes go back under the ones committed since (the latest of each id wins).
      const newer = this.active;
      this.active = frozen;
      this.frozen = undefined;
      newer.forEachUnordered((id, record, changedAt) => frozen.set(id, record, changedAt));
      throw err;
    }
  }

  private mergeThread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(compiledPath('index', 'merge-worker.js'), { workerData: { path: this.path } });
    worker.on('message', (a: MergeAnswer) => this.settle(a));
    worker.on('error', (err) => this.settle({ error: err.stack ?? String(err) }));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      this.settle({ error: 'the merge thread exited' });
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settle(a: MergeAnswer): void {
    const answer = this.answer;
    this.answer = undefined;
    answer?.(a);
  }

  /** Resolves once a merge under way is done. */
  async settled(): Promise<void> {
    await this.merging;
  }

  /** Waits for a merge under way, then stops the merge thread. */
  async close(): Promise<void> {
    await this.merging;
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  /** Journal records not merged yet (tests, metrics). */
  get records(): number {
    return this.keys.length;
  }

  /** A committed change into the active table (forEachChangeAt's visitor: one function, no views). */
  private readonly applyChange = (src: Buffer, idAt: number, recordAt: number, length: number, lsn: number): void => {
    this.active.setFrom(src, idAt, recordAt, length, lsn);
  };

  /** Room for a change in the pending record; returns where its record goes. */
  private reserve(id: Buffer, kind: number, length: number): number {
    const need = CHANGE_HEAD_BYTES + length;
    if (this.pendingUsed + need > this.pending.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(this.pending.length * 2, this.pendingUsed + need));
      this.pending.copy(grown, 0, 0, this.pendingUsed);
      this.pending = grown;
    }
    const at = this.pendingUsed;
    writeChangeHead(this.pending, at, kind, id, length);
    this.pendingUsed += need;
    return at + CHANGE_HEAD_BYTES;
  }
}
