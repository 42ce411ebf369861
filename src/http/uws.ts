/**
 * Loads uWebSockets.js and refuses to run on its slow pure-JS fallback (which the package loads
 * silently when its native binary does not match this Node build).
 */
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';

export function loadUws(): typeof UWS {
  const require = createRequire(import.meta.url);
  const previous = process.env.UWS_USE_FALLBACK;
  // The package says it fell back through console.warn: caught here and put in our error instead.
  const warn = console.warn;
  let fellBack: string | undefined;
  console.warn = (...args: unknown[]) => {
    fellBack = args.map(String).join(' ');
  };
  try {
    const uws = require('uWebSockets.js') as typeof UWS & { getParts?: unknown };
    // Only the native binding exports getParts; the fallback does not.
    if (fellBack !== undefined || previous === '1' || previous === 'true' || typeof uws.getParts !== 'function') {
      throw new Error(
        `uWebSockets.js native binary did not load for Node ${process.version} (ABI ${process.versions.modules}, ` +
          `${process.platform}-${process.arch}); refusing to run on its slow fallback. Use Node 16, 18 or 20 on linux/darwin x64/arm64.` +
          (fellBack ? ` (uWebSockets.js said: ${fellBack})` : ''),
      );
    }
    return uws;
  } finally {
    console.warn = warn;
  }
}

/**
 * listen() options: an exclusive port. uWS otherwise sets SO_REUSEPORT, so a second process on a
 * port in use would not fail but silently share it (the kernel splitting connections between the
 * two); with it, the bind fails and the node says so (or takes a free port for a default).
 */
const EXCLUSIVE_PORT = 1; // LIBUS_LISTEN_EXCLUSIVE_PORT

/** app.listen(host, port, EXCLUSIVE_PORT, cb): the binary takes the options; its typings omit them. */
export function listenExclusive(app: UWS.TemplatedApp, host: string, port: number, cb: (socket: UWS.us_listen_socket | false) => void): void {
  (app.listen as unknown as (h: string, p: number, options: number, c: typeof cb) => void).call(app, host, port, EXCLUSIVE_PORT, cb);
}
