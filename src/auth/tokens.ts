/**
 * Bearer authentication from a token file (setting AuthTokensFile; format in token-file.ts and
 * README.md). The gate hashes the presented token with SHA-256 and compares the digest with every
 * entry's in constant time (XOR of all words, no branch on the data), without stopping at a
 * match, so the answer time does not depend on which entry (if any) matched or how much of a
 * digest agreed. The file's tokens are kept only as digests; recently accepted tokens are cached
 * (GrantCache) so a client's next request skips the hash.
 *
 * The file is read at start (a bad file stops the start: ConfigError, exit 2) and again on SIGHUP
 * (a bad file then keeps the tokens loaded before and logs why).
 */
import { randomInt } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../config/load.js';
import { BlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { bearerToken } from './bearer.js';
import { type Gate, OPEN_GATE, type Scope } from './gate.js';
import { SCOPE_BITS, type TokenEntry, TokenFileError, parseTokenFile, sha256 } from './token-file.js';

const UNAUTHENTICATED_MESSAGE = 'missing or invalid bearer token';

/** 401: the message and header say nothing about what was wrong with the credential. */
export const unauthenticated = (): BlobstoreError =>
  new BlobstoreError('unauthenticated', UNAUTHENTICATED_MESSAGE, { headers: { 'WWW-Authenticate': 'Bearer' } });

/** 403, with RFC 6750's insufficient_scope challenge. */
export const permissionDenied = (scope: Scope): BlobstoreError =>
  new BlobstoreError('permission_denied', `token lacks the ${scope} scope`, {
    headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
  });

/** Reads and parses a token file; the error message names the file and the problem. */
export function readTokenFile(path: string): TokenEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // "ENOENT: no such file or directory, open '<path>'": the path is named by the caller.
    throw new TokenFileError(`cannot read it (${e.message.replace(/, \w+ '.*'$/s, '')})`);
  }
  return parseTokenFile(text);
}

/** Digests packed as 8 little-endian 32-bit words each, with their scope bits beside them. */
interface Packed {
  readonly words: Uint32Array;
  readonly scopes: Int32Array;
}

function pack(entries: readonly TokenEntry[]): Packed {
  const words = new Uint32Array(entries.length * 8);
  const scopes = new Int32Array(entries.length);
  entries.forEach((e, i) => {
    for (let w = 0; w < 8; w++) words[i * 8 + w] = e.digest.readUInt32LE(w * 4);
    scopes[i] = e.scopes;
  });
  return { words, scopes };
}

/**
 * Recently accepted tokens and their scope bits, so a client's next request skips the SHA-256
 * (~1 us, the bulk of the check). A token is found in one slot picked by a seeded FNV-1a hash and
 * compared with the presented one in constant time; only tokens that passed the full check are
 * stored, so a hit is only possible with a valid token, and a miss runs the full check. Cleared
 * on every reload.
 */
class GrantCache {
  private static readonly SLOTS = 256;
  private readonly seed = randomInt(0x7fffffff);
  private readonly tokens: (string | undefined)[] = new Array<string | undefined>(GrantCache.SLOTS);
  private readonly grants = new Int32Array(GrantCache.SLOTS);

  private slot(token: string): number {
    let h = this.seed ^ 0x811c9dc5;
    for (let i = 0; i < token.length; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193);
    return (h >>> 0) & (GrantCache.SLOTS - 1);
  }

  /** The cached scope bits of `token`, or 0. */
  lookup(token: string): number {
    const slot = this.slot(token);
    const known = this.tokens[slot];
    if (known === undefined) return 0;
    // Constant time over the presented token: no exit at the first differing character.
    let diff = known.length ^ token.length;
    for (let i = 0; i < token.length; i++) diff |= (known.charCodeAt(i) | 0) ^ token.charCodeAt(i);
    return diff === 0 ? this.grants[slot]! : 0;
  }

  remember(token: string, granted: number): void {
    const slot = this.slot(token);
    this.tokens[slot] = token;
    this.grants[slot] = granted;
  }
}

export class TokenGate implements Gate {
  readonly enabled = true;
  private entries: readonly TokenEntry[];
  private packed: Packed;
  private cache = new GrantCache();

  constructor(entries: readonly TokenEntry[]) {
    this.entries = entries;
    this.packed = pack(entries);
  }

  /** How many tokens are loaded. */
  get size(): number {
    return this.entries.length;
  }

  /** How many of them were written as plain tokens in the file. */
  get plainCount(): number {
    return this.entries.filter((e) => e.plain).length;
  }

