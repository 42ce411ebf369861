/**
 * The log's index committer: applies every staged batch at the head of the log, in log order, in
 * one LMDB transaction together with the checkpoint (the log position it covers), then the batches
 * leave the overlay. An index transaction costs ~0.66 ms here whatever its size (it waits for the
 * previous one's sync), so one per batch would cap the rate, while one per group of staged batches
 * lets it grow with the load; with durableAck=log it starts at most every `commitIntervalMs` (an
 * LMDB transaction's fixed cost grows with the free-page list of a grown index,
 * docs/adr/0012-hot-path.md). With durableAck=index the batches are acknowledged once their
 * transaction is flushed. Only one commit runs at a time. With durableAck=log a commit may first
 * wait a little for a hold (holdCommits): in a cluster, for the copies of its records to be sent,
 * so that a replication-queue entry confirmed meanwhile is never written nor removed in LMDB.
 */
import type { Checkpoint } from '../index/blob-index.js';
import type { IndexWriter } from '../index/overlay.js';
import type { Acks } from './acks.js';
import type { Batch, BatchPool } from './batch.js';
import type { DiskSpace } from './disk-space.js';
import type { LogHooks, LogRecord } from './log-record.js';

/**
 * Test hook: every index commit is held back this long (the tests kill a node whose acknowledged
 * records are in the overlay only). Never set in production.
 */
const TEST_COMMIT_DELAY_MS = Number(process.env.BLOBSTORE_TEST_INDEX_COMMIT_DELAY_MS ?? 0);

/** What the committer writes through (BlobIndex): read at each commit, so a test may hold it back. */
export interface CommitTarget {
  commit(checkpoint: Checkpoint, apply: (w: IndexWriter) => void, addsOnly?: boolean): Promise<void>;
  flushed(): Promise<unknown>;
}

/** What the committer needs of the log. */
export interface CommitSource {
  /** The oldest uncommitted batch is staged (or, once the log failed, done writing). */
  headDone(): boolean;
  /** Takes that batch out of the log's uncommitted ones. */
  takeHead(): Batch;
  failed(): Error | undefined;
  /** The log fails with `err` (the first failure stays). */
  fail(err: Error): void;
  /** A commit is done: sealed segments may close, and records wait no more for the index. */
  afterCommit(): void;
}

export interface CommitOptions {
  /** Acknowledge after the index flush (true) or once the record is fsynced and staged (false). */
  ackAfterIndexFlush: boolean;
  /** With durableAck=log, commits start at most this often; 0: back to back. */
  commitIntervalMs: number;
  /** The longest a commit waits for its hold (holdCommits); 0: commits are never held. */
  holdMaxMs: number;
}

/**
 * What a commit may wait for first (durableAck=log only): undefined, or a promise that settles
 * once what the group's records set in motion has caught up (their copies sent: a queue entry
 * the replicator removes before its record's commit is never written).
 */
export type CommitHold = () => Promise<void> | undefined;

const NOTHING = (): void => undefined;

export class IndexCommitter {
  /** A commit is under way. */
  committing = false;
  /** performance.now() when the last commit started (commitIntervalMs). */
  private commitStartMs = -Infinity;
  /** nextCommit() callers, woken after each commit. */
  private waiters: (() => void)[] = [];
  /** The records of the commit under way (one at a time: reused). */
  private readonly records: (LogRecord | undefined)[] = [];
  private count = 0;
  /** Set once (holdCommits): what each commit waits for first, at most holdMaxMs. */
  private hold: CommitHold | undefined;

  constructor(
    private readonly index: CommitTarget,
    private readonly source: CommitSource,
    private readonly hooks: Pick<LogHooks, 'apply' | 'addsOnly' | 'committed'>,
    private readonly acks: Acks,
    private readonly batches: BatchPool,
    private readonly space: Pick<DiskSpace, 'makeRoom'>,
    private readonly options: CommitOptions,
  ) {}

