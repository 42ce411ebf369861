/**
 * The data plane's POSTs of whole bodies (a batch of small replicas, replica-batch.ts; of small
 * columns, shard-batch.ts), and its stats (GET /internal/v1/stat: a body-less request, a short
 * JSON answer), over the connections kept per peer (kept-connections.ts): a batch leaves every
 * replication gather (25 ms) for each peer. One request at a time per connection; the body is
 * written from the caller's buffers in one writev; the answer is a short JSON body with a
 * Content-Length. A connection that breaks before any answer came, after waiting idle, is
 * dropped and the request sent once more on a new one (a peer closes idle connections; the
 * batch is stored as the same blobs twice at worst). A refusal, a stall or a second break fails
 * the post (PeerPutError); its caller retries it the same way.
 */
import type { Socket } from 'node:net';
import { type HttpPeer, type PeerAnswer, PeerPutError, readAnswer } from './http-put.js';
import type { KeptConnections } from './kept-connections.js';

export class HttpPoster {
  constructor(private readonly kept: KeptConnections) {}

  /** POSTs `parts` after `head` (which gives their Content-Length); the answer's body once it is 200. */
  async post(peer: HttpPeer, head: string, parts: readonly Buffer[], timeoutMs: number): Promise<string> {
    const reused = this.kept.take(peer.address);
    if (reused) {
      const answer = await this.exchange(reused, peer, head, parts, timeoutMs).catch((err: unknown) => (err instanceof BrokenIdle ? undefined : Promise.reject(err)));
      if (answer !== undefined) return this.settle(peer, reused, answer);
    }
    const socket = this.kept.connect(peer.address);
    return this.settle(peer, socket, await this.exchange(socket, peer, head, parts, timeoutMs).catch((err: unknown) => {
      throw err instanceof BrokenIdle ? new PeerPutError(`${peer.nodeId}: connection closed before the answer`) : err;
    }));
  }

  /** The connection goes back to the kept ones (or is closed); the answer's body, or its refusal. */
  private settle(peer: HttpPeer, socket: Socket, answer: PeerAnswer): string {
    // A connection with bytes of the body still queued (the peer answered early, a refusal) is not
    // kept (KeptConnections.give): those bytes are the caller's buffers, which it may reuse once this returns.
    if (answer.keepAlive) this.kept.give(peer.address, socket);
    else socket.destroy();
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
