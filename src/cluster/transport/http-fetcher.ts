/**
 * Reads of a blob's bytes from a peer's API listener (GET /internal/v1/blobs/{id}, src/http/
 * internal-routes.ts) over keep-alive HTTP/1.1 connections, at most `connectionsPerPeer` per
 * peer. The kernel reads straight into the connection's own 1 MiB buffer (net's `onread` with a
 * buffer function), which is handed to the sink as it fills: no allocation and no copy per chunk
 * on this side. Over gRPC (FetchBlob) each 1 MiB message is framed, copied and allocated on both
 * ends, and the garbage it leaves cost as much again: ~1.9 ms of CPU per MiB, against ~0.4 ms for
 * this path (docs/adr/0021-one-peer-transport.md).
 *
 *   request ─▶ [status + headers | body bytes ...] ─▶ buffer[0 .. 1 MiB) ─▶ sink(chunk) ─▶ (socket paused until it returns)
 *
 * A fetch to a target (BytesTarget: an EC read's column queue) has the body read in place into
 * the target's own memory once the head is in, so the bytes are not copied again on this side.
 *
 * A fetch of a range takes only a 206 whose Content-Range starts where the range does and ends
 * within it: bytes of another offset (a peer that ignored the range) are never taken for them.
 *
 * A connection kept idle that the peer closed meanwhile is retried once, on a new one; any other
 * failure is the fetch's (the caller asks another holder, or fails the read).
 */
import type { OnReadOpts, Socket } from 'node:net';
import { CHUNK_BYTES } from '../../blob/chunk.js';
import type { ByteRange } from '../../service/local-store.js';
import { type PeerLink, SECRET_METADATA } from './peer-link.js';

/** The fetch failed before its first body byte (on a kept connection: perhaps closed by the peer meanwhile). */
class NothingDelivered extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NothingDelivered';
  }
}

/** The peer answered with another status than the read's (404: it does not hold what was asked for). */
export class PeerAnswered extends Error {
  constructor(
    readonly status: number,
    statusLine: string,
  ) {
    super(`answered ${statusLine}`);
    this.name = 'PeerAnswered';
  }
}

export interface HttpFetcherOptions {
  /** The cluster secret and the transport (TLS or not). */
  link: PeerLink;
  /** Connections kept per peer (each with a 1 MiB buffer); more fetches wait for one. */
  connectionsPerPeer: number;
  /** A fetch that receives nothing for this long fails. */
  idleTimeoutMs: number;
}

export type BytesSink = (chunk: Buffer) => Promise<void> | void;

/**
 * Where a fetch's body goes in place: the kernel reads straight into region(), so the bytes are
 * not copied again on this side (a column stream's slabs: column-stream.ts).
 */
