/**
 * Columns of one EC store that hold the others back (docs/erasure-coding.md, Store). The columns
 * of a store advance together: a row's cells go once every column took the last ones, the client's
 * body is read only as fast as the slowest column takes it, and the answer waits for every holder.
 * A holder that hangs (a stopped process, a host that went quiet; its sockets stay open) therefore
 * stops every column, and the healthy holders, getting nothing, close their requests (uWS closes a
 * body quiet for 10 s; a holder drops a column quiet past its idle timeout): one hung holder failed
 * five columns. So a column that has held the others back for `lagMs` counts as failed, as a dead
 * holder's does, while the store can afford it (at most m failed in all): the others go on. While
 * more columns lag than the store can lose, none is failed for lagging: they are all waited for (a
 * slow cluster, not one hung holder), each up to its own deadline (ecStoreTimeoutMs).
 *
 *   column waits ──▶ behind(c) ── lagMs without progress ──▶ lagging ──▶ lagging ≤ spare(): failed
 *   column takes its bytes / answers ──▶ caughtUp(c)
 */

/** A column failed for holding the others back: its holder took nothing and did not answer for lagMs. */
export class ColumnLagError extends Error {
  constructor(node: string, lagMs: number) {
    super(`${node}: held the other columns back for ${lagMs} ms (took nothing, answered nothing)`);
    this.name = 'ColumnLagError';
  }
}

/** A column of a store: its holder's node, and the peer (undefined: this node). */
interface Column {
  readonly node: string;
  readonly peer: unknown;
}

export class ColumnLag<C extends Column> {
  private readonly timers = new Map<C, NodeJS.Timeout>();
  private readonly lagging = new Set<C>();

  constructor(
    private readonly lagMs: number,
    /** How many more columns the store can lose (m less those failed already). */
    private readonly spare: () => number,
    /** Column `c` lagged and the store can lose it: fail it (its sink aborted, its bytes released). */
    private readonly lagged: (c: C, err: ColumnLagError) => void,
  ) {}

  /**
   * Column `c` holds bytes or an answer the store waits for; from now on it is timed, unless it is
   * already. This node's own column is never timed: it is not hung while this runs, and its write
   * may still be reading the buffers a failure would hand back.
   */
  behind(c: C): void {
    if (c.peer === undefined || this.timers.has(c) || this.lagging.has(c)) return;
    const timer = setTimeout(() => {
      this.timers.delete(c);
      this.lagging.add(c);
      this.judge();
    }, this.lagMs);
    timer.unref();
    this.timers.set(c, timer);
  }

  /** Column `c` made progress (took its bytes, answered) or failed: no longer timed. */
  caughtUp(c: C): void {
    clearTimeout(this.timers.get(c));
    this.timers.delete(c);
    // One lagging column fewer may leave the rest few enough to lose.
    if (this.lagging.delete(c)) this.judge();
  }

  /**
   * Waits for every column's `steps` (the answers after their last bytes): once those still to
   * settle are few enough to lose, they get `lagMs` more, then count as failed. Resolves once each
   * settled or was failed so; a lagging column's step is not waited for (a batch POST it shares
   * with other stores' columns goes on until its own deadline).
   */
  settle(steps: ReadonlyMap<C, Promise<unknown>>): Promise<void> {
    const pending = new Set(steps.keys());
    return new Promise<void>((resolve) => {
      const check = (): void => {
        for (const c of pending) if (this.failedHere.has(c)) pending.delete(c);
        if (pending.size === 0) return resolve();
        if (pending.size > this.spare()) return;
        for (const c of pending) this.behind(c);
        // Some may have lagged already (while too many others did): judged again now.
        this.judge();
      };
      this.onFail = check;
      for (const [c, step] of steps) {
        void step.finally(() => {
          pending.delete(c);
          this.caughtUp(c);
          check();
        }).catch(() => undefined);
      }
      check();
    }).finally(() => (this.onFail = undefined));
  }

  /** Stops every timer (the store is over). */
  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.lagging.clear();
  }

  /** Columns failed for lagging (settle stops waiting for them). */
  private readonly failedHere = new Set<C>();
  private onFail: (() => void) | undefined;

  /** The lagging columns fail together, or, while the store cannot lose them all, none does. */
  private judge(): void {
    if (this.lagging.size === 0 || this.lagging.size > this.spare()) return;
    const failing = [...this.lagging];
    this.lagging.clear();
    for (const c of failing) {
      this.failedHere.add(c);
      this.lagged(c, new ColumnLagError(c.node, this.lagMs));
    }
    this.onFail?.();
  }
}
