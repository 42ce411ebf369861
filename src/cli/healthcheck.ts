import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Command } from 'commander';
import { ConfigError, loadSettings } from '../config/load.js';
import { SETTINGS } from '../config/settings.js';
import { parseHostPort } from '../config/units.js';
import { failure, usageError } from './errors.js';
import { print } from './output.js';

/**
 * `blobstore healthcheck [--url URL] [--up] [--wait SECONDS]`: asks this host's node for
 * GET /healthz, at the API address its own settings give (BLOBSTORE_LISTEN, the config file), so
 * a container's HEALTHCHECK and a systemd unit's start check need no curl and no port of their
 * own. Exit 0 when the node answers 200 (with --up: answers at all, 503 while it joins its
 * cluster included), 1 otherwise.
 *
 * With TLS on (--tls-cert), the probe speaks https to its own node and does not verify the
 * certificate: it checks that this process serves, not who it is (a certificate names the host
 * peers use, not 127.0.0.1).
 */

const PROBE_TIMEOUT_MS = 2000;
const RETRY_MS = 500;
const WILDCARD = new Set(['0.0.0.0', '::', '[::]', '']);

export function registerHealthcheck(program: Command): void {
  program
    .command('healthcheck')
    .description("probe this host's node: GET /healthz at the API address of its settings; exit 0 when it answers 200")
    .option('--url <url>', 'the node\'s API base URL (default: from its settings: --listen, https when --tls-cert is set)')
    .option('--up', 'any HTTP answer counts: the node runs, joined to its cluster or not (a start check)')
    .option('--wait <seconds>', 'keep trying this long before giving up', '0')
    .action(async (opts: { url?: string; up?: boolean; wait: string }) => {
      const waitMs = Number(opts.wait) * 1000;
      if (!(waitMs >= 0)) throw usageError(`--wait must be a number of seconds, got "${opts.wait}"`);
      const url = new URL('/healthz', opts.url ?? nodeUrl());
      const deadline = Date.now() + waitMs;
      for (;;) {
        const answer = await probe(url);
        if (typeof answer === 'number' && (answer === 200 || opts.up)) {
          print(`${url.href} answered ${answer}`);
          return;
        }
        if (Date.now() + RETRY_MS > deadline) {
          throw failure(`${url.href} ${typeof answer === 'number' ? `answered ${answer}` : `did not answer (${answer})`}`);
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    });
}

/** The node's API URL from the settings `serve` would use (a wildcard listen host is probed on loopback). */
function nodeUrl(): string {
  let settings: Record<'listen' | 'tlsCert', unknown>;
  try {
    settings = loadSettings({ listen: SETTINGS.listen, tlsCert: SETTINGS.tlsCert }, 'node');
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
  const addr = parseHostPort(settings.listen as string)!;
  const host = WILDCARD.has(addr.host) ? '127.0.0.1' : addr.host.includes(':') ? `[${addr.host}]` : addr.host;
  return `${settings.tlsCert ? 'https' : 'http'}://${host}:${addr.port}`;
}

/** The status code, or why there was none. */
function probe(url: URL): Promise<number | string> {
  return new Promise((resolve) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method: 'GET', timeout: PROBE_TIMEOUT_MS, rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${PROBE_TIMEOUT_MS} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}