export interface BytesTarget {
  /** Free space for the next read (never empty); the bytes read go to its start. */
  region(): Buffer;
  /** `n` bytes were read into the last region; a promise: no more reads until it resolves. */
  filled(n: number): Promise<void> | void;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;
const CONTENT_RANGE = /\r\ncontent-range:\s*bytes (\d+)-(\d+)\//i;

/**
 * Whether a 206 head's Content-Range starts where `range` does and ends within it (a holder may
 * end it short, at the end of what it holds). Its length is not the body's: a column read with
 * chunk values has them before the range's bytes (column-check.ts).
 */
function rangeAnswered(head: string, range: ByteRange): boolean {
  const m = CONTENT_RANGE.exec(head);
  if (!m) return false;
  const start = Number(m[1]);
  const last = Number(m[2]);
  return start === range.start && last >= start && last < range.end;
}

/** One request on a connection: the head is parsed, then the body is delivered chunk by chunk. */
interface Exchange {
  sink: BytesSink | undefined;
  /** The body is read into the target's regions instead of the connection's buffer. */
  target: BytesTarget | undefined;
  /** Reading waits for the target's room. */
  waiting: boolean;
  /** Body bytes still to come; -1 while the head is incomplete. */
  left: number;
  status: number;
  /** The range asked for, if any: the answer must be a 206 that starts there and ends within it. */
  range: ByteRange | undefined;
  delivered: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Net asks for the buffer of the next read right after each read's callback, so while the sink
 * holds the main buffer the next read must go elsewhere: into a small spare, copied into the main
 * buffer once the sink is done with it (one read's worth per chunk). Over TLS, a paused socket
 * still hands on what it has already decrypted (a TCP read's worth of records): those reads are
 * kept aside (`aside`) until the sink is done, then taken into the buffer as if just read.
 */
const SPARE_BYTES = 64 * 1024;

class Connection {
  readonly socket: Socket;
  private readonly buffer = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  private readonly spare = Buffer.allocUnsafeSlow(SPARE_BYTES);
  /** The sink holds the buffer: reads go to the spare. */
  private holding = false;
  /** Body bytes read while the sink held the buffer (a paused TLS socket's last records), in order. */
  private aside: Buffer[] = [];
  private asideBytes = 0;
  private filled = 0;
  private exchange: Exchange | undefined;
  /** Responses completed on this connection (a failure on a reused one may be a stale close). */
  served = 0;
  closed = false;

  constructor(open: (onread: OnReadOpts) => Socket, private readonly idleTimeoutMs: number, onClose: (c: Connection) => void) {
    this.socket = open({ buffer: () => this.nextBuffer(), callback: (n: number, buf: Uint8Array) => this.onRead(n, buf) });
    this.socket.setTimeout(idleTimeoutMs);
    this.socket.on('timeout', () => this.fail(new Error(`no bytes for ${idleTimeoutMs} ms`)));
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('close', () => {
      this.closed = true;
      this.fail(new Error('connection closed by the peer'));
      onClose(this);
    });
  }

  request(head: string, to: BytesSink | BytesTarget, range: ByteRange | undefined): Promise<void> {
    if (this.closed) return Promise.reject(new NothingDelivered('connection closed by the peer'));
    const [sink, target] = typeof to === 'function' ? [to, undefined] : [undefined, to];
    return new Promise((resolve, reject) => {
      this.exchange = { sink, target, waiting: false, left: -1, status: 0, range, delivered: 0, resolve, reject };
      this.filled = 0;
      this.socket.write(head);
    });
  }

  private fail(err: Error): void {
    const ex = this.exchange;
    this.exchange = undefined;
    this.aside = [];
    this.asideBytes = 0;
    if (!this.closed) this.socket.destroy();
    // An answer is not a connection closed meanwhile (which a fetch retries once).
    ex?.reject(ex.delivered === 0 && !(err instanceof PeerAnswered) ? new NothingDelivered(err.message) : err);
  }

  /** Where the next read goes: a target's region once the head is in, else the buffer (the spare while a sink holds it). */
  private nextBuffer(): Uint8Array {
    const ex = this.exchange;
    if (ex?.target && ex.left >= 0) return ex.target.region();
    return this.holding ? this.spare : this.buffer.subarray(this.filled);
  }

  /** Returns false to pause the socket while the sink holds the buffer (or the target has no room). */
  private onRead(n: number, into: Uint8Array): boolean {
    const ex = this.exchange;
    if (!ex) {
      this.fail(new Error('bytes from the peer outside a response'));
      return false;
    }
    // A read into the buffer comes as a view of it (from `filled` on): told apart by its memory.
    if (into.buffer !== this.buffer.buffer && into !== this.spare) return this.readInto(ex, n);
    if (into === this.spare) {
      if (this.holding) return this.setAside(ex, n);
      const fits = Math.min(n, this.buffer.length - this.filled);
      this.buffer.set(this.spare.subarray(0, fits), this.filled);
      if (fits < n) this.keep(this.spare.subarray(fits, n));
      n = fits;
    }
    this.filled += n;
    return this.afterRead(ex);
  }

  /** The buffer's bytes after a read: the head parsed, the body moved to a target, or delivered once a chunk is whole. */
  private afterRead(ex: Exchange): boolean {
    if (ex.left < 0 && !this.parseHead(ex)) return true;
    if (ex.target) return this.moveToTarget(ex);
    if (this.overrun(ex, this.filled)) return false;
    if (this.filled < ex.left && this.filled < this.buffer.length) return true;
    this.deliver(ex);
    return false;
  }

  /** True once the head is in (its body bytes moved to the buffer's start). */
  private parseHead(ex: Exchange): boolean {
    const end = this.buffer.subarray(0, this.filled).indexOf(HEAD_END);
    if (end < 0) {
      if (this.filled === this.buffer.length) this.fail(new Error('response head too large'));
      return false;
    }
    const head = this.buffer.toString('latin1', 0, end + 2);
    ex.status = Number(head.slice(9, 12));
    const length = CONTENT_LENGTH.exec(head);
    if (ex.status !== (ex.range ? 206 : 200) || !length) {
      this.fail(new PeerAnswered(ex.status, head.slice(9, head.indexOf('\r\n'))));
      return false;
    }
    ex.left = Number(length[1]);
    if (ex.range && !rangeAnswered(head, ex.range)) {
      // Another range's bytes would be taken for the ones asked for.
      this.fail(new Error(`answered bytes other than ${ex.range.start}-${ex.range.end - 1}`));
      return false;
    }
    this.buffer.copyWithin(0, end + HEAD_END.length, this.filled);
    this.filled -= end + HEAD_END.length;
    return true;
  }

  /** A read while the sink holds the buffer: kept aside (a copy) until it is done; reading stays paused. */
  private setAside(ex: Exchange, n: number): boolean {
    this.keep(this.spare.subarray(0, n));
    this.overrun(ex, this.asideBytes);
    return false;
  }

  private keep(bytes: Buffer): void {
    this.aside.push(Buffer.from(bytes));
    this.asideBytes += bytes.length;
  }

  /** Bytes kept aside go into the buffer as if just read (as many as it holds). */
  private takeAside(): void {
    while (this.aside.length > 0 && this.filled < this.buffer.length) {
      const next = this.aside[0]!;
      const n = Math.min(next.length, this.buffer.length - this.filled);
      next.copy(this.buffer, this.filled, 0, n);
      this.filled += n;
      this.asideBytes -= n;
      if (n === next.length) this.aside.shift();
      else this.aside[0] = next.subarray(n);
    }
  }

  /** `n` body bytes are more than the response announced: the fetch fails. */
  private overrun(ex: Exchange, n: number): boolean {
    if (n <= ex.left) return false;
    this.fail(new Error('more bytes than the response announced'));
    return true;
  }

  /** Body bytes the kernel read into the target's region. */
  private readInto(ex: Exchange, n: number): boolean {
    if (this.overrun(ex, n)) return false;
    ex.left -= n;
    ex.delivered += n;
    return this.afterFill(ex, ex.target!.filled(n));
  }

  /** The body bytes that came with the head: copied into the target once (the rest is read in place). */
  private moveToTarget(ex: Exchange): boolean {
    if (this.overrun(ex, this.filled)) return false;
    let room: Promise<void> | void = undefined;
    for (let at = 0; at < this.filled;) {
      // Only the last fill's answer counts (a failed target fails each one).
      room?.catch(() => undefined);
      const region = ex.target!.region();
      const n = Math.min(region.length, this.filled - at);
      this.buffer.copy(region, 0, at, at + n);
      at += n;
      room = ex.target!.filled(n);
    }
    ex.left -= this.filled;
    ex.delivered += this.filled;
    this.filled = 0;
    return this.afterFill(ex, room);
  }

  /** After bytes went to the target: the exchange ends with its last byte; reading waits for the target's room. */
  private afterFill(ex: Exchange, room: Promise<void> | void): boolean {
    if (ex.left === 0) {
      // The body is all in: what the target does with it next is its own (a closed one dropped it).
      room?.catch(() => undefined);
      this.exchange = undefined;
      this.served++;
      ex.resolve();
      return true;
    }
    if (!room) return true;
    // The target may wait for a slow client as long as it likes; the timeout is for the peer.
    if (!ex.waiting) this.socket.setTimeout(0);
    ex.waiting = true;
    room.then(() => {
      if (this.exchange !== ex || !ex.waiting) return;
      ex.waiting = false;
      this.socket.setTimeout(this.idleTimeoutMs);
      this.socket.resume();
    }, (err: Error) => {
      if (this.exchange !== ex) return;
      this.exchange = undefined;
      this.socket.destroy();
      ex.reject(err);
    });
    return false;
  }

  /** Hands the buffer's bytes to the sink; reading resumes once it returns. */
  private deliver(ex: Exchange): void {
    const chunk = this.buffer.subarray(0, this.filled);
    ex.delivered += chunk.length;
    ex.left -= chunk.length;
    // The sink may wait for a slow client as long as it likes; the timeout is for the peer.
    this.socket.setTimeout(0);
    this.holding = true;
    Promise.resolve()
      .then(() => (chunk.length > 0 ? ex.sink!(chunk) : undefined))
      .then(() => {
        if (this.exchange !== ex) return;
        this.filled = 0;
        this.holding = false;
        this.socket.setTimeout(this.idleTimeoutMs);
        if (this.asideBytes > 0) {
          this.takeAside();
          // A whole chunk (or the body's end) delivered again; else reading resumes to fill the buffer.
          if (!this.afterRead(ex)) return;
        }
        if (ex.left > 0) {
          this.socket.resume();
          return;
        }
        this.exchange = undefined;
        this.served++;
        this.socket.resume();
        ex.resolve();
      }, (err: Error) => {
        if (this.exchange !== ex) return;
        this.exchange = undefined;
        this.socket.destroy();
        ex.reject(err);
      });
  }
}

/** The connections to one peer: idle ones, and fetches waiting for one. */
interface PeerPool {
  idle: Connection[];
  open: number;
  waiting: ((c: Connection) => void)[];
}

export class HttpFetcher {
  private readonly pools = new Map<string, PeerPool>();

  constructor(private readonly options: HttpFetcherOptions) {}

  /**
   * Streams `range` (default: all) of the blob from the peer at `address` (host:port of its API)
   * to `sink` in chunks of at most 1 MiB. Checks the length and the range answered; the caller checks the bytes.
   */
  fetch(address: string, id: Buffer, range: ByteRange | undefined, sink: BytesSink, traceparent?: string): Promise<void> {
    return this.fetchPath(address, `/internal/v1/blobs/${id.toString('hex')}`, range, sink, traceparent);
  }

  /**
   * As fetch(), for any of the peer's /internal/v1 read paths (a shard column: /internal/v1/shards/{id}/{index}),
   * to a sink or read in place into a target.
   */
  async fetchPath(address: string, path: string, range: ByteRange | undefined, to: BytesSink | BytesTarget, traceparent?: string, extraHeaders = ''): Promise<void> {
    // `traceparent`: the client's, checked well formed where its request came in (src/log/access-log.ts).
    const head = `GET ${path} HTTP/1.1\r\nHost: ${address}\r\n` + (traceparent === undefined ? '' : `traceparent: ${traceparent}\r\n`) + extraHeaders
      + (this.options.link.secret === '' ? '' : `${SECRET_METADATA}: ${this.options.link.secret}\r\n`)
      + (range ? `Range: bytes=${range.start}-${range.end - 1}\r\n` : '') + '\r\n';
    for (let attempt = 0; ; attempt++) {
      const conn = await this.take(address);
      const reused = conn.served > 0;
      try {
        await conn.request(head, to, range);
        this.give(address, conn);
        return;
      } catch (err) {
        this.drop(address, conn);
        // A kept connection the peer had closed meanwhile: once more on a new one.
        if (err instanceof NothingDelivered && reused && attempt === 0) continue;
        throw err;
      }
    }
  }

  private pool(address: string): PeerPool {
    let pool = this.pools.get(address);
    if (!pool) {
      pool = { idle: [], open: 0, waiting: [] };
      this.pools.set(address, pool);
    }
    return pool;
  }

  private take(address: string): Promise<Connection> {
    const pool = this.pool(address);
    const idle = pool.idle.pop();
    if (idle) return Promise.resolve(idle);
    if (pool.open < this.options.connectionsPerPeer) {
      pool.open++;
      return Promise.resolve(new Connection((onread) => this.options.link.connect(address, onread), this.options.idleTimeoutMs, (c) => this.closed(address, c)));
    }
    return new Promise((resolve) => pool.waiting.push(resolve));
  }

  private give(address: string, conn: Connection): void {
    if (conn.closed) return; // closed() has counted it out already
    const pool = this.pool(address);
    const next = pool.waiting.shift();
    if (next) next(conn);
    else pool.idle.push(conn);
  }

  private drop(address: string, conn: Connection): void {
    if (!conn.closed) conn.socket.destroy();
  }

  /** A connection ended (the peer's idle timeout, an error): a waiting fetch gets a new one. */
  private closed(address: string, conn: Connection): void {
    const pool = this.pool(address);
    pool.open--;
    const at = pool.idle.indexOf(conn);
    if (at >= 0) pool.idle.splice(at, 1);
    const next = pool.waiting.shift();
    if (next) void this.take(address).then(next);
  }

  close(): void {
    for (const pool of this.pools.values()) for (const conn of pool.idle.splice(0)) conn.socket.destroy();
    this.pools.clear();
  }
}