  /** Replaces the tokens (a reload); requests already checked are not affected. */
  replace(entries: readonly TokenEntry[]): void {
    this.packed = pack(entries);
    this.entries = entries;
    // A removed token must stop working at once.
    this.cache = new GrantCache();
  }

  check(authorization: string, scope: Scope): void {
    const token = bearerToken(authorization);
    if (token === undefined) throw unauthenticated();
    const granted = this.cache.lookup(token) || this.compareAll(token);
    if (granted === 0) throw unauthenticated();
    this.cache.remember(token, granted);
    if ((granted & SCOPE_BITS[scope]) === 0) throw permissionDenied(scope);
  }

  /** The scope bits of the entry whose digest is the token's (0: none), in constant time. */
  private compareAll(token: string): number {
    const digest = sha256(token);
    const d0 = digest.readUInt32LE(0), d1 = digest.readUInt32LE(4), d2 = digest.readUInt32LE(8), d3 = digest.readUInt32LE(12);
    const d4 = digest.readUInt32LE(16), d5 = digest.readUInt32LE(20), d6 = digest.readUInt32LE(24), d7 = digest.readUInt32LE(28);
    // Every entry is compared word by word, and the result folded in without a branch on it
    // (one loop in place of a timingSafeEqual call per entry, which costs ~40 ns of call overhead).
    const { words, scopes } = this.packed;
    let granted = 0;
    for (let i = 0, w = 0; i < scopes.length; i++, w += 8) {
      const diff =
        (words[w]! ^ d0) | (words[w + 1]! ^ d1) | (words[w + 2]! ^ d2) | (words[w + 3]! ^ d3) |
        (words[w + 4]! ^ d4) | (words[w + 5]! ^ d5) | (words[w + 6]! ^ d6) | (words[w + 7]! ^ d7);
      // 0 when the digests agree; otherwise diff or -diff has the sign bit set.
      const differs = ((diff | -diff) >>> 31) & 1;
      granted |= scopes[i]! & (differs - 1);
    }
    return granted;
  }
}

/** Authentication of a running node: its gate and how to stop listening for SIGHUP. */
export interface NodeAuth {
  readonly gate: Gate;
  close(): void;
}

/**
 * The gate a node uses: OPEN_GATE without a token file; otherwise a TokenGate loaded now and
 * re-read on SIGHUP. Logs one line per load with the number of tokens, never the tokens.
 */
export function startAuth(config: { readonly authTokensFile: string }, logger: Logger): NodeAuth {
  const path = config.authTokensFile;
  if (path === '') return { gate: OPEN_GATE, close() {} };
  let gate: TokenGate;
  try {
    gate = new TokenGate(readTokenFile(path));
  } catch (err) {
    if (err instanceof TokenFileError) throw new ConfigError(`AuthTokensFile ${path}: ${err.message}`);
    throw err;
  }
  const log = logger.child({ component: 'auth' });
  log.info({ tokens: gate.size, file: path }, `bearer tokens required; ${describe(gate.size)} loaded from ${path}`);
  warnIfReadable(path, gate, log);
  const onHangup = (): void => {
    try {
      gate.replace(readTokenFile(path));
    } catch (err) {
      const problem = err instanceof TokenFileError ? err.message : 'unexpected failure';
      log.error({ signal: 'SIGHUP', tokens: gate.size, file: path }, `SIGHUP: AuthTokensFile ${path}: ${problem}; keeping the ${describe(gate.size)} loaded before`);
      return;
    }
    log.info({ signal: 'SIGHUP', tokens: gate.size, file: path }, `SIGHUP: ${describe(gate.size)} loaded from ${path}`);
    warnIfReadable(path, gate, log);
  };
  process.on('SIGHUP', onHangup);
  return { gate, close: () => void process.off('SIGHUP', onHangup) };
}

const describe = (n: number): string => (n === 1 ? '1 token' : `${n} tokens`);

/** Plain tokens in a file others can read are worth a warning (hashed entries are not secret). */
function warnIfReadable(path: string, gate: TokenGate, log: Logger): void {
  const plain = gate.plainCount;
  if (plain === 0) return;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return;
  }
  if ((mode & 0o044) !== 0) {
    log.warn({ file: path, plainTokens: plain }, `${path} holds ${plain} plain token(s) and is readable by group or others (mode ${(mode & 0o777).toString(8)}); prefer sha256 entries (blobstore auth hash-token) or chmod 600`);
  }
}
