/**
 * Admission and bookkeeping of request bodies: stores in flight are bounded by the service's
 * upload slots, shared with gRPC (503 + Retry-After beyond maxConcurrentUploads rather than
 * unbounded memory), bodies that go quiet for
 * bodyIdleTimeoutMs are cut (408), and graceful shutdown waits for every request being worked on.
 */
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import type { BlobService } from '../service/blob-service.js';
import { bodyEnded, type Exchange, sendError } from './reply.js';
import type { HttpRequest } from './uws.js';
import type { Ticks } from '../metrics/clock.js';
import { TRANSFER_ENCODING } from './header-names.js';

/**
 * Whether uWS reads the request body as chunked: it does for any Transfer-Encoding (RFC 9112
 * §6.3), whatever its value.
 */
export const isChunked = (req: HttpRequest): boolean => req.getHeader(TRANSFER_ENCODING) !== '';

/**
 * A chunked body that ended before any data. This uWS build reads a chunk-size line that starts
 * with a space or is empty as size 0, the end of the body, and leaves the rest of the body to be
 * parsed as the next request on the connection; such a body is indistinguishable from a chunked
 * body with no data, so that is refused (400) and the connection closed. An empty blob is stored
 * with `Content-Length: 0`. (Other malformed sizes make uWS close the connection at once.)
 */
const emptyChunkedBody = (): BlobstoreError =>
  invalidArgument('chunked body ended before any data (an empty or malformed chunk size); send an empty body with Content-Length: 0');

/** Where a store's body goes as it arrives (a BlobWriter, or a stream's message reader). */
export interface BodySink {
  /** Date.now() of the last bytes taken. */
  readonly lastActivityMs: number;
  /** How long it may stay quiet (default: bodyIdleTimeoutMs). */
  readonly idleTimeoutMs?: number;
  /** Takes one piece of the body (valid only during the call); throws a BlobstoreError to refuse it. */
  write(bytes: Uint8Array, isLast: boolean): void;
  /** Drops what was taken (temp files, buffers). */
  discard(): Promise<void>;
}

/** A body being received. */
export interface Receiving {
  /** Date.now() of the last bytes received. */
  lastActivityMs(): number;
  /** How long it may stay quiet (default: bodyIdleTimeoutMs). */
  readonly idleTimeoutMs?: number;
  /** The body went quiet: drop what was received and answer `err` (408), closing the connection. Called once. */
  expire(err: BlobstoreError): void;
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
   * it settles. `start` (the clock at the request, ticks) times the receive stage; `chunked`
   * (isChunked) says how the body is framed; `client` false: a peer's body, kept out of the
   * clients' metrics.
   */
  receive(x: Exchange, sink: BodySink, release: () => void, start: Ticks, chunked: boolean, complete: () => Promise<void>, client = true): void {
    const entry: Receiving = {
      lastActivityMs: () => sink.lastActivityMs,
      idleTimeoutMs: sink.idleTimeoutMs,
      expire: (err) => {
        x.onAbort = undefined;
        cut();
        sendError(x, err, 'now');
        // A chunked request's answer waits for the body's end: this is its end.
        bodyEnded(x);
      },
    };
    const finish = this.begin(entry, release);
    const cut = (): void => {
      finish();
      void sink.discard();
    };
    x.onAbort = cut;
    let empty = true;
    let answered: Receiving | undefined;
    x.res.onData((ab, isLast) => {
      if (x.done || x.aborted) return this.dropped(x, isLast, answered);
      // Set before the last piece is taken: a pause it causes is never resumed (reply.ts flowOf).
      if (isLast) x.bodyDone = true;
      empty &&= ab.byteLength === 0;
      try {
        if (chunked && isLast && empty) throw emptyChunkedBody();
        sink.write(new Uint8Array(ab), isLast);
      } catch (err) {
        x.onAbort = undefined;
        cut();
        if (client) this.service.recordFailure('put', err);
        answered = this.awaitBodyEnd(x);
        // Once the body is in, nothing is left to drain: close, so a misread tail is never read as a request.
        return sendError(x, err, isLast ? 'now' : 'drain');
      }
      if (!isLast) return;
      this.receiving.delete(entry);
      if (client) this.service.recorder.stage('receive', start);
      x.onAbort = () => void sink.discard();
      void complete().finally(finish);
    });
  }

  /**
   * The body of a request answered before it was read: read and dropped (the answer says
   * `Connection: close`), so that a client still writing reads the answer rather than a reset.
   * A chunked request's answer waits for the body's end (reply.ts) or for it to go quiet.
   */
  drop(x: Exchange): void {
    const watch = this.awaitBodyEnd(x);
    x.res.onData((_chunk, isLast) => this.dropped(x, isLast, watch));
  }

  private dropped(x: Exchange, isLast: boolean, watch: Receiving | undefined): void {
    x.bodyActivityMs = Date.now();
    if (!isLast) return;
    if (watch) this.receiving.delete(watch);
    bodyEnded(x);
  }

  /** Watches the rest of a chunked body, answered early, for idleness (the sweep then lets the answer go). */
  private awaitBodyEnd(x: Exchange): Receiving | undefined {
    if (!x.chunked || x.bodyDone) return undefined;
    x.bodyActivityMs = Date.now();
    const watch: Receiving = { lastActivityMs: () => x.bodyActivityMs, expire: () => bodyEnded(x) };
    this.receiving.add(watch);
    return watch;
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

  /** A body of a route's own (the small store) is watched for idleness until unwatch(). */
  watch(entry: Receiving): void {
    this.receiving.add(entry);
  }

  unwatch(entry: Receiving): void {
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
      const limit = entry.idleTimeoutMs ?? this.config.bodyIdleTimeoutMs;
      if (nowMs - entry.lastActivityMs() < limit) continue;
      this.receiving.delete(entry);
      entry.expire(new BlobstoreError('request_timeout', `request body idle for over ${limit} ms`));
    }
  }
}
