/**
 * Many raw connections at once for the load suites: uploads held open, heads and bodies trickled,
 * and what each connection saw (an answer, a close, or nothing yet).
 */
import { connect, type Socket } from 'node:net';
import { type Answer, parseAnswers } from '../fuzz/http-client.js';

export interface Held {
  readonly socket: Socket;
  /** The first answer, once it is whole. */
  answer(): Answer | undefined;
  closed(): boolean;
  /** Resolves when an answer arrives or the connection closes (undefined: closed without one). */
  settled: Promise<Answer | undefined>;
  openedAtMs: number;
  closedAtMs: number | undefined;
  close(): void;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Opens a connection and writes `first`; more can be written through `socket`. */
export function open(port: number, first: Buffer | string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const received: Buffer[] = [];
    let answer: Answer | undefined;
    let closed = false;
    let connected = false;
    let settle!: (a: Answer | undefined) => void;
    const settled = new Promise<Answer | undefined>((r) => (settle = r));
    const socket = connect(port, '127.0.0.1');
    const held: Held = {
      socket,
      answer: () => answer,
      closed: () => closed,
      settled,
      openedAtMs: Date.now(),
      closedAtMs: undefined,
      close: () => socket.destroy(),
    };
    socket.on('connect', () => {
      connected = true;
      socket.write(first);
      resolve(held);
    });
    socket.on('data', (d: Buffer) => {
      received.push(d);
      if (answer) return;
      try {
        answer = parseAnswers(Buffer.concat(received), false, false).answers[0];
      } catch {
        answer = { status: 0, headers: new Map(), body: Buffer.concat(received) };
      }
      if (answer) settle(answer);
    });
    socket.on('error', (err) => {
      if (!connected) reject(err);
    });
    socket.on('close', () => {
      closed = true;
      held.closedAtMs = Date.now();
      settle(answer);
    });
  });
}

/** The head of a raw store of `length` bytes. */
export const storeHead = (length: number, path = '/v1/blobs', type = 'application/octet-stream'): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n\r\n`;

