/**
 * Per-key exponential back-off for work that is retried in passes (a replica that did not reach
 * a peer, an EC column that could not be rebuilt, a background pass that threw): the first retry after `firstMs`, doubling per
 * failure up to `maxMs`, each delay jittered by ±20% so that keys that failed together do not
 * come back together.
 */
export class Backoffs {
  private readonly entries = new Map<string, { untilMs: number; failures: number }>();

  constructor(
    private readonly firstMs: number,
    private readonly maxMs: number,
  ) {}

  /** Keys waiting out a delay (0: every key is due, and clear() has nothing to do). */
  get size(): number {
    return this.entries.size;
  }

  /** Whether `key` may be tried at `nowMs` (it never failed, or its delay is over). */
  due(key: string, nowMs = Date.now()): boolean {
    return this.waitMs(key, nowMs) === 0;
  }

  /** How long `key` must still wait at `nowMs` (0: it is due). */
  waitMs(key: string, nowMs = Date.now()): number {
    return Math.max(0, (this.entries.get(key)?.untilMs ?? 0) - nowMs);
  }

  /** `key` failed once more at `nowMs`: its next try waits. */
  failed(key: string, nowMs = Date.now()): void {
    const failures = (this.entries.get(key)?.failures ?? 0) + 1;
    const delay = Math.min(this.maxMs, this.firstMs * 2 ** (failures - 1)) * (0.8 + Math.random() * 0.4);
    this.entries.set(key, { untilMs: nowMs + delay, failures });
  }

  /** `key` succeeded (or is gone): forgotten. */
  clear(key: string): void {
    this.entries.delete(key);
  }
}
