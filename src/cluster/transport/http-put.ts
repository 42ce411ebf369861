/**
 * The data plane's writes: a body PUT to a peer's /internal/v1 path (a large replica, PUT
 * /internal/v1/replicas/{id}; a shard column, http-column.ts): the metadata in headers, the bytes
 * written straight from the sender's buffers (no framing copy, no allocation per chunk), the answer
 * (JSON) once the peer holds the bytes durably. A body whose length is known goes with a
 * Content-Length on a kept connection (kept-connections.ts), which goes back to the kept ones
 * after the answer; one whose length is not (a streamed column's seal), or of a billion bytes or
 * more (this uWS closes a connection whose Content-Length has ten digits before any handler runs),
 * goes chunked on a connection of its own, which the peer closes after it (framing.ts). A refusal,
 * a broken connection or a stall fails the put; the caller retries it the same way
 * (docs/adr/0021-one-peer-transport.md).
 */
import type { Socket } from 'node:net';
import type { BlobMeta } from '../../blob/meta.js';
import { SECRET_METADATA } from './peer-link.js';
import type { KeptConnections } from './kept-connections.js';
import { metaHeaderLines } from '../wire-meta.js';

const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');
/** The answer is a short JSON object; anything longer is not ours. */
const ANSWER_MAX_BYTES = 64 * 1024;
/** The longest body framed by its Content-Length: this uWS drops a request whose Content-Length has ten digits. */
const LENGTH_FRAMED_MAX_BYTES = 999_999_999;

/** How a PUT's body of `bytes` (undefined: not known before its end) is framed. */
export function bodyFraming(bytes: number | undefined): { header: string; length: number | undefined } {
  return bytes !== undefined && bytes <= LENGTH_FRAMED_MAX_BYTES
    ? { header: `Content-Length: ${bytes}\r\n`, length: bytes }
    : { header: 'Transfer-Encoding: chunked\r\n', length: undefined };
}
export class PeerPutError extends Error {
  constructor(
    message: string,
    /** No answer came within the call's deadline (the peer may be slow, not gone). */
    readonly timedOut = false,
    /** The peer's status, when it answered one other than 200. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'PeerPutError';
  }
}

export interface HttpPeer {
  readonly nodeId: string;
  /** host:port of the peer's API listener. */
  readonly address: string;
}

/** A peer's short answer to a PUT or POST of ours: its status, its body, whether the connection stays open. */
export interface PeerAnswer {
  status: number;
  body: string;
  keepAlive: boolean;
}

/**
 * The answer in `received` once all of it came (head and a body of its Content-Length), else
 * undefined; throws PeerPutError past ANSWER_MAX_BYTES.
 */
export function readAnswer(peer: HttpPeer, received: Buffer): PeerAnswer | undefined {
  if (received.length > ANSWER_MAX_BYTES) throw new PeerPutError(`${peer.nodeId}: answer too long`);
  const text = received.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const headers = text.slice(0, end + 2);
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(headers);
  const bodyEnd = end + 4 + Number(length?.[1] ?? 0);
  if (!length || text.length < bodyEnd) return undefined;
  return { status: Number(text.slice(9, 12)), body: text.slice(end + 4, bodyEnd), keepAlive: text.length === bodyEnd && !/\r\nconnection:\s*close/i.test(headers) };
}

/** The request head of a replica: its metadata in headers, the bytes as the body (framed as `framing` says). */
export function replicaHead(peer: HttpPeer, meta: BlobMeta, repair: boolean, secret: string, framing: string): string {
  return `PUT /internal/v1/replicas/${meta.id.toString('hex')} HTTP/1.1\r\nHost: ${peer.address}\r\n${framing}`
    + (secret === '' ? '' : `${SECRET_METADATA}: ${secret}\r\n`) + metaHeaderLines(meta)
    + (repair ? 'X-Blobstore-Repair: 1\r\n' : '') + '\r\n';
}

/** The request head of a stat: what the peer holds of blob `id` (its answer: wire-meta.ts statJson). */
export function statHead(peer: HttpPeer, id: Buffer, secret: string): string {
  return `GET /internal/v1/stat/${id.toString('hex')} HTTP/1.1\r\nHost: ${peer.address}\r\n` + (secret === '' ? '' : `${SECRET_METADATA}: ${secret}\r\n`) + '\r\n';
}

/** The request head of a batch of small replicas (replica-batch.ts): its body's length is known. */
export function replicaBatchHead(peer: HttpPeer, bytes: number, repair: boolean, secret: string): string {
  return `POST /internal/v1/replicas HTTP/1.1\r\nHost: ${peer.address}\r\nContent-Length: ${bytes}\r\n`
    + (secret === '' ? '' : `${SECRET_METADATA}: ${secret}\r\n`) + (repair ? 'X-Blobstore-Repair: 1\r\n' : '') + '\r\n';
}

/** The request head of a batch of small whole columns (shard-batch.ts): its body's length is known. */
export function shardBatchHead(peer: HttpPeer, bytes: number, secret: string): string {
  return `POST /internal/v1/shards HTTP/1.1\r\nHost: ${peer.address}\r\nContent-Length: ${bytes}\r\n`
    + (secret === '' ? '' : `${SECRET_METADATA}: ${secret}\r\n`) + '\r\n';
}

/** How a PUT goes: its deadline, where its connection comes from, and its body's length when known. */
export interface PutOptions {
  timeoutMs: number;
  /** Where the connection is made, or taken from and given back to once its answer came (a length-framed body only). */
  kept: KeptConnections;
  /** The body's length (bodyFraming's): its bytes go as they are, on a kept connection when there is one; undefined: chunked, on a new one. */
  length: number | undefined;
  /**
   * Time out only while stalled (bytes waiting for the socket), not while there is nothing to
   * send: a streamed column waits while the client's bytes go to the other columns of the
   * stripe. The answer after the body is waited for `answerTimeoutMs`.
   */
  streamed?: { answerTimeoutMs: number };
}

/**
 * A PUT of a body to a peer's /internal/v1 path: the head, the body written straight from the
 * caller's buffers (as chunks when its length is not known), the JSON answer (`answer`) once it is 200.
 */
export class HttpPut {
  failure: Error | undefined;
  readonly done: Promise<void>;
  /** The answer's body (JSON) once it came with 200. */
  answer = '';
  private settle!: () => void;
  private readonly socket: Socket;
  private readonly timeoutMs: number;
  private readonly length: number | undefined;
  private readonly streamed: { answerTimeoutMs: number } | undefined;
  private readonly kept: KeptConnections;
  private received: Buffer = Buffer.alloc(0);
  private answered = false;
  /** The body is all sent: the answer is waited for (timed, stalled or not). */
  private ended = false;
  /** Bytes of a length-framed body written so far. */
  private sent = 0;
  private readonly onTimeout = (): void => this.fail(new PeerPutError(`${this.peer.nodeId}: no progress for ${Math.round(this.timeoutMs)} ms`));
  private readonly onDrain = (): void => void (this.ended || this.socket.setTimeout(0));
  private readonly onError = (err: NodeJS.ErrnoException): void => this.fail(new PeerPutError(`${this.peer.nodeId}: ${err.message}`));
  private readonly onClose = (): void => this.fail(new PeerPutError(`${this.peer.nodeId}: connection closed before the answer`));
  private readonly onData = (bytes: Buffer): void => this.onAnswer(bytes);

