/**
 * The token file (setting AuthTokensFile): JSON,
 *
 *   {"tokens": [
 *     {"name": "ci",      "sha256": "<64 hex digits: SHA-256 of the token>", "scopes": ["read", "write"]},
 *     {"name": "ops",     "sha256": "...",                                    "scopes": ["admin"]},
 *     {"name": "laptop",  "token":  "<the token itself>",                     "scopes": ["read"]}
 *   ]}
 *
 * `sha256` entries are the recommended form (`blobstore auth hash-token` makes them); `token`
 * entries are accepted for convenience. `admin` implies `read` and `write`; `read` and `write` are
 * independent (a write-only ingest token cannot list or read). Names are labels for operators and
 * error messages; they must be unique, and so must the tokens.
 *
 * Error messages name the file, the entry (index and name) and the field, never a token or a
 * digest: not even JSON.parse's message, which quotes the text around the error.
 */
import { hash } from 'node:crypto';
import { BodyParseError, JsonDecodeError, parsePyJson } from '../util/json-parse.js';
import type { Scope } from './gate.js';
import { TOKEN_CHARS } from './bearer.js';

export const SCOPE_BITS: Readonly<Record<Scope, number>> = { read: 1, write: 2, admin: 4 };
/** What each scope in a file grants: admin is everything. */
const GRANTS: Readonly<Record<Scope, number>> = { read: 1, write: 2, admin: 7 };

export interface TokenEntry {
  readonly name: string;
  /** SHA-256 of the token (32 bytes). */
  readonly digest: Buffer;
  /** Bitwise OR of SCOPE_BITS granted. */
  readonly scopes: number;
  /** Written as a plain `token` in the file rather than a hash. */
  readonly plain: boolean;
}

/** A token file that cannot be used; the message is safe to log. */
export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

/** SHA-256 of the token's UTF-8 bytes; the one-shot crypto.hash costs half of createHash (~0.6 vs ~1.1 us). */
export const sha256 = (token: string): Buffer => hash('sha256', token, 'buffer');

const HEX64 = /^[0-9a-fA-F]{64}$/;
const FIELDS = new Set(['name', 'sha256', 'token', 'scopes']);

/** Parses the text of a token file; throws TokenFileError with a message that holds no token material. */
export function parseTokenFile(text: string): TokenEntry[] {
  // A byte order mark some editors write is not part of the document.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new TokenFileError(`not valid JSON: ${jsonProblem(text)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TokenFileError('expected a JSON object {"tokens": [...]}');
  }
  const extra = Object.keys(parsed).filter((k) => k !== 'tokens');
  if (extra.length > 0) throw new TokenFileError(`unknown top-level field ${quoteWord(extra[0]!)} (expected only "tokens")`);
  const list = (parsed as { tokens?: unknown }).tokens;
  if (!Array.isArray(list)) throw new TokenFileError('"tokens" must be an array of {"name", "sha256" or "token", "scopes"}');
  const entries = list.map((item, i) => parseEntry(item, i));
  checkUnique(entries);
  return entries;
}

function parseEntry(item: unknown, index: number): TokenEntry {
  let where = `tokens[${index}]`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new TokenFileError(`${where}: expected an object`);
  const entry = item as Record<string, unknown>;
  if (typeof entry.name !== 'string' || entry.name.trim() === '') throw new TokenFileError(`${where}: "name" must be a non-empty string`);
  where += ` (${JSON.stringify(entry.name)})`;
  const unknown = Object.keys(entry).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) throw new TokenFileError(`${where}: unknown field ${quoteWord(unknown)} (expected name, sha256 or token, scopes)`);
  const hasHash = 'sha256' in entry;
  const hasToken = 'token' in entry;
  if (hasHash === hasToken) throw new TokenFileError(`${where}: give exactly one of "sha256" and "token"`);
  let digest: Buffer;
  if (hasHash) {
    if (typeof entry.sha256 !== 'string' || !HEX64.test(entry.sha256)) {
      throw new TokenFileError(`${where}: "sha256" must be 64 hexadecimal digits (the SHA-256 of the token; see blobstore auth hash-token)`);
    }
    digest = Buffer.from(entry.sha256, 'hex');
  } else {
    if (typeof entry.token !== 'string' || !TOKEN_CHARS.test(entry.token)) {
      throw new TokenFileError(`${where}: "token" must be a non-empty string of visible ASCII characters without spaces`);
    }
    digest = sha256(entry.token);
  }
  return { name: entry.name, digest, scopes: parseScopes(entry.scopes, where), plain: hasToken };
}

function parseScopes(raw: unknown, where: string): number {
  if (!Array.isArray(raw) || raw.length === 0) throw new TokenFileError(`${where}: "scopes" must be a non-empty array of "read", "write", "admin"`);
  let scopes = 0;
  for (const [i, scope] of raw.entries()) {
    if (typeof scope !== 'string' || !Object.hasOwn(GRANTS, scope)) {
      throw new TokenFileError(`${where}: unknown scope ${typeof scope === 'string' ? quoteWord(scope) : `at scopes[${i}]`} (expected read, write, admin)`);
    }
    scopes |= GRANTS[scope as Scope];
  }
  return scopes;
}

function checkUnique(entries: readonly TokenEntry[]): void {
  const names = new Map<string, number>();
  const digests = new Map<string, number>();
  entries.forEach((e, i) => {
    const sameName = names.get(e.name);
    if (sameName !== undefined) throw new TokenFileError(`tokens[${i}]: name ${JSON.stringify(e.name)} is already used by tokens[${sameName}]`);
    names.set(e.name, i);
    const key = e.digest.toString('hex');
    const sameToken = digests.get(key);
    if (sameToken !== undefined) {
      throw new TokenFileError(`tokens[${i}] (${JSON.stringify(e.name)}): same token as tokens[${sameToken}] (${JSON.stringify(entries[sameToken]!.name)})`);
    }
    digests.set(key, i);
  });
}

/**
 * A misspelt word from the file, quoted; anything that is not a short word (a token pasted into
 * the wrong place, say) is not repeated.
 */
function quoteWord(text: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]{0,15}$/.test(text) ? JSON.stringify(text) : '(not shown: not a short word)';
}

/**
 * What is wrong with text JSON.parse refused, with line and column. V8's own messages quote the
 * text around the error, which may be a token, so the orders service's CPython-style reader (whose
 * messages hold no input) describes the error instead.
 */
function jsonProblem(text: string): string {
  try {
    parsePyJson(text);
  } catch (err) {
    if (err instanceof JsonDecodeError) {
      // Positions count code points, as Python's do.
      const before = Array.from(text).slice(0, err.pos);
      const line = before.filter((c) => c === '\n').length + 1;
      const column = err.pos - before.lastIndexOf('\n');
      return `${err.message} (line ${line}, column ${column})`;
    }
    if (err instanceof BodyParseError) return err.message;
  }
  // CPython accepts NaN and Infinity, JSON.parse does not.
  return 'NaN or Infinity is not JSON';
}
