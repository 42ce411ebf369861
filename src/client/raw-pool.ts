/**
 * Keep-alive HTTP/1.1 connections to one node for the client's small stores: a request is its
 * head and body handed to the socket corked together (one write), an answer the status and
 * Content-Length body of what comes back (its other headers read only for a refusal). Stores of bodies in memory go this way because the
 * general clients cost several times the store itself: 10,000 POSTs of 4 KiB at 64 connections
 * took 240 us of client CPU each through undici and 200 us through node:http, against 55 us here
 * (docs/adr/0013-client-connections.md). Everything else the client sends goes through undici.
 *
 *   idle sockets ──take──▶ write(head + body) ──▶ parse the answer ──▶ back to idle (or closed:
 *                                                                      `Connection: close`, an error)
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface RawAnswer {
  status: number;
  /** Header names in lower case, a repeated header's last value; empty for a 2xx. */
  headers: Record<string, string>;
  body: string;
}

/** A socket that failed or closed before its answer was whole (worth another node). */
export class RawConnectionError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'RawConnectionError';
  }
}

const CRLF2 = Buffer.from('\r\n\r\n');
const STATUS = /^HTTP\/1\.[01] (\d{3})/;
const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n/i;
const CONNECTION_CLOSE = /\r\nconnection:[ \t]*close[ \t]*\r\n/i;

/** An answer head's header lines (names in lower case). */
function headersOf(head: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n').slice(1)) {
    const at = line.indexOf(':');
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return headers;
}
/** An answer head or body longer than this is not one of ours. */
const ANSWER_MAX_BYTES = 1024 * 1024;

/** One connection, one request at a time. */
class Connection {
  private received: Buffer[] = [];
  private receivedBytes = 0;
  private waiting: { resolve: (a: RawAnswer) => void; reject: (e: Error) => void } | undefined;
  /** Closed, or answered `Connection: close`: not to be used again. */
  dead = false;

  constructor(
    readonly socket: Socket,
    private readonly timeoutMs: number,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail(new RawConnectionError(err.message, err.code ?? 'ECONNRESET')));
    socket.on('end', () => this.fail(new RawConnectionError('the node closed the connection before the answer', 'ECONNRESET')));
    socket.on('close', () => this.fail(new RawConnectionError('connection closed before the answer', 'ECONNRESET')));
    socket.on('timeout', () => {
      this.fail(new RawConnectionError(`no answer for ${this.timeoutMs} ms`, 'ETIMEDOUT'));
      socket.destroy();
    });
  }

  send(head: string, body: Uint8Array): Promise<RawAnswer> {
    // A socket the node closed while it was idle: a write to it would settle nothing.
    if (this.dead || this.socket.destroyed) return Promise.reject(new RawConnectionError('connection closed while idle', 'ECONNRESET'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.setTimeout(this.timeoutMs);
      this.socket.cork();
      this.socket.write(head, 'latin1');
      if (body.length > 0) this.socket.write(body);
      this.socket.uncork();
    });
  }

  private fail(err: Error): void {
    this.dead = true;
    const w = this.waiting;
    this.waiting = undefined;
    w?.reject(err);
  }

  private onData(d: Buffer): void {
    this.received.push(d);
    this.receivedBytes += d.length;
    const buf = this.received.length === 1 ? d : Buffer.concat(this.received, this.receivedBytes);
    const headEnd = buf.indexOf(CRLF2);
    if (headEnd < 0) {
      if (this.receivedBytes > ANSWER_MAX_BYTES) this.protocolError('an answer head without its end');
      return;
    }
    const head = buf.toString('latin1', 0, headEnd + 2);
    const status = STATUS.exec(head);
    if (!status) return this.protocolError(`not an HTTP answer: ${JSON.stringify(head.slice(0, 60))}`);
    const length = Number(CONTENT_LENGTH.exec(head)?.[1] ?? NaN);
    if (!Number.isSafeInteger(length) || length > ANSWER_MAX_BYTES) return this.protocolError('an answer without a usable Content-Length');
    const end = headEnd + 4 + length;
    if (buf.length < end) {
      if (this.received.length > 1) this.received = [buf];
      return;
    }
    if (buf.length > end) return this.protocolError('bytes after the answer');
    this.received = [];
    this.receivedBytes = 0;
    this.socket.setTimeout(0);
    if (CONNECTION_CLOSE.test(head)) this.dead = true;
    const code = Number(status[1]);
    const w = this.waiting;
    this.waiting = undefined;
    // The other headers matter only to a refusal (Retry-After): parsed then.
    w?.resolve({ status: code, headers: code < 300 ? {} : headersOf(head), body: buf.toString('utf8', headEnd + 4, end) });
  }

  private protocolError(why: string): void {
    this.fail(new RawConnectionError(why, 'EPROTO'));
    this.socket.destroy();
  }
}

/** Up to `size` keep-alive connections to the node at `url` (http: or https: with `ca`). */
export class RawPool {
  private readonly idle: Connection[] = [];
  private readonly host: string;
  private readonly port: number;
  private readonly tls: boolean;
  private readonly hostHeader: string;

  constructor(
    url: string,
    private readonly timeoutMs: number,
    private readonly ca?: string | Buffer,
  ) {
    const u = new URL(url);
    this.tls = u.protocol === 'https:';
    this.host = u.hostname.replace(/^\[|\]$/g, '');
    this.port = Number(u.port || (this.tls ? 443 : 80));
    this.hostHeader = u.host;
  }

  /** POSTs `body` to `path` with `headers` (lines, each ending in CRLF; Host and Content-Length are added). */
  async post(path: string, headers: string, body: Uint8Array): Promise<RawAnswer> {
    const head = `POST ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n${headers}Content-Length: ${body.length}\r\n\r\n`;
    let conn = this.idle.pop();
    while (conn && (conn.dead || conn.socket.destroyed)) conn = this.idle.pop();
    conn ??= await this.open();
    try {
      const answer = await conn.send(head, body);
      if (!conn.dead) this.idle.push(conn);
      else conn.socket.destroy();
      return answer;
    } catch (err) {
      conn.socket.destroy();
      throw err;
    }
  }

  private open(): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = this.tls
        ? tlsConnect({ host: this.host, port: this.port, ca: this.ca, ...(isIP(this.host) === 0 ? { servername: this.host } : {}) })
        : netConnect({ host: this.host, port: this.port });
      const ready = this.tls ? 'secureConnect' : 'connect';
      const onError = (err: NodeJS.ErrnoException): void => reject(new RawConnectionError(err.message, err.code ?? 'ECONNREFUSED'));
      socket.setTimeout(this.timeoutMs, () => {
        socket.destroy();
        reject(new RawConnectionError(`no connection within ${this.timeoutMs} ms`, 'ETIMEDOUT'));
      });
      socket.once('error', onError);
      socket.once(ready, () => {
        socket.off('error', onError);
        socket.setTimeout(0);
        resolve(new Connection(socket, this.timeoutMs));
      });
    });
  }

  close(): void {
    for (const c of this.idle.splice(0)) c.socket.destroy();
  }
}
