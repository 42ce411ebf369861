/**
 * Admission and bookkeeping of request bodies: stores in flight are bounded (503 + Retry-After
 * beyond maxConcurrentUploads rather than unbounded memory), bodies that go quiet for
 * bodyIdleTimeoutMs are cut (408), and graceful shutdown waits for every request being worked on.
 */
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, unavailable } from '../errors/errors.js';
import { type Exchange, sendError } from './reply.js';

/** A body being received. */
export interface Receiving {
  readonly x: Exchange;
  /** Date.now() of the last bytes received. */
  lastActivityMs(): number;
  /** Drops what was received (temp files, buffers); called once when the body is cut. */
  discard(): void;
}

export class Intake {
  /** Requests being worked on (graceful shutdown waits for them). */
  inflight = 0;
  private stores = 0;
  private readonly receiving = new Set<Receiving>();

  constructor(private readonly config: NodeConfig) {}

  /** Throws 503 when the store limit is reached. */
  admit(): void {
    if (this.stores >= this.config.maxConcurrentUploads) throw unavailable('too many uploads in progress; retry shortly', 1);
  }

  /**
   * Starts receiving `entry`: it counts against the limit until the returned finish() runs, and
   * is swept when idle until received() is called.
   */
  begin(entry: Receiving): () => void {
    this.stores++;
    this.inflight++;
    this.receiving.add(entry);
    let finished = false;
    return () => {
      if (finished) return;
      finished = true;
      this.receiving.delete(entry);
      this.stores--;
      this.inflight--;
    };
  }

  /** The whole body is in: no more idle sweeps for it. */
  received(entry: Receiving): void {
    this.receiving.delete(entry);
  }

  /** Counts `work` as in flight and answers its failure in the error shape. */
  track(x: Exchange, work: Promise<void>): void {
    this.inflight++;
    work.catch((err: unknown) => sendError(x, err)).finally(() => this.inflight--);
  }

  /** Cuts bodies that sent nothing for bodyIdleTimeoutMs (slow or stalled clients). */
  sweepIdle(nowMs: number): void {
    for (const entry of this.receiving) {
      if (nowMs - entry.lastActivityMs() < this.config.bodyIdleTimeoutMs) continue;
      this.receiving.delete(entry);
      entry.x.onAbort = undefined;
      entry.discard();
      sendError(entry.x, new BlobstoreError('request_timeout', `request body idle for over ${this.config.bodyIdleTimeoutMs} ms`), 'now');
    }
  }
}
