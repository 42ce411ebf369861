/**
 * A raw HTTP/1.1 client over node:net for requests no ordinary client sends (odd methods, bad
 * framing, lying Content-Length, non-ASCII paths), and a parser for what comes back. Every
 * exchange ends: the server closes, or an answer is in and nothing more arrives for `settleMs`,
 * or `timeoutMs` passes (reported as timed out).
 */
import { connect } from 'node:net';

export interface Answer {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

export interface Outcome {
  answers: Answer[];
  /** The server closed (or reset) the connection. */
  closed: boolean;
  /** Nothing ended the exchange within the time limit. */
  timedOut: boolean;
  /** Bytes after the last whole answer that do not form one (a framing error of the server). */
  trailing: Buffer;
  /**
   * Sending failed (EPIPE, ECONNRESET) while request bytes were still unsent: the server answered
   * early and closed. uWS closes hard after answering a `Connection: close` request ("to hinder
   * clients from keeping to send their huge data"), so the client may lose that answer.
   */
  resetWhileSending?: boolean;
  ms: number;
}

export interface RawOptions {
  timeoutMs: number;
  /**
   * Wait this long after an answer for more (answers to bytes past a short Content-Length): a span
   * of time, as nothing but a close says that no more bytes are coming.
   */
  settleMs?: number;
  /** The request is a HEAD: its answer has no body whatever Content-Length says. */
  head?: boolean;
  /** Send the bytes in these pieces with a pause between them. */
  pieces?: Buffer[];
  pauseMs?: number;
}

const CRLF2 = Buffer.from('\r\n\r\n');

/** Parses one answer at `at`; undefined while it is incomplete. Throws on a malformed answer. */
function parseOne(buf: Buffer, at: number, head: boolean): { answer: Answer; end: number } | undefined {
  const headEnd = buf.indexOf(CRLF2, at);
  if (headEnd < 0) return undefined;
  const lines = buf.subarray(at, headEnd).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0]!);
  if (!m) throw new Error(`malformed status line ${JSON.stringify(lines[0]!.slice(0, 80))}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`malformed header line ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  const status = Number(m[1]);
  let pos = headEnd + 4;
  if (head || status < 200 || status === 204 || status === 304) return { answer: { status, headers, body: Buffer.alloc(0) }, end: pos };
  if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', pos);
      if (lineEnd < 0) return undefined;
      const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size)) throw new Error('malformed chunk size in answer');
      if (buf.length < lineEnd + 2 + size + 2) return undefined;
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      pos = lineEnd + 2 + size + 2;
      if (size === 0) return { answer: { status, headers, body: Buffer.concat(parts) }, end: pos };
    }
  }
  const length = headers.get('content-length');
  if (length === undefined) return undefined; // body runs to the close
  const n = Number(length);
  if (buf.length < pos + n) return undefined;
  return { answer: { status, headers, body: buf.subarray(pos, pos + n) }, end: pos + n };
}

/** Parses every whole answer in `buf`; 1xx interim answers are dropped. */
export function parseAnswers(buf: Buffer, head: boolean, closed: boolean): { answers: Answer[]; trailing: Buffer } {
  const answers: Answer[] = [];
  let at = 0;
  while (at < buf.length) {
    const one = parseOne(buf, at, head && answers.length === 0);
    if (!one) break;
    at = one.end;
    if (one.answer.status >= 100 && one.answer.status < 200) continue;
    answers.push(one.answer);
  }
  let trailing = buf.subarray(at);
  // An answer without Content-Length or chunking ends at the close.
  if (closed && trailing.length > 0) {
    const headEnd = trailing.indexOf(CRLF2);
    if (headEnd >= 0 && /^HTTP\/1\.[01] \d{3}/.test(trailing.toString('latin1', 0, 12))) {
      const one = parseOne(Buffer.concat([trailing.subarray(0, headEnd + 4)]), 0, true)!;
      answers.push({ ...one.answer, body: trailing.subarray(headEnd + 4) });
      trailing = Buffer.alloc(0);
    }
  }
  return { answers, trailing };
}

/** Sends `data` on a new connection and collects the answers (see the module comment). */
export function rawExchange(port: number, data: Buffer, options: RawOptions): Promise<Outcome> {
  const settleMs = options.settleMs ?? 60;
  const started = Date.now();
  return new Promise((resolve) => {
    const received: Buffer[] = [];
    let closed = false;
    let finished = false;
    let resetWhileSending = false;
    let unsent = true;
    let settleTimer: NodeJS.Timeout | undefined;
    const socket = connect(port, '127.0.0.1');
    const finish = (timedOut: boolean): void => {
      if (finished) return;
      finished = true;
      clearTimeout(limit);
      clearTimeout(settleTimer);
      socket.destroy();
      const buf = Buffer.concat(received);
      let parsed: { answers: Answer[]; trailing: Buffer };
      try {
        parsed = parseAnswers(buf, options.head ?? false, closed);
      } catch (err) {
        parsed = { answers: [], trailing: Buffer.from(`unparseable answer (${(err as Error).message}): ${buf.toString('latin1', 0, 300)}`) };
      }
      resolve({ ...parsed, closed, timedOut, resetWhileSending, ms: Date.now() - started });
    };
    const limit = setTimeout(() => finish(true), options.timeoutMs);
    socket.on('connect', () => {
      void (async () => {
        const pieces = options.pieces ?? [data];
        for (const [i, piece] of pieces.entries()) {
          if (finished || socket.destroyed) return;
          const last = i === pieces.length - 1;
          socket.write(piece, (err) => {
            if (!err && last) unsent = false;
          });
          if (options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs)); // time is the subject: a client that dribbles its pieces
        }
      })();
    });
    socket.on('data', (d: Buffer) => {
      received.push(d);
      clearTimeout(settleTimer);
      let whole = false;
      try {
        whole = parseAnswers(Buffer.concat(received), options.head ?? false, false).answers.length > 0;
      } catch {
        whole = true; // malformed: stop reading and report it
      }
      if (whole) settleTimer = setTimeout(() => finish(false), settleMs);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (unsent && (err.code === 'EPIPE' || err.code === 'ECONNRESET')) resetWhileSending = true;
    });
    socket.on('close', () => {
      closed = true;
      finish(false);
    });
  });
}

/** One ordinary request through fetch (undici), as an Outcome; a network error counts as a close. */
export async function fetchExchange(
  url: string,
  init: { method: string; headers: [string, string][]; body?: Buffer },
  timeoutMs: number,
): Promise<Outcome> {
  const started = Date.now();
  try {
    const res = await fetch(url, {
      method: init.method,
      headers: init.headers,
      body: init.body,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    });
    const body = Buffer.from(await res.arrayBuffer());
    const headers = new Map<string, string>();
    res.headers.forEach((v, k) => headers.set(k, v));
    return { answers: [{ status: res.status, headers, body }], closed: false, timedOut: false, trailing: Buffer.alloc(0), ms: Date.now() - started };
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
    // fetch does not say whether the body was sent; a body past the socket buffers was likely not.
    const resetWhileSending = !timedOut && (init.body?.length ?? 0) > 256 * 1024;
    return { answers: [], closed: !timedOut, timedOut, resetWhileSending, trailing: Buffer.alloc(0), ms: Date.now() - started };
  }
}
