/**
 * The data plane's POSTs of whole bodies (a batch of small replicas, replica-batch.ts; of small
 * columns, shard-batch.ts), and its stats (GET /internal/v1/stat: a body-less request, a short
 * JSON answer), over keep-alive connections, a few kept per peer: a batch leaves every
 * replication gather (25 ms) for each peer, and a connection each would cost a handshake, an accept and a close per batch and
 * leave thousands of sockets in TIME_WAIT. One request at a time per connection; the body is
 * written from the caller's buffers in one writev; the answer is a short JSON body with a
 * Content-Length. A connection that breaks before any answer came, after waiting idle, is
 * dropped and the request sent once more on a new one (a peer closes idle connections; the
 * batch is stored as the same blobs twice at worst). A refusal, a stall or a second break fails
 * the post (PeerPutError); its caller retries it the same way.
 */
import type { Socket } from 'node:net';
import type { PeerLink } from './peer-link.js';
import { type HttpPeer, type PeerAnswer, PeerPutError, readAnswer } from './http-put.js';

/**
 * Idle connections kept per peer. A batch goes per gather, but stats go one per read of a blob
 * not held here, as many at once as such reads: with fewer kept, every read beyond them would
 * open and close a connection of its own (and leave it in TIME_WAIT).
 */
const IDLE_PER_PEER = 16;

export class HttpPoster {
  private readonly idle = new Map<string, Socket[]>();

  constructor(private readonly link: PeerLink) {
    // A new certificate: kept connections made with the old one go.
    link.onChange(() => this.close());
  }

  /** POSTs `parts` after `head` (which gives their Content-Length); the answer's body once it is 200. */
  async post(peer: HttpPeer, head: string, parts: readonly Buffer[], timeoutMs: number): Promise<string> {
    const reused = this.take(peer.address);
    if (reused) {
      const answer = await this.exchange(reused, peer, head, parts, timeoutMs).catch((err: unknown) => (err instanceof BrokenIdle ? undefined : Promise.reject(err)));
      if (answer !== undefined) return this.settle(peer, reused, answer);
    }
    const socket = this.link.connect(peer.address);
    // A kept connection the peer closes while idle errs with nobody listening.
    socket.on('error', () => undefined);
    return this.settle(peer, socket, await this.exchange(socket, peer, head, parts, timeoutMs).catch((err: unknown) => {
      throw err instanceof BrokenIdle ? new PeerPutError(`${peer.nodeId}: connection closed before the answer`) : err;
    }));
  }

  close(): void {
    for (const sockets of this.idle.values()) for (const s of sockets) s.destroy();
    this.idle.clear();
  }

  private take(address: string): Socket | undefined {
    const sockets = this.idle.get(address);
    for (let s = sockets?.pop(); s; s = sockets?.pop()) if (!s.destroyed) return s;
    return undefined;
  }

  /** The connection goes back to the idle ones (or is closed); the answer's body, or its refusal. */
  private settle(peer: HttpPeer, socket: Socket, answer: PeerAnswer): string {
    const sockets = this.idle.get(peer.address) ?? [];
    this.idle.set(peer.address, sockets);
    // A connection with bytes of the body still queued (the peer answered early, a refusal) is not
    // kept: those bytes are the caller's buffers, which it may reuse once this returns.
    if (answer.keepAlive && sockets.length < IDLE_PER_PEER && socket.writableLength === 0) {
      socket.setTimeout(0);
      sockets.push(socket);
    } else {
      socket.destroy();
    }
    if (answer.status !== 200) throw new PeerPutError(`${peer.nodeId} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    return answer.body;
  }

  private exchange(socket: Socket, peer: HttpPeer, head: string, parts: readonly Buffer[], timeoutMs: number): Promise<PeerAnswer> {
    return new Promise((resolve, reject) => {
      let received: Buffer = Buffer.alloc(0);
      const done = (err: Error | undefined, answer?: PeerAnswer): void => {
        socket.off('data', onData).off('error', onError).off('close', onClose).off('timeout', onTimeout);
        if (err) {
          socket.destroy();
          reject(err);
        } else {
          resolve(answer!);
        }
      };
      const onData = (bytes: Buffer): void => {
        received = received.length === 0 ? bytes : Buffer.concat([received, bytes]);
        let answer: PeerAnswer | undefined;
        try {
          answer = readAnswer(peer, received);
        } catch (err) {
          return done(err as Error);
        }
        if (answer) done(undefined, answer);
      };
      // Nothing came back: a reused connection the peer had closed is worth one more try.
      const broken = (message: string): Error => (received.length === 0 ? new BrokenIdle(message) : new PeerPutError(`${peer.nodeId}: ${message}`));
      const onError = (err: Error): void => done(broken(err.message));
      const onClose = (): void => done(broken('connection closed before the answer'));
      const onTimeout = (): void => done(new PeerPutError(`${peer.nodeId}: no answer within ${timeoutMs} ms`, true));
      socket.on('data', onData).on('error', onError).on('close', onClose).on('timeout', onTimeout);
      socket.setTimeout(timeoutMs);
      socket.cork();
      socket.write(head);
      for (const part of parts) socket.write(part);
      socket.uncork();
    });
  }
}

/** A connection broke before any byte of the answer came. */
class BrokenIdle extends Error {}
