/**
 * Operations on one blob id run one after another (a put racing a delete of the same bytes sees a
 * consistent order); different ids never wait for each other. Keyed by the id's first 6 bytes as
 * a number (no string per store): two ids that share them only wait for each other.
 *
 * Two ways to hold a lock: run(fn), which chains promises, and hold()/unhold(), which costs no
 * promise or closure (the small store's fast path, Engine.putSmall, takes its id's lock only when
 * it is free and gives it back once its record is durable). A run() that arrives while a lock is
 * held waits for unhold().
 */

/** The lock is held by hold(), not by a chain of run() calls. */
const HELD = Symbol('held');

export class IdLocks {
  /** The tail of each busy id's chain, or HELD. */
  private readonly tails = new Map<number, Promise<unknown> | typeof HELD>();
  /** Wakes the run() that waits for a held lock (one at most: later ones chain on its tail). */
  private readonly waiters = new Map<number, () => void>();

  /** Runs `fn` after every earlier operation on the same id has finished. */
  run<T>(id: Buffer, fn: () => Promise<T>): Promise<T> {
    const key = keyOf(id);
    let prior = this.tails.get(key);
    if (prior === HELD) prior = new Promise<void>((resolve) => this.waiters.set(key, resolve));
    const run = prior ? prior.then(fn, fn) : fn();
    const release = (): void => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<void> = run.then(release, release);
    this.tails.set(key, tail);
    return run;
  }

  /** Takes the id's lock if nothing holds it: its key for unhold(), or -1 when busy. */
  hold(id: Buffer): number {
    const key = keyOf(id);
    if (this.tails.has(key)) return -1;
    this.tails.set(key, HELD);
    return key;
  }

  /** Gives back a lock taken with hold(); a run() waiting for it goes next. */
  unhold(key: number): void {
    if (this.tails.get(key) === HELD) {
      this.tails.delete(key);
      return;
    }
    const wake = this.waiters.get(key);
    if (wake === undefined) return;
    this.waiters.delete(key);
    wake();
  }

  /** Resolves once every run() under way or waiting has finished (held locks go with the log's drain). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.tails.values()].filter((t): t is Promise<unknown> => t !== HELD));
  }

  /** Ids locked now (tests). */
  get size(): number {
    return this.tails.size;
  }
}

const keyOf = (id: Buffer): number => id.readUIntLE(0, 6);