  /**
   * Commits every staged batch at the head of the log in one index transaction, and repeats while
   * more have been staged meanwhile. After a failure it answers the batches left with the error.
   */
  async run(): Promise<void> {
    if (this.committing) return;
    this.committing = true;
    try {
      while (this.source.headDone()) {
        // Acknowledged already (durableAck=log): the commit may wait, and take the batches staged meanwhile.
        const wait = this.options.ackAfterIndexFlush ? 0 : this.commitStartMs + this.options.commitIntervalMs - performance.now();
        if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait));
        this.commitStartMs = performance.now();
        const group: Batch[] = [];
        while (this.source.headDone()) group.push(this.source.takeHead());
        await this.held();
        await this.commitGroup(group);
        this.wake();
        this.source.afterCommit();
      }
    } finally {
      this.committing = false;
      this.wake();
    }
  }

  /** Every commit with durableAck=log waits for `hold` first, at most holdMaxMs (a group taken already: what is staged meanwhile waits for the next). */
  holdCommits(hold: CommitHold): void {
    if (!this.options.ackAfterIndexFlush && this.options.holdMaxMs > 0) this.hold = hold;
  }

  private async held(): Promise<void> {
    const hold = this.hold?.();
    if (hold === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.holdMaxMs)));
    // A hold that fails only ends the wait: the commit is what matters.
    await Promise.race([hold.catch(NOTHING), late]);
    clearTimeout(timer);
  }

  /** Resolves after the next commit (or once none runs). */
  nextCommit(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Wakes every nextCommit() caller. */
  wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Commits `checkpoint` with no records (a sealed segment's end), then goes on with what was staged. */
  async commitAlone(checkpoint: Checkpoint): Promise<void> {
    this.committing = true;
    try {
      await this.index.commit(checkpoint, NOTHING);
    } catch (err) {
      this.source.fail(err as Error);
    } finally {
      this.committing = false;
    }
    void this.run();
  }

  private async commitGroup(group: readonly Batch[]): Promise<void> {
    const failed = this.source.failed();
    if (failed) return this.acks.rejectUnanswered(group, failed);
    // The group's records, in log order, in the reused array (commits run one at a time).
    const records = this.records;
    let n = 0;
    let addsOnly = true;
    for (const b of group) {
      for (let i = 0; i < b.count; i++) {
        const r = b.record(i);
        records[n++] = r;
        if (addsOnly && !this.hooks.addsOnly(r)) addsOnly = false;
      }
    }
    this.count = n;
    const last = group[group.length - 1]!;
    const checkpoint: Checkpoint = { segment: last.segment!.id, offset: last.endOffset, nextLsn: last.nextLsn };
    try {
      for (const b of group) if (b.waits.length > 0) await Promise.all(b.waits);
      if (TEST_COMMIT_DELAY_MS > 0) await new Promise((resolve) => setTimeout(resolve, TEST_COMMIT_DELAY_MS));
      // An index commit needs free pages: on a disk someone else filled, the ballast goes first.
      await this.space.makeRoom();
      await this.index.commit(checkpoint, this.apply, addsOnly);
    } catch (err) {
      this.source.fail(err as Error);
      return this.acks.rejectUnanswered(group, err as Error);
    } finally {
      for (let i = 0; i < n; i++) records[i] = undefined;
    }
    for (const b of group) {
      for (let i = 0; i < b.count; i++) this.hooks.committed(b.record(i));
      b.committed = true;
      if (b.acked) this.batches.recycle(b);
    }
    // durableAck=log: answered when staged; the fsynced records are replayed past the last flushed checkpoint.
    if (!this.options.ackAfterIndexFlush) return;
    this.index.flushed().then(
      () => {
        for (const b of group) this.acks.answer(b);
      },
      (err: Error) => {
        this.source.fail(err);
        this.acks.rejectUnanswered(group, err);
      },
    );
  }

  /** The commit's writes: each record of the group applied in log order (one function for every commit). */
  private readonly apply = (w: IndexWriter): void => {
    const records = this.records;
    for (let i = 0; i < this.count; i++) this.hooks.apply(records[i]!, w);
  };
}
