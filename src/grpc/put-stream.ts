/**
 * PutStream: a client stream of PutChunk messages stored as one blob (the spec's rules):
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
import type { sendUnaryData, ServerReadableStream } from '@grpc/grpc-js';
import type { Gate } from '../auth/gate.js';
import { BlobstoreError, internal, invalidArgument } from '../errors/errors.js';
import { blobIdFromBytes } from '../engine/blob-id.js';
import { encodeLabels } from '../engine/labels.js';
import { parsePolicy } from '../engine/policy.js';
import type { BlobService, BlobWriter, StoreOptions } from '../service/blob-service.js';
import type { BlobIdMessage, PutChunk, PutResponse } from './messages.js';
import type { MalformedMessage } from './proto.js';
import { authorization, toStatus, wellFormed } from './status.js';

type PutCall = ServerReadableStream<PutChunk | MalformedMessage, PutResponse>;

export function handlePutStream(service: BlobService, gate: Gate, call: PutCall, callback: sendUnaryData<PutResponse>): void {
  try {
    gate.check(authorization(call.metadata), 'write');
  } catch (err) {
    callback(toStatus(err, 'PutStream'));
    return;
  }
  new PutStream(service, call, callback).start();
}

class PutStream {
  private writer: BlobWriter | undefined;
  private options: StoreOptions | undefined;
  private streamId: Buffer | undefined;
  private chunks = 0;
  private finalSeen = false;
  /** Answered, failed or cancelled: later events are ignored. */
  private settled = false;
  private paused = false;
  private lastDataMs = Date.now();
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly service: BlobService,
    private readonly call: PutCall,
    private readonly callback: sendUnaryData<PutResponse>,
  ) {}

  start(): void {
    this.call.on('data', (message: PutChunk | MalformedMessage) => this.onData(message));
    this.call.on('end', () => this.onEnd());
    this.call.on('cancelled', () => this.abandon());
    this.call.on('error', () => this.abandon());
    const idleMs = this.service.config.bodyIdleTimeoutMs;
    this.idleTimer = setInterval(() => this.checkIdle(idleMs), Math.min(1000, idleMs));
    this.idleTimer.unref();
  }

  private onData(message: PutChunk | MalformedMessage): void {
    if (this.settled) return;
    this.lastDataMs = Date.now();
    try {
      const chunk = wellFormed(message);
      if (this.finalSeen) throw invalidArgument('put stream: a chunk after the final chunk');
      this.checkId(chunk.id);
      const writer = this.chunks === 0 ? this.open(chunk) : this.writer!;
      if (this.chunks > 0 && (chunk.policy || chunk.labels)) {
        throw invalidArgument('put stream: policy and labels are set on the first chunk only');
      }
      this.chunks++;
      if (chunk.data && chunk.data.length > 0) writer.write(chunk.data);
      if (chunk.final) this.finalSeen = true;
    } catch (err) {
      this.fail(err);
    }
  }

  /** The first chunk: its policy and labels are checked before any bytes are taken. */
  private open(chunk: PutChunk): BlobWriter {
    this.options = { policy: parsePolicy(chunk.policy), labels: encodeLabels(chunk.labels, this.service.config) };
    this.service.checkPlacement(this.options);
    const call = this.call;
    this.writer = this.service.openWriter({
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
    return this.writer;
  }

  private checkId(id: BlobIdMessage | undefined): void {
    if (id === undefined) return;
    const given = blobIdFromBytes(id.id);
    if (this.streamId === undefined) this.streamId = given;
    else if (!given.equals(this.streamId)) {
      throw invalidArgument(`put stream: chunk for blob ${given.toString('hex')} in the stream of ${this.streamId.toString('hex')}: blobs must not be interleaved`);
    }
  }

  private onEnd(): void {
    if (this.settled) return;
    if (!this.finalSeen) {
      this.fail(internal('put stream ended before the final chunk'));
      return;
    }
    this.settle();
    const writer = this.writer!;
    writer.finish(this.options!).then(
      (result) => {
        writer.detach();
        this.callback(null, { id: { id: result.id }, size: result.size });
      },
      (err: unknown) => {
        void writer.discard();
        this.callback(toStatus(err, 'PutStream'));
      },
    );
  }

  private checkIdle(idleMs: number): void {
    if (this.settled || this.paused || Date.now() - this.lastDataMs <= idleMs) return;
    this.fail(new BlobstoreError('request_timeout', `put stream sent nothing for ${idleMs} ms`));
  }

  private settle(): void {
    this.settled = true;
    clearInterval(this.idleTimer);
  }

  private fail(err: unknown): void {
    this.settle();
    void this.writer?.discard();
    this.callback(toStatus(err, 'PutStream'));
  }

  /** The client cancelled or its deadline passed: drop what arrived; no answer is possible. */
  private abandon(): void {
    if (this.settled) return;
    this.settle();
    void this.writer?.discard();
  }
}
