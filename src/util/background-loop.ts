/**
 * The loop of a background worker (replication, EC repair, handoff, anti-entropy, the scrubber):
 * the worker supplies one pass (`step`), the loop decides when passes run.
 *
 *   kick() ──▶ idle ──▶ wait (back-off after a failed pass, or the worker's delayMs) ──▶ pass
 *     │                                                                                   │
 *     └─ a pass runs: remembered ─────────▶ one more pass after it (many kicks, one pass) ◀┘
 *   every everyMs: a kick ('when-idle': nothing while a pass runs or waits)
 *   stop(): no pass starts any more; resolves once the running one has ended (drained)
 *
 * Never two passes at once. A pass that throws is reported (onError), and the next one waits:
 * whatever it met beyond a single item (the index, the disk) is likely still there, and kicks
 * (a store each, under load) would otherwise run into it back to back.
 */
import { Backoffs } from './backoff.js';

export interface BackgroundLoopOptions {
  /** One pass of the worker. */
  step: () => Promise<void>;
  /** A pass threw; the next one waits out the back-off. */
  onError: (err: Error) => void;
  /** A tick this often (ms) once started; 0 or absent: passes run on kicks alone. */
  everyMs?: number;
  /**
   * What a tick does while a pass runs or waits: 'kick' (one more pass after it: a queue that may
   * have grown meanwhile), or 'when-idle' (nothing: a round that is under way is as good).
   */
  tick?: 'kick' | 'when-idle';
  /** How long a pass about to start waits first (ms; asked again once the wait is over). */
  delayMs?: () => number;
}

/**
 * After a failed pass the next waits a second, doubling while passes keep failing, up to half a
 * minute; never longer than a tick, so a failure does not slow a ticking worker's cadence.
 */
const FAILURE_FIRST_MS = 1_000;
const FAILURE_MAX_MS = 30_000;
const PASS = 'pass';

export class BackgroundLoop {
  private running: Promise<void> | undefined;
  /** Kicked while a pass ran: one more after it. */
  private again = false;
  /** A pass waiting to start (back-off, or delayMs). */
  private waiting: NodeJS.Timeout | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly failures: Backoffs;

  constructor(private readonly options: BackgroundLoopOptions) {
    const maxMs = options.everyMs ? Math.min(options.everyMs, FAILURE_MAX_MS) : FAILURE_MAX_MS;
    this.failures = new Backoffs(Math.min(FAILURE_FIRST_MS, maxMs), maxMs);
  }

  /** Ticks begin (unref'd: they never keep the process alive). The first pass waits for a kick or a tick. */
  start(): void {
    const every = this.options.everyMs ?? 0;
    if (every <= 0 || this.ticker || this.stopping) return;
    this.ticker = setInterval(() => this.tick(), every);
    this.ticker.unref();
  }

  /** stop() was called: a pass under way ends early where it can. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** A pass runs or waits to start. */
  get busy(): boolean {
    return this.running !== undefined || this.waiting !== undefined;
  }

  /** A pass soon; while one runs, one more after it. */
  kick(): void {
    if (this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // A pass waiting to start begins after this kick, so it sees the kick's work.
    if (this.waiting) return;
    this.begin();
  }

  /** No pass starts any more; resolves once the one under way (if any) has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.again = false;
    clearInterval(this.ticker);
    clearTimeout(this.waiting);
    this.ticker = undefined;
    this.waiting = undefined;
    await this.running;
  }

  private tick(): void {
    if (this.options.tick === 'when-idle' && this.busy) return;
    this.kick();
  }

  private begin(): void {
    const wait = Math.max(this.failures.waitMs(PASS), this.options.delayMs?.() ?? 0);
    if (wait > 0) {
      this.waiting = setTimeout(() => {
        this.waiting = undefined;
        this.kick();
      }, wait);
      return;
    }
    // The pass begins once `running` is set: a kick from its first, synchronous part asks for one
    // more pass instead of starting a second one beside it.
    this.running = Promise.resolve().then(() => this.run());
  }

  private async run(): Promise<void> {
    try {
      await this.options.step();
      this.failures.clear(PASS);
    } catch (err) {
      this.failures.failed(PASS);
      this.options.onError(err instanceof Error ? err : new Error(String(err)));
    }
    this.running = undefined;
    if (this.again && !this.stopping) {
      this.again = false;
      // After the event loop's I/O: a worker kicked without pause does not starve the node.
      setImmediate(() => this.kick());
    }
  }
}
