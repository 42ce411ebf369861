/**
 * One gRPC call served straight on its HTTP/2 stream, for the two streaming methods whose bytes
 * are the data plane (PutStream, GetStream; direct-streams.ts). grpc-js moves one message at a
 * time through promises, pauses and resumes the stream per message and copies each twice; here a
 * message is parsed from the DATA frames as they come (a view when it lies in one frame, else
 * one copy into a reusable buffer) and a response message is one pre-framed write.
 *
 * The wire behaviour is grpc-js's (server-interceptors.js, 1.14): response headers
 * `:status 200`, `content-type: application/grpc+proto`, `grpc-accept-encoding`, `grpc-encoding:
 * identity`; status in trailers (`grpc-status`, `grpc-message` percent-encoded with encodeURI,
 * the status metadata), or trailers-only when nothing was sent; `grpc-timeout` starts a deadline
 * that answers DEADLINE_EXCEEDED "Deadline exceeded"; a message above the receive limit answers
 * RESOURCE_EXHAUSTED; a stream closed before the status is a cancel. Only uncompressed calls come
 * here (direct-seam.ts leaves any other to grpc-js), so a compressed message is INTERNAL.
 */
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import { Metadata, status as Status } from '@grpc/grpc-js';
import type { AccessLog } from '../log/access-log.js';
import { CallAccess, sentRequestId, withRequestId } from './access.js';

/**
 * A reader that takes some messages piece by piece as their DATA frames arrive instead of whole
 * (PutStream's chunks: put-chunk-parser.ts), so a large message is never assembled.
 */
export interface MessagePieces {
  /** At a message's prefix: true to take it as pieces (`piece` for each, then `end`), false to take it whole. */
  begin(length: number): boolean;
  /** Bytes of the request arrived (any message, taken whole or not): the call is not idle. */
  arrived(): void;
  /** The next bytes of the message, a view of the frame valid only during the call. */
  piece(bytes: Buffer): void;
  end(): void;
}

export interface CallStatus {
  code: number;
  details: string;
  metadata?: Metadata | undefined;
}

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = {
  ':status': 200,
  'content-type': 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};

const DEADLINE = /(\d{1,8})\s*([HMSmun])/;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** Request headers that are not the caller's metadata (grpc-js removes the same). */
const NOT_METADATA = ['grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding', 'te', 'content-type'];

/**
 * Events: 'cancelled' once, when the call ends without its status having been sent by the handler
 * (the client reset the stream, the connection closed, the deadline passed).
 */
export class DirectCall extends EventEmitter {
  readonly metadata: Metadata;
  /** Closed before the handler's status: stop working for it. */
  cancelled = false;
  private statusSent = false;
  private headersSent = false;
  private deadlineTimer: NodeJS.Timeout | undefined;
  // Inbound framing: the 5-byte prefix (which may span frames), then the message.
  private readonly prefix = Buffer.alloc(5);
  private prefixHave = 0;
  private message: Buffer | undefined;
  private messageHave = 0;
  private messageLength = 0;
  /** The current message goes to `pieces` as it arrives. */
  private piecewise = false;
  private pieces: MessagePieces | undefined;
  /** Reused for messages that span DATA frames: onMessage must be done with it when it returns. */
  private assembly = Buffer.alloc(0);
  /** The caller's sane x-request-id, echoed in the response headers; '' when none. */
  private readonly sentId: string;
  /** The access line of a logged call (access.ts). */
  private readonly line: CallAccess | undefined;

  constructor(
    readonly stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    private readonly maxReceiveBytes: number,
    /** The access log and the rpc's name (`BlobService.PutStream`). */
    access?: { log: AccessLog; method: string },
  ) {
    super();
    this.metadata = Metadata.fromHttp2Headers(headers);
    for (const key of NOT_METADATA) this.metadata.remove(key);
    this.sentId = sentRequestId(this.metadata);
    this.line = access?.log.sampled() ? new CallAccess(access.log, access.method, peerOf(stream)) : undefined;
    // A stream error always comes with 'close', which is the cancel.
    stream.on('error', () => undefined);
    stream.once('close', () => this.closed());
    const timeout = headers['grpc-timeout'];
    if (typeof timeout === 'string') this.deadline(timeout);
  }

