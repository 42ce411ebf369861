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

/** Where a store's body goes as it arrives (a BlobWriter, or a stream's message reader). */
export interface BodySink {
  /** Date.now() of the last bytes taken. */
  readonly lastActivityMs: number;
  /** Takes one piece of the body (valid only during the call); throws a BlobstoreError to refuse it. */
  write(bytes: Uint8Array, isLast: boolean): void;
  /** Drops what was taken (temp files, buffers). */
  discard(): Promise<void>;
}

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
   * Receives a store's body into `sink` while it holds its upload slot (`release`): a refused
   * piece answers the error (the rest is drained, Connection: close) and drops what came, as do an
   * abort and an idle body. Once the last byte is in, `complete` answers; the slot goes back when
   * it settles. `startMs` (performance.now() at the request) times the receive stage.
   */
  receive(x: Exchange, sink: BodySink, release: () => void, startMs: number, complete: () => Promise<void>): void {
    const entry: Receiving = { x, lastActivityMs: () => sink.lastActivityMs, discard: () => cut() };
    const finish = this.begin(entry, release);
    const cut = (): void => {
      finish();
      void sink.discard();
    };
    x.onAbort = cut;
    x.res.onData((ab, isLast) => {
      if (x.done || x.aborted) return;
      try {
        sink.write(new Uint8Array(ab), isLast);
      } catch (err) {
        x.onAbort = undefined;
        cut();
        this.service.recordFailure('put', err);
        return sendError(x, err, 'drain');
      }
      if (!isLast) return;
      this.receiving.delete(entry);
      this.service.recorder.stage('receive', startMs);
      x.onAbort = () => void sink.discard();
      void complete().finally(finish);
    });
  }

  /**
   * Starts receiving `entry`: it holds its upload slot until the returned finish() runs, and is
   * swept when idle until the whole body is in.
   */
  private begin(entry: Receiving, release: () => void): () => void {
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
