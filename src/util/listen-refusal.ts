/**
 * Why an address cannot be listened on. uWS reports a refused bind with no reason, so the
 * listener asks Node's own bind of the same address (exclusive, closed at once) for the errno
 * and says it: "cannot listen on 127.0.0.1:8080: address in use (EADDRINUSE)".
 */
import { createServer } from 'node:net';
import { HostError } from './host-error.js';

/** A listener that could not bind: an operator's problem, said in one line (no stack). */
export class ListenError extends HostError {
  override readonly name = 'ListenError';
}

const REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'address in use',
  EACCES: 'permission denied (a port below 1024 needs CAP_NET_BIND_SERVICE)',
  EADDRNOTAVAIL: 'no interface of this host has that address',
  EAFNOSUPPORT: 'address family not supported here',
};

/** A ListenError for `what` on host:port, with the reason Node's bind gives now. */
export async function listenError(what: string, host: string, port: number): Promise<ListenError> {
  const reason = await new Promise<string>((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ? `${REASONS[err.code] ?? err.message} (${err.code})` : err.message));
    probe.listen({ host: host === '' ? undefined : host, port, exclusive: true }, () => probe.close(() => resolve('refused, though the address is free now')));
  });
  const shown = host.includes(':') ? `[${host}]` : host;
  return new ListenError(`cannot listen${what ? ` ${what}` : ''} on ${shown}:${port}: ${reason}`);
}
