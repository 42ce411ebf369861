/**
 * What a node remembers of its users' deletes, and for how long (setting deleteRetentionMs): a
 * delete holds against copies of the blob made before it (src/cluster/deleted-here.ts), so that a
 * replica on its way, a repair or a handoff does not bring it back.
 *
 *   a delete of a blob held here ──▶ the index's record (durable), forgotten once older than the retention
 *   a delete of a blob not held here (yet) ──▶ the index's `unheld` table (durable before the delete
 *                                            answers), at most unheldDeleteMarks of them (the oldest
 *                                            go first), forgotten once older than the retention
 *
 * The second is for a copy that reaches the node after the delete: a client that deletes a blob on
 * every node just after storing it (the spec's way to delete it everywhere) reaches owners the
 * store's copies have not reached yet, which would otherwise take those copies afterwards.
 */
import type { BlobIndex } from '../index/blob-index.js';
import type { Logger } from '../log/logger.js';

/** Records older than the retention are looked for this often at most (reading only those, by time). */
const PRUNE_EVERY_MS = 10 * 60_000;
/** And at least this far apart, whatever the retention. */
const PRUNE_MIN_MS = 1_000;

export interface DeleteMemoryOptions {
  retentionMs: number;
  unheldMarks: number;
}

export class DeleteMemory {
  private readonly timer: NodeJS.Timeout;
  private pruning: Promise<number> | undefined;

  constructor(
    private readonly index: Pick<BlobIndex, 'deletedAt' | 'pruneDeleted' | 'unheldDeletes'>,
    private readonly options: DeleteMemoryOptions,
    private readonly log: Logger,
  ) {
    const every = Math.max(PRUNE_MIN_MS, Math.min(PRUNE_EVERY_MS, options.retentionMs));
    this.timer = setInterval(() => void this.pruneLogged(), every);
    this.timer.unref();
  }

  /** When a user deleted the blob here (Unix ms), while that is remembered. */
  deletedAt(id: Buffer, nowMs = Date.now()): number | undefined {
    const recorded = this.index.deletedAt(id);
    if (recorded !== undefined) return recorded;
    const unheld = this.index.unheldDeletes.at(id);
    return unheld !== undefined && nowMs - unheld < this.options.retentionMs ? unheld : undefined;
  }

  /** A user deleted a blob this node holds nothing of: remembered once this resolves (the oldest beyond the bound forgotten). */
  async markUnheld(id: Buffer, atMs = Date.now()): Promise<void> {
    if (this.options.unheldMarks === 0) return;
    const unheld = this.index.unheldDeletes;
    await unheld.add(id, atMs);
    if (unheld.count > this.options.unheldMarks) await this.pruneLogged();
  }

  /** Forgets the index's records of deletes older than the retention (and unheld marks beyond their bound); how many went. */
  prune(nowMs = Date.now()): Promise<number> {
    const before = nowMs - this.options.retentionMs;
    this.pruning ??= Promise.all([this.index.pruneDeleted(before), this.index.unheldDeletes.prune(before, this.options.unheldMarks)])
      .then(([held, unheld]) => held + unheld)
      .finally(() => (this.pruning = undefined));
    return this.pruning;
  }

  /** A prune whose failure is logged (the deletes stay until the next). */
  private async pruneLogged(): Promise<void> {
    await this.prune().catch((err: Error) => this.log.error({ err }, `forgetting old deletes: ${err.message}`));
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
