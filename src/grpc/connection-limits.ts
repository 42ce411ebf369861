/**
 * Bounds on the gRPC listener's connections, which grpc-js leaves open for ever by default: a
 * host that opened connections and sent nothing (or only HTTP/2's preface) held a file handle
 * and some 35 KB of session each until the node ran out of handles, and every listener with it.
 *
 * - A connection with no call open for `idleMs` is closed (GOAWAY: grpc-js's
 *   grpc.max_connection_idle_ms); a TLS connection whose handshake has not finished by then too.
 *   A client's channel reconnects on its next call.
 * - At most `perAddress` connections from one remote address are open at once: the next is closed
 *   as it arrives, so no one host can take the listener from the others (peers, clients).
 */
import type { Server } from 'node:net';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  readonly idleMs: number;
  readonly perAddress: number;
}

/** Closes each connection to `server` beyond `perAddress` open from the same remote address. */
export function limitPerAddress(server: Server, perAddress: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = open.get(address) ?? 0;
    if (count >= perAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
