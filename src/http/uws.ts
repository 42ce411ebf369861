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
