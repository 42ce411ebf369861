/**
 * PutStream: a client stream of PutChunk messages stored as one blob. The rules are the
 * service's (src/service/put-stream.ts), shared with the HTTP stream:
 *
 *   first chunk   policy and labels (checked at once, so a bad one fails before the bytes flow)
 *   every chunk   data, in order; an id when given must be 16 bytes and the same on every chunk
 *                 (a different one means blobs are interleaved: INVALID_ARGUMENT)
 *   last chunk    final = true; the answer follows the client's half-close
 *
 * Nothing is stored unless the stream is whole: a chunk after the final one (INVALID_ARGUMENT),
 * a half-close without a final chunk (INTERNAL, as the spec's 500), a cancel or an expired
 * deadline all discard what arrived. The bytes go through a BlobWriter, which pauses the call
 * while the disk is behind; a stream that sends nothing for bodyIdleTimeoutMs while not paused is
 * cut with DEADLINE_EXCEEDED.
 */
import { scopeOf } from '../auth/access.js';
import type { Metadata, sendUnaryData } from '@grpc/grpc-js';
import type { Gate } from '../auth/gate.js';
import { BlobstoreError } from '../errors/errors.js';
import { blobIdFromBytes } from '../blob/id.js';
import type { BlobService } from '../service/blob-service.js';
import { PutStream } from '../service/put-stream.js';
import type { PutChunk, PutResponse } from '../proto/messages.js';
import { MalformedMessage } from '../proto/loader.js';
import type { Logger } from '../log/logger.js';
import { authorization, blobCallStatus, wellFormed } from './status.js';

/**
 * What a PutStream call needs of its transport: grpc-js's ServerReadableStream, or a DirectCall
 * (direct-streams.ts) emitting the same 'data', 'end' and 'cancelled' events.
 */
export interface PutCall {
  readonly metadata: Metadata;
  pause(): unknown;
  resume(): unknown;
  on(event: 'data', listener: (message: PutChunk | MalformedMessage) => void): unknown;
  on(event: 'end' | 'cancelled' | 'error', listener: () => void): unknown;
}

const EMPTY = Buffer.alloc(0);

/** A second data field in a chunk whose first was already taken as it arrived (PutStreamCall.dataPiece). */
const DATA_TWICE = new MalformedMessage('malformed blobstore.v1.PutChunk: the data field appears more than once');

/** Starts serving a PutStream; undefined when it was answered at once (not allowed, too many uploads). */
export function handlePutStream(service: BlobService, gate: Gate, log: Logger, call: PutCall, callback: sendUnaryData<PutResponse>): PutStreamCall | undefined {
  try {
    gate.check(authorization(call.metadata), scopeOf('BlobService/PutStream'));
  } catch (err) {
    callback(blobCallStatus(service, err, 'PutStream', log, call.metadata));
    return undefined;
  }
  let release: () => void;
  try {
    release = service.admitUpload();
  } catch (err) {
    callback(blobCallStatus(service, err, 'PutStream', log, call.metadata));
    return undefined;
  }
  const putCall = new PutStreamCall(service, call, callback, release, log);
  putCall.start();
  return putCall;
}

/**
 * One PutStream call: the service's PutStream keeps the rules, this adapts grpc-js events. A
 * transport that parses chunks itself (direct-streams.ts) may hand a chunk's data over as it
 * arrives (dataPiece, while `streaming`) and the chunk's other fields after (chunkRest).
 */
export class PutStreamCall {
  private readonly stream: PutStream;
  /** Answered, failed or cancelled: later events are ignored. */
  private settled = false;
  private paused = false;
  private lastDataMs = Date.now();
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly service: BlobService,
    private readonly call: PutCall,
    private readonly callback: sendUnaryData<PutResponse>,
    /** The upload slot, held until the call is answered or dropped. */
    private readonly release: () => void,
    private readonly log: Logger,
  ) {
    this.stream = new PutStream(service, {
      pause: () => {
        this.paused = true;
        call.pause();
      },
      resume: () => {
        this.paused = false;
        this.lastDataMs = Date.now();
        call.resume();
      },
    });
  }

  start(): void {
    this.call.on('data', (message: PutChunk | MalformedMessage) => this.onData(message));
    this.call.on('end', () => this.onEnd());
    this.call.on('cancelled', () => this.abandon());
    this.call.on('error', () => this.abandon());
    const idleMs = this.service.config.bodyIdleTimeoutMs;
    this.idleTimer = setInterval(() => this.checkIdle(idleMs), Math.min(1000, idleMs));
    this.idleTimer.unref();
  }

  /** Whether the next chunk's data may come as pieces (dataPiece) before its other fields. */
  get streaming(): boolean {
    return !this.settled && this.stream.midStream;
  }

  /**
   * Bytes of the call arrived, whether or not they complete a message: a client sending one large
   * message slowly but steadily is not idle.
   */
  arrived(): void {
    this.lastDataMs = Date.now();
  }

  /** A piece of the current chunk's data field (valid only during the call: it is copied). */
  dataPiece(bytes: Uint8Array): void {
    if (this.settled) return;
    this.lastDataMs = Date.now();
    try {
      this.stream.data(bytes);
    } catch (err) {
      this.fail(err);
    }
  }

  /**
   * The rest of a chunk taken as pieces; `streamed` when its data went through dataPiece (then a
   * data field here is a second one).
   */
  chunkRest(message: PutChunk | MalformedMessage, streamed: boolean): void {
    if (streamed && !(message instanceof MalformedMessage) && message.data !== undefined) this.onData(DATA_TWICE);
    else this.onData(message);
  }

  private onData(message: PutChunk | MalformedMessage): void {
    if (this.settled) return;
    this.lastDataMs = Date.now();
    try {
      const chunk = wellFormed(message);
      this.stream.chunk({
        id: chunk.id === undefined ? undefined : blobIdFromBytes(chunk.id.id),
        data: chunk.data ?? EMPTY,
        final: chunk.final === true,
        // proto3 leaves an unset enum at 0 (UNSPECIFIED, which means REPLICA3) and unset maps empty.
        policy: chunk.policy || undefined,
        labels: chunk.labels && Object.keys(chunk.labels).length > 0 ? chunk.labels : undefined,
      });
    } catch (err) {
      this.fail(err);
    }
  }

  private onEnd(): void {
    if (this.settled) return;
    this.settled = true;
    clearInterval(this.idleTimer);
    this.stream.end().then(
      (result) => {
        this.release();
        this.callback(null, { id: { id: result.id }, size: result.size });
      },
      (err: unknown) => {
        this.release();
        void this.stream.discard();
        this.callback(blobCallStatus(this.service, err, 'PutStream', this.log, this.call.metadata));
      },
    );
  }

  private checkIdle(idleMs: number): void {
    if (this.settled || this.paused || Date.now() - this.lastDataMs <= idleMs) return;
    this.fail(new BlobstoreError('request_timeout', `put stream sent nothing for ${idleMs} ms`));
  }

  /** Answered or dropped: the slot goes back. */
  private settle(): void {
    this.settled = true;
    clearInterval(this.idleTimer);
    this.release();
  }

  private fail(err: unknown): void {
    this.settle();
    void this.stream.discard();
    this.callback(blobCallStatus(this.service, err, 'PutStream', this.log, this.call.metadata));
  }

  /** The client cancelled or its deadline passed: drop what arrived; no answer is possible. */
  private abandon(): void {
    if (this.settled) return;
    this.settle();
    void this.stream.discard();
  }
}
