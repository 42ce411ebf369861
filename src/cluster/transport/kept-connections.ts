/**
 * Idle keep-alive connections to peers' API listeners, a few per peer, shared by the data plane's
 * requests whose bodies have a Content-Length (batch POSTs, stats, and the PUTs of columns and
 * replicas: http-post.ts, http-put.ts). A request on a connection of its own costs a handshake,
 * an accept and a close on both ends, and leaves its socket in TIME_WAIT for a minute: at a few
 * hundred columns a second per peer that is thousands of sockets, and a host's ephemeral ports
 * run out. A connection is handed out only while it has been idle for less than `reuseWithinMs`,
 * well inside the peer's own idle timeout (uWS closes a connection idle for 10 s), so a kept one is
 * rarely found closed by the time it is written to; one the peer closed while idle is dropped.
 */
import type { Socket } from 'node:net';
import type { PeerLink } from './peer-link.js';

/**
 * Idle connections kept per peer. Stats go one per read of a blob not held here and columns one per
 * store in flight, as many at once as those: with fewer kept, each beyond them would open and close
 * a connection of its own.
 */
const IDLE_PER_PEER = 32;
/** A connection idle for longer is closed rather than reused: uWS closes it at 10 s. */
const REUSE_WITHIN_MS = 4_000;

interface Idle {
  socket: Socket;
  sinceMs: number;
}

const ignore = (): void => undefined;

export class KeptConnections {
  private readonly idle = new Map<string, Idle[]>();

  constructor(private readonly link: PeerLink, private readonly perPeer = IDLE_PER_PEER, private readonly reuseWithinMs = REUSE_WITHIN_MS) {}

  /**
   * A new connection to `address`. An error on it while no request listens (kept idle, or just
   * after its answer) is ignored, not thrown: the connection is then found closed, and dropped.
   */
  connect(address: string): Socket {
    return this.link.connect(address).on('error', ignore);
  }

  /** An idle connection to `address` still open, if one is kept; it is the caller's until give() or destroy. */
  take(address: string): Socket | undefined {
    const kept = this.idle.get(address);
    const now = Date.now();
    for (let k = kept?.pop(); k; k = kept?.pop()) {
      if (!k.socket.destroyed && now - k.sinceMs < this.reuseWithinMs) return k.socket;
      k.socket.destroy();
    }
    return undefined;
  }

  /**
   * Keeps `socket` (from connect()), whose last answer came whole and left it open (nothing of a
   * body still queued, no listener of the caller's left on it), or closes it when enough are kept.
   */
  give(address: string, socket: Socket): void {
    const kept = this.idle.get(address) ?? [];
    this.idle.set(address, kept);
    if (kept.length >= this.perPeer || socket.destroyed || socket.writableLength > 0) {
      socket.destroy();
      return;
    }
    socket.setTimeout(0);
    kept.push({ socket, sinceMs: Date.now() });
  }

  /** Closes every idle connection (a new certificate, or the node stopping). */
  close(): void {
    for (const kept of this.idle.values()) for (const k of kept) k.socket.destroy();
    this.idle.clear();
  }
}
