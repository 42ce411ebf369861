/**
 * Admission and bookkeeping of request bodies: stores in flight are bounded by the service's
 * upload slots, shared with gRPC (503 + Retry-After beyond maxConcurrentUploads rather than
 * unbounded memory), bodies that go quiet for
 * bodyIdleTimeoutMs are cut (408), and graceful shutdown waits for every request being worked on.
 */
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError } from '../errors/errors.js';
import type { BlobService } from '../service/blob-service.js';
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
  private readonly receiving = new Set<Receiving>();

  constructor(
    private readonly config: NodeConfig,
    private readonly service: BlobService,
  ) {}

  /** Takes an upload slot; throws 503 when none is free. Hand the release to begin(). */
  admit(): () => void {
    return this.service.admitUpload();
  }

  /**
   * Starts receiving `entry`: it holds its upload slot until the returned finish() runs, and is
   * swept when idle until received() is called.
   */
  begin(entry: Receiving, release: () => void): () => void {
    this.inflight++;
    this.receiving.add(entry);
    let finished = false;
    return () => {
      if (finished) return;
      finished = true;
      this.receiving.delete(entry);
      release();
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