  /**
   * Reads the request's messages: `onMessage` for each (its bytes valid only during the call),
   * or `pieces` for those it takes, `onEnd` at the half-close.
   */
  read(onMessage: (bytes: Buffer) => void, onEnd: () => void, pieces?: MessagePieces): void {
    this.pieces = pieces;
    this.stream.on('data', (data: Buffer) => {
      if (this.statusSent || this.cancelled) return;
      this.pieces?.arrived();
      try {
        this.frames(data, onMessage);
      } catch (err) {
        this.sendStatus({ code: Status.RESOURCE_EXHAUSTED, details: (err as Error).message });
      }
    });
    this.stream.once('end', () => {
      if (this.statusSent || this.cancelled) return;
      if (this.prefixHave > 0 || this.message || this.piecewise) this.sendStatus({ code: Status.INTERNAL, details: 'the request ended inside a message' });
      else onEnd();
    });
  }

  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    if (!this.statusSent && !this.cancelled) this.stream.resume();
  }

  /**
   * Writes one framed message (5-byte prefix included); false when the stream's buffer is full
   * ('drain' on the stream). On a call that is gone it writes nothing (`done` still runs): the
   * stream may be destroyed a moment before its 'close' makes the call cancelled.
   */
  write(framed: Buffer | Uint8Array, done?: (err?: Error | null) => void): boolean {
    if (this.gone()) {
      if (done) process.nextTick(done);
      return false;
    }
    this.sendHeaders();
    if (this.line) this.line.bytes += framed.length - 5;
    return this.stream.write(framed, done);
  }

  /** The status ends the call: trailers after the messages, or a trailers-only answer. */
  sendStatus(status: CallStatus): void {
    if (this.statusSent || this.cancelled) return;
    this.statusSent = true;
    clearTimeout(this.deadlineTimer);
    // A trailers-only answer carries the caller's id in its only headers.
    const metadata = this.sentId !== '' && !this.headersSent ? withRequestId(status.metadata, this.sentId) : status.metadata;
    const trailers: http2.OutgoingHttpHeaders = {
      'grpc-status': String(status.code),
      'grpc-message': encodeURI(status.details),
      ...metadata?.toHttp2Headers(),
    };
    this.line?.finish(status.code, this.sentId !== '' ? this.sentId : String(metadata?.get('x-request-id')[0] ?? ''), false);
    if (this.gone()) return;
    if (this.headersSent) {
      this.stream.once('wantTrailers', () => this.stream.sendTrailers(trailers));
      this.stream.end();
    } else {
      this.headersSent = true;
      this.stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto', ...trailers }, { endStream: true });
    }
    // What the client still sends is read and dropped, so its window keeps moving until it sees the status.
    this.stream.resume();
  }

  private gone(): boolean {
    return this.cancelled || this.stream.destroyed || this.stream.closed;
  }

  private sendHeaders(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.stream.respond(this.sentId === '' ? RESPONSE_HEADERS : { ...RESPONSE_HEADERS, 'x-request-id': this.sentId }, { waitForTrailers: true });
  }

  private deadline(header: string): void {
    const m = DEADLINE.exec(header);
    if (!m) {
      process.nextTick(() => this.sendStatus({ code: Status.INTERNAL, details: `Invalid grpc-timeout value "${header}"` }));
      return;
    }
    const ms = (Number(m[1]) * UNIT_MS[m[2]!]!) | 0;
    this.deadlineTimer = setTimeout(() => {
      this.sendStatus({ code: Status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
      this.cancel();
    }, ms);
  }

  private closed(): void {
    clearTimeout(this.deadlineTimer);
    if (!this.statusSent) this.cancel();
  }

  private cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.line?.finish(Status.CANCELLED, this.sentId, true);
    this.emit('cancelled');
  }

  /** Splits DATA into messages; throws when one is larger than the receive limit. */
  private frames(data: Buffer, onMessage: (bytes: Buffer) => void): void {
    let at = 0;
    while (at < data.length && !this.statusSent && !this.cancelled) {
      if (!this.message && !this.piecewise) {
        if (this.prefixHave === 0 && data.length - at >= 5) {
          this.startMessage(data[at]!, data.readUInt32BE(at + 1));
          at += 5;
        } else {
          const n = Math.min(5 - this.prefixHave, data.length - at);
          data.copy(this.prefix, this.prefixHave, at, at + n);
          this.prefixHave += n;
          at += n;
          if (this.prefixHave < 5) return;
          this.prefixHave = 0;
          this.startMessage(this.prefix[0]!, this.prefix.readUInt32BE(1));
        }
        if (this.statusSent) return;
        if (this.pieces?.begin(this.messageLength)) {
          this.piecewise = true;
          if (!this.takePieces(data, at)) return;
          at += this.messageLength;
          continue;
        }
        // A message wholly inside this frame is handed over as a view, no copy.
        if (this.messageHave === 0 && data.length - at >= this.messageLength) {
          const view = data.subarray(at, at + this.messageLength);
          at += this.messageLength;
          this.message = undefined;
          onMessage(view);
          continue;
        }
        if (this.assembly.length < this.messageLength) this.assembly = Buffer.allocUnsafeSlow(this.messageLength);
        this.message = this.assembly;
        this.messageHave = 0;
      }
      if (this.piecewise) {
        const taken = Math.min(this.messageLength - this.messageHave, data.length - at);
        if (!this.takePieces(data, at)) return;
        at += taken;
        continue;
      }
      if (!this.message) continue;
      const n = Math.min(this.messageLength - this.messageHave, data.length - at);
      // fill() is one native memcpy (copy() is a JS loop for large ranges on some Node 20 paths).
      if (n > 0) this.message.fill(data.subarray(at, at + n), this.messageHave, this.messageHave + n);
      this.messageHave += n;
      at += n;
      if (this.messageHave === this.messageLength) {
        const whole = this.message.subarray(0, this.messageLength);
        this.message = undefined;
        this.messageHave = 0;
        onMessage(whole);
      }
    }
  }

  /**
   * Hands what `data` holds of the current piecewise message, from `at`, to `pieces`; true when
   * the message is complete (then `end` ran), false when the frame ended first.
   */
  private takePieces(data: Buffer, at: number): boolean {
    const n = Math.min(this.messageLength - this.messageHave, data.length - at);
    if (n > 0) {
      this.messageHave += n;
      this.pieces!.piece(n === data.length ? data : data.subarray(at, at + n));
    }
    if (this.messageHave < this.messageLength) return false;
    this.piecewise = false;
    this.messageHave = 0;
    if (!this.statusSent && !this.cancelled) this.pieces!.end();
    return true;
  }

  private startMessage(flags: number, length: number): void {
    if (length > this.maxReceiveBytes) throw new Error(`Received message larger than max (${length} vs ${this.maxReceiveBytes})`);
    if (flags !== 0) {
      this.sendStatus({ code: Status.INTERNAL, details: 'Received compressed message but "grpc-encoding" header was identity' });
      return;
    }
    this.messageLength = length;
    this.messageHave = 0;
  }
}

export const STATUS_OK: CallStatus = { code: Status.OK, details: 'OK' };

/** The caller's address as grpc-js's getPeer() gives it (host:port). */
function peerOf(stream: http2.ServerHttp2Stream): string {
  const socket = stream.session?.socket;
  if (!socket?.remoteAddress) return 'unknown';
  return socket.remoteFamily === 'IPv6' ? `[${socket.remoteAddress}]:${socket.remotePort}` : `${socket.remoteAddress}:${socket.remotePort}`;
}
