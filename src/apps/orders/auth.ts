import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config/load.js';
import { invalidCredentials, notAuthenticated, notEnoughPermissions } from './errors.js';

/**
 * Bearer authentication of the orders API, on when a keys file is configured (OrdersApiKeysFile).
 * The file is JSON: `[{"key": "...", "scope": "read" | "read-write", "expiresAt"?: "<RFC 3339 time>"}]`
 * (or `{"keys": [...]}`). Keys are kept as SHA-256 digests and compared in constant time, every
 * key every time, so neither the timing nor a heap dump gives a key away.
 */

export type Scope = 'read' | 'read-write';

interface KeyEntry {
  readonly digest: Buffer;
  readonly scope: Scope;
  readonly expiresAtMs: number;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export class ApiKeys {
  private constructor(private readonly entries: readonly KeyEntry[]) {}

  static fromFile(path: string): ApiKeys {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ConfigError(`OrdersApiKeysFile ${path}: ${(err as Error).message}`);
    }
    const list = Array.isArray(parsed) ? parsed : (parsed as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(list) || list.length === 0) {
      throw new ConfigError(`OrdersApiKeysFile ${path}: expected a non-empty array of {"key", "scope"}`);
    }
    return new ApiKeys(list.map((item, i) => parseEntry(item, `${path}[${i}]`)));
  }

  /** Throws the 401/403 answer, or returns when the request may proceed. */
  authorize(authorization: string, needsWrite: boolean, nowMs: number): void {
    // fastapi.security.utils.get_authorization_scheme_param: split at the first space.
    const space = authorization.indexOf(' ');
    const scheme = space < 0 ? authorization : authorization.slice(0, space);
    const credentials = space < 0 ? '' : authorization.slice(space + 1);
    if (!scheme || !credentials || scheme.toLowerCase() !== 'bearer') throw notAuthenticated();
    const digest = sha256(credentials);
    let match: KeyEntry | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, digest) && match === undefined) match = entry;
    }
    if (match === undefined || match.expiresAtMs <= nowMs) throw invalidCredentials();
    if (needsWrite && match.scope !== 'read-write') throw notEnoughPermissions();
  }
}

function parseEntry(item: unknown, where: string): KeyEntry {
  const entry = item as { key?: unknown; scope?: unknown; expiresAt?: unknown } | null;
  if (typeof entry?.key !== 'string' || entry.key === '' || /\s/.test(entry.key)) {
    throw new ConfigError(`${where}: "key" must be a non-empty string without spaces`);
  }
  if (entry.scope !== 'read' && entry.scope !== 'read-write') {
    throw new ConfigError(`${where}: "scope" must be "read" or "read-write"`);
  }
  let expiresAtMs = Infinity;
  if (entry.expiresAt !== undefined) {
    expiresAtMs = typeof entry.expiresAt === 'string' ? Date.parse(entry.expiresAt) : NaN;
    if (Number.isNaN(expiresAtMs)) throw new ConfigError(`${where}: "expiresAt" must be an ISO 8601 date`);
  }
  return { digest: sha256(entry.key), scope: entry.scope, expiresAtMs };
}

