/**
 * What a node remembers of its users' deletes, and for how long (setting deleteRetentionMs): a
 * delete holds against copies of the blob made before it (src/cluster/deleted-here.ts), so that a
 * replica on its way, a repair or a handoff does not bring it back.
 *
 *   a delete of a blob held here ──▶ the index's record (durable), forgotten once older than the retention
 *   a delete of a blob not held here (yet) ──▶ a mark in memory, at most unheldDeleteMarks of them
 *                                            (the oldest go first), none after a restart
 *
 * The second is for a copy that reaches the node after the delete: a client that deletes a blob on
 * every node just after storing it (the spec's way to delete it everywhere) reaches owners the
 * store's copies have not reached yet, which would otherwise take those copies afterwards.
 */
import type { BlobIndex } from '../index/blob-index.js';
import type { Logger } from '../log/logger.js';
import { TtlCache } from '../util/ttl-cache.js';

/** Records older than the retention are looked for this often at most (reading only those, by time). */
const PRUNE_EVERY_MS = 10 * 60_000;
/** And at least this far apart, whatever the retention. */
const PRUNE_MIN_MS = 1_000;

export interface DeleteMemoryOptions {
  retentionMs: number;
  unheldMarks: number;
}

export class DeleteMemory {
  private readonly unheld: TtlCache<number>;
  private readonly timer: NodeJS.Timeout;
  private pruning: Promise<number> | undefined;

  constructor(
    private readonly index: Pick<BlobIndex, 'deletedAt' | 'pruneDeleted'>,
    private readonly options: DeleteMemoryOptions,
    private readonly log: Logger,
  ) {
    this.unheld = new TtlCache(Math.max(options.unheldMarks, 1), options.retentionMs);
    const every = Math.max(PRUNE_MIN_MS, Math.min(PRUNE_EVERY_MS, options.retentionMs));
    this.timer = setInterval(() => void this.prune().catch((err: Error) => this.log.error({ err }, `forgetting old deletes: ${err.message}`)), every);
    this.timer.unref();
  }

  /** When a user deleted the blob here (Unix ms), while that is remembered. */
  deletedAt(id: Buffer): number | undefined {
    const recorded = this.index.deletedAt(id);
    if (recorded !== undefined || this.unheld.size === 0) return recorded;
    return this.unheld.get(id.toString('latin1'));
  }

  /** A user deleted a blob this node holds nothing of: remembered in memory. */
  markUnheld(id: Buffer, atMs = Date.now()): void {
    if (this.options.unheldMarks > 0) this.unheld.set(id.toString('latin1'), atMs);
  }

  /** Forgets the index's records of deletes older than the retention; how many went. */
  prune(nowMs = Date.now()): Promise<number> {
    this.pruning ??= this.index.pruneDeleted(nowMs - this.options.retentionMs).finally(() => (this.pruning = undefined));
    return this.pruning;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