  constructor(
    readonly peer: HttpPeer,
    /** The request head (replicaHead, or a shard column's) with bodyFraming's header, ending in an empty line. */
    head: string,
    options: PutOptions,
  ) {
    this.timeoutMs = options.timeoutMs;
    this.length = options.length;
    this.streamed = options.streamed;
    this.kept = options.kept;
    this.done = new Promise((resolve) => (this.settle = resolve));
    // A chunked body ends its connection (the peer closes it after one): never a kept one.
    this.socket = (this.length === undefined ? undefined : this.kept.take(peer.address)) ?? this.kept.connect(peer.address);
    this.socket.on('timeout', this.onTimeout);
    if (this.streamed) this.socket.on('drain', this.onDrain);
    else this.socket.setTimeout(this.timeoutMs);
    this.socket.on('error', this.onError).on('close', this.onClose).on('data', this.onData);
    this.socket.write(head);
  }

  /**
   * Writes bytes of the body (one chunk); `taken` once the kernel has them (the buffer may be
   * reused then). False when the socket's buffer is full: wait for writable() before more.
   */
  write(bytes: Buffer, taken: () => void): boolean {
    if (this.failure || bytes.length === 0) {
      taken();
      return true;
    }
    let room: boolean;
    if (this.length !== undefined) {
      this.sent += bytes.length;
      // Bytes past the Content-Length would reach the peer as the start of another request.
      if (this.sent > this.length) {
        taken();
        this.fail(new Error(`${this.peer.nodeId}: a body past the ${this.length} bytes its head said`));
        return true;
      }
      room = this.socket.write(bytes, () => taken());
    } else {
      // One writev: the chunk's size line, the bytes (not copied), its CRLF.
      this.socket.cork();
      this.socket.write(`${bytes.length.toString(16)}\r\n`);
      this.socket.write(bytes, () => taken());
      room = this.socket.write(CRLF);
      this.socket.uncork();
    }
    if (this.streamed) this.socket.setTimeout(room ? 0 : this.timeoutMs);
    return room;
  }

  /** Resolves once the socket takes more (or the leg failed). */
  writable(): Promise<void> {
    if (this.failure || !this.socket.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const go = (): void => {
        this.socket.off('drain', go);
        this.socket.off('close', go);
        resolve();
      };
      this.socket.once('drain', go);
      this.socket.once('close', go);
    });
  }

  /** After the last bytes: the chunked body's end; a length-framed body must have been all of its length. */
  end(): void {
    this.ended = true;
    if (this.length !== undefined && this.sent !== this.length) return this.fail(new Error(`${this.peer.nodeId}: a body of ${this.sent} bytes, its head said ${this.length}`));
    if (!this.failure && this.length === undefined) this.socket.write(LAST_CHUNK);
    this.socket.setTimeout(this.streamed?.answerTimeoutMs ?? this.timeoutMs);
  }

  cancel(err: Error): void {
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.failure || this.answered) return;
    this.failure = err;
    this.socket.destroy();
    this.settle();
  }

  private onAnswer(bytes: Buffer): void {
    if (this.failure || this.answered) return;
    this.received = this.received.length === 0 ? bytes : Buffer.concat([this.received, bytes]);
    let answer: PeerAnswer | undefined;
    try {
      answer = readAnswer(this.peer, this.received);
    } catch (err) {
      return this.fail(err as Error);
    }
    if (!answer) return;
    if (answer.status !== 200) return this.fail(new PeerPutError(`${this.peer.nodeId} answered ${answer.status}: ${answer.body.slice(0, 300)}`, false, answer.status));
    this.answered = true;
    this.answer = answer.body;
    this.release(answer.keepAlive);
    this.settle();
  }

  /** The connection after a 200: back to the kept ones when its body went whole by its length and the peer keeps it open. */
  private release(keepAlive: boolean): void {
    if (this.length === undefined || !keepAlive || !this.ended) return void this.socket.destroy();
    this.socket.off('timeout', this.onTimeout).off('drain', this.onDrain).off('error', this.onError).off('close', this.onClose).off('data', this.onData);
    this.kept.give(this.peer.address, this.socket);
  }
}
