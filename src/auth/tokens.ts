/**
 * Bearer authentication from a token file (setting AuthTokensFile; format in token-file.ts and
 * README.md). The gate hashes the presented token with SHA-256 and compares the digest with every
 * entry's in constant time, without stopping at a match, so the answer time does not depend on
 * which entry (if any) matched or how much of a digest agreed. Tokens are kept only as digests.
 *
 * The file is read at start (a bad file stops the start: ConfigError, exit 2) and again on SIGHUP
 * (a bad file then keeps the tokens loaded before and logs why).
 */
import { timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../config/load.js';
import { BlobstoreError } from '../errors/errors.js';
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

export class TokenGate implements Gate {
  readonly enabled = true;
  private entries: readonly TokenEntry[];

  constructor(entries: readonly TokenEntry[]) {
    this.entries = entries;
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
    this.entries = entries;
  }

  check(authorization: string, scope: Scope): void {
    const token = bearerToken(authorization);
    if (token === undefined) throw unauthenticated();
    const digest = sha256(token);
    // Every entry is compared, and the result folded in without a branch on it.
    const entries = this.entries;
    let granted = 0;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      const same = timingSafeEqual(entry.digest, digest) ? -1 : 0;
      granted |= entry.scopes & same;
    }
    if (granted === 0) throw unauthenticated();
    if ((granted & SCOPE_BITS[scope]) === 0) throw permissionDenied(scope);
  }
}

/** Authentication of a running node: its gate and how to stop listening for SIGHUP. */
export interface NodeAuth {
  readonly gate: Gate;
  close(): void;
}

export interface AuthLog {
  log(line: string): void;
  error(line: string): void;
}

/**
 * The gate a node uses: OPEN_GATE without a token file; otherwise a TokenGate loaded now and
 * re-read on SIGHUP. Logs one line per load with the number of tokens, never the tokens.
 */
export function startAuth(config: { readonly authTokensFile: string }, out: AuthLog = console): NodeAuth {
  const path = config.authTokensFile;
  if (path === '') return { gate: OPEN_GATE, close() {} };
  let gate: TokenGate;
  try {
    gate = new TokenGate(readTokenFile(path));
  } catch (err) {
    if (err instanceof TokenFileError) throw new ConfigError(`AuthTokensFile ${path}: ${err.message}`);
    throw err;
  }
  out.log(`blobstore: auth: bearer tokens required; ${describe(gate.size)} loaded from ${path}`);
  warnIfReadable(path, gate, out);
  const onHangup = (): void => {
    try {
      gate.replace(readTokenFile(path));
    } catch (err) {
      const problem = err instanceof TokenFileError ? err.message : 'unexpected failure';
      out.error(`blobstore: auth: SIGHUP: AuthTokensFile ${path}: ${problem}; keeping the ${describe(gate.size)} loaded before`);
      return;
    }
    out.log(`blobstore: auth: SIGHUP: ${describe(gate.size)} loaded from ${path}`);
    warnIfReadable(path, gate, out);
  };
  process.on('SIGHUP', onHangup);
  return { gate, close: () => void process.off('SIGHUP', onHangup) };
}

const describe = (n: number): string => (n === 1 ? '1 token' : `${n} tokens`);

/** Plain tokens in a file others can read are worth a warning (hashed entries are not secret). */
function warnIfReadable(path: string, gate: TokenGate, out: AuthLog): void {
  const plain = gate.plainCount;
  if (plain === 0) return;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return;
  }
  if ((mode & 0o044) !== 0) {
    out.error(`blobstore: auth: warning: ${path} holds ${plain} plain token(s) and is readable by group or others (mode ${(mode & 0o777).toString(8)}); prefer sha256 entries (blobstore auth hash-token) or chmod 600`);
  }
}
