import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bearerToken } from '../../src/auth/bearer.js';
import { OPEN_GATE, type Scope } from '../../src/auth/gate.js';
import { TokenFileError, parseTokenFile } from '../../src/auth/token-file.js';
import { TokenGate, readTokenFile, startAuth } from '../../src/auth/tokens.js';
import { ConfigError } from '../../src/config/load.js';
import { BlobstoreError } from '../../src/errors/errors.js';
import { TOKENS, type TokenName, secrets, sha256Hex, standardEntries, tokenFile, writeTokenFile } from './helpers.js';
import { captureLogger } from '../helpers/log.js';

/** The gate on its own: token file format, scopes, Authorization parsing, reload (src/auth). */

const files: string[] = [];
afterAll(() => {
  for (const dir of files) rmSync(dir, { recursive: true, force: true });
});

const gate = new TokenGate(parseTokenFile(JSON.stringify({ tokens: standardEntries() })));

/** What check() does: 'ok', or the thrown error. */
function outcome(authorization: string, scope: Scope): 'ok' | BlobstoreError {
  try {
    gate.check(authorization, scope);
    return 'ok';
  } catch (err) {
    expect(err).toBeInstanceOf(BlobstoreError);
    return err as BlobstoreError;
  }
}

function expectUnauthenticated(result: 'ok' | BlobstoreError): void {
  expect(result).not.toBe('ok');
  const err = result as BlobstoreError;
  expect(err.status).toBe(401);
  expect(err.grpcCode).toBe(16);
  expect(err.message).toBe('missing or invalid bearer token');
  expect(err.headers).toStrictEqual({ 'WWW-Authenticate': 'Bearer' });
}

function expectForbidden(result: 'ok' | BlobstoreError, scope: Scope): void {
  expect(result).not.toBe('ok');
  const err = result as BlobstoreError;
  expect(err.status).toBe(403);
  expect(err.grpcCode).toBe(7);
  expect(err.message).toBe(`token lacks the ${scope} scope`);
  expect(err.headers?.['WWW-Authenticate']).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
}

/** Strings that must never appear in a message: tokens (and any 8 characters of one) and digests. */
function expectNoSecret(text: string): void {
  for (const token of Object.values(TOKENS)) {
    for (let i = 0; i + 8 <= token.length; i++) expect(text).not.toContain(token.slice(i, i + 8));
    expect(text.toLowerCase()).not.toContain(sha256Hex(token).slice(0, 16));
  }
  for (const s of secrets()) expect(text).not.toContain(s);
}

describe('scopes', () => {
  const grants: Record<Exclude<TokenName, 'wrong'>, Scope[]> = {
    read: ['read'],
    write: ['write'],
    admin: ['read', 'write', 'admin'],
    readWrite: ['read', 'write'],
    plain: ['read'],
  };
  for (const [name, granted] of Object.entries(grants) as [Exclude<TokenName, 'wrong'>, Scope[]][]) {
    for (const scope of ['read', 'write', 'admin'] as Scope[]) {
      const allowed = granted.includes(scope);
      it(`a ${name} token ${allowed ? 'passes' : 'gets 403'} for the ${scope} scope`, () => {
        const result = outcome(`Bearer ${TOKENS[name]}`, scope);
        if (allowed) expect(result).toBe('ok');
        else expectForbidden(result, scope);
      });
    }
  }

  it('admin implies read and write; read and write are independent', () => {
    expect(outcome(`Bearer ${TOKENS.admin}`, 'read')).toBe('ok');
    expect(outcome(`Bearer ${TOKENS.admin}`, 'write')).toBe('ok');
    expectForbidden(outcome(`Bearer ${TOKENS.write}`, 'read'), 'read');
    expectForbidden(outcome(`Bearer ${TOKENS.read}`, 'write'), 'write');
  });

  it('an unknown token gets 401 for every scope', () => {
    for (const scope of ['read', 'write', 'admin'] as Scope[]) expectUnauthenticated(outcome(`Bearer ${TOKENS.wrong}`, scope));
  });

  it('the SHA-256 of a token is not itself a token', () => {
    expectUnauthenticated(outcome(`Bearer ${sha256Hex(TOKENS.read)}`, 'read'));
  });

  it('a token file with no tokens refuses everything', () => {
    const empty = new TokenGate(parseTokenFile('{"tokens": []}'));
    expect(empty.enabled).toBe(true);
    expect(() => empty.check(`Bearer ${TOKENS.admin}`, 'read')).toThrow('missing or invalid bearer token');
  });

  it('the open gate lets everything through', () => {
    expect(OPEN_GATE.enabled).toBe(false);
    expect(() => OPEN_GATE.check('', 'admin')).not.toThrow();
  });
});

describe('Authorization header', () => {
  it.each([
    ['Bearer', `Bearer ${TOKENS.read}`],
    ['bearer (lower case)', `bearer ${TOKENS.read}`],
    ['BEARER (upper case)', `BEARER ${TOKENS.read}`],
    ['several spaces and a tab', `Bearer  \t ${TOKENS.read}`],
    ['surrounding spaces', `  Bearer ${TOKENS.read}  `],
  ])('accepts %s', (_name, header) => {
    expect(bearerToken(header)).toBe(TOKENS.read);
    expect(outcome(header, 'read')).toBe('ok');
  });

  it.each([
    ['an absent header', ''],
    ['the scheme alone', 'Bearer'],
    ['the scheme and a space', 'Bearer '],
    ['another scheme', `Basic ${Buffer.from(`u:${TOKENS.read}`).toString('base64')}`],
    ['a token without a scheme', TOKENS.read],
    ['no space after the scheme', `Bearer${TOKENS.read}`],
    ['two tokens', `Bearer ${TOKENS.read} ${TOKENS.read}`],
    ['two tokens separated by a comma', `Bearer ${TOKENS.read},${TOKENS.admin}`],
    ['a token with a non-ASCII character', `Bearer ${TOKENS.read}\u00e9`],
    ['a token with a control character', `Bearer ${TOKENS.read}\u0001`],
    ['a token with a trailing newline', `Bearer ${TOKENS.read}\n`],
    ['the token as a Bearer auth-param', `Bearer token=${TOKENS.read}`],
  ])('answers 401 for %s', (_name, header) => {
    const result = outcome(header, 'read');
    expectUnauthenticated(result);
    expectNoSecret((result as BlobstoreError).message + JSON.stringify((result as BlobstoreError).headers));
  });

  it('rejects a long header of two tokens (the pattern cannot backtrack: the token class excludes spaces)', () => {
    expect(bearerToken(`Bearer ${'a'.repeat(200_000)} ${'b'.repeat(200_000)}`)).toBeUndefined();
  });
});

describe('errors never contain token material', () => {
  it('401 and 403 messages and headers hold no token or digest', () => {
    const seen: string[] = [];
    for (const token of Object.values(TOKENS)) {
      for (const scope of ['read', 'write', 'admin'] as Scope[]) {
        const result = outcome(`Bearer ${token}`, scope);
        if (result !== 'ok') seen.push(result.message, JSON.stringify(result.headers), String(result.stack));
      }
    }
    expect(seen.length).toBeGreaterThan(10);
    expectNoSecret(seen.join('\n'));
  });
});

describe('token file', () => {
  const bad = (entries: unknown): string => {
    try {
      parseTokenFile(typeof entries === 'string' ? entries : JSON.stringify(entries));
    } catch (err) {
      expect(err).toBeInstanceOf(TokenFileError);
      return (err as Error).message;
    }
    throw new Error('expected a TokenFileError');
  };
  const entry = (fields: object): unknown => ({ tokens: [{ name: 'e', scopes: ['read'], ...fields }] });

  it('ignores a byte order mark', () => {
    expect(parseTokenFile(`\ufeff${JSON.stringify({ tokens: standardEntries() })}`)).toHaveLength(5);
    expect(bad('\ufeff{"tokens": [}')).toBe('not valid JSON: Expecting value (line 1, column 13)');
  });

  it('accepts hashed entries (either case of hex) and plain entries', () => {
    const entries = parseTokenFile(JSON.stringify({ tokens: standardEntries() }));
    expect(entries.map((e) => [e.name, e.plain])).toStrictEqual([
      ['reader', false], ['writer', false], ['admin', false], ['rw', false], ['plain', true],
    ]);
  });

  it.each([
    ['a truncated document', '{"tokens": [', 'not valid JSON: Expecting value (line 1, column 13)'],
    ['a trailing comma', `{"tokens": [{"name": "a", "token": "${TOKENS.read}",}]}`, 'not valid JSON: Illegal trailing comma before end of object (line 1, column 67)'],
    ['a bare word', `{"tokens": [${TOKENS.read}]}`, 'not valid JSON: Expecting value (line 1, column 13)'],
    ['a missing comma on line 3', `{"tokens": [\n  {"name": "a",\n   "token": "${TOKENS.read}" "scopes": []}]}`, 'not valid JSON: Expecting \',\' delimiter (line 3, column 45)'],
    ['NaN', '{"tokens": NaN}', 'not valid JSON: NaN or Infinity is not JSON'],
    ['an array at the top', [], 'expected a JSON object {"tokens": [...]}'],
    ['no tokens field', {}, '"tokens" must be an array'],
    ['an unknown top-level field', { tokens: [], keys: [] }, 'unknown top-level field "keys"'],
    ['an entry that is not an object', { tokens: ['x'] }, 'tokens[0]: expected an object'],
    ['a missing name', { tokens: [{ token: TOKENS.read, scopes: ['read'] }] }, 'tokens[0]: "name" must be a non-empty string'],
    ['neither sha256 nor token', entry({}), 'tokens[0] ("e"): give exactly one of "sha256" and "token"'],
    ['both sha256 and token', entry({ token: TOKENS.read, sha256: sha256Hex(TOKENS.read) }), 'give exactly one of'],
    ['a short sha256', entry({ sha256: sha256Hex(TOKENS.read).slice(0, 63) }), '"sha256" must be 64 hexadecimal digits'],
    ['a non-hex sha256', entry({ sha256: `${sha256Hex(TOKENS.read).slice(0, 63)}g` }), '"sha256" must be 64 hexadecimal digits'],
    ['an empty token', entry({ token: '' }), '"token" must be a non-empty string of visible ASCII'],
    ['a token with a space', entry({ token: `${TOKENS.read} x` }), '"token" must be a non-empty string of visible ASCII'],
    ['a numeric token', entry({ token: 12345678 }), '"token" must be a non-empty string'],
    ['an unknown field', entry({ token: TOKENS.read, sha265: 'x' }), 'unknown field "sha265"'],
    ['no scopes', { tokens: [{ name: 'e', token: TOKENS.read }] }, '"scopes" must be a non-empty array'],
    ['empty scopes', entry({ token: TOKENS.read, scopes: [] }), '"scopes" must be a non-empty array'],
    ['an unknown scope', entry({ token: TOKENS.read, scopes: ['read', 'delete'] }), 'unknown scope "delete"'],
    ['a token pasted as a scope', entry({ token: TOKENS.read, scopes: [TOKENS.admin] }), 'unknown scope (not shown: not a short word) (expected read, write, admin)'],
    ['a number as a scope', entry({ token: TOKENS.read, scopes: ['read', 7] }), 'unknown scope at scopes[1]'],
    ['a token pasted as a field name', { tokens: [{ name: 'e', token: TOKENS.read, scopes: ['read'], [TOKENS.admin]: true }] }, 'unknown field (not shown: not a short word)'],
    ['a duplicate name', { tokens: [{ name: 'a', token: TOKENS.read, scopes: ['read'] }, { name: 'a', token: TOKENS.write, scopes: ['read'] }] }, 'tokens[1]: name "a" is already used by tokens[0]'],
    ['the same token twice', { tokens: [{ name: 'a', token: TOKENS.read, scopes: ['read'] }, { name: 'b', sha256: sha256Hex(TOKENS.read), scopes: ['admin'] }] }, 'tokens[1] ("b"): same token as tokens[0] ("a")'],
  ])('rejects %s with a message naming the problem and no token', (_name, input, message) => {
    const text = bad(input);
    expect(text).toContain(message);
    expectNoSecret(text);
  });

  it('reading a missing file names the problem', () => {
    expect(() => readTokenFile('/nonexistent/tokens.json')).toThrow('cannot read it (ENOENT: no such file or directory)');
  });
});

describe('startAuth (what a node does)', () => {
  /** A capturing logger; `lines` are "<level>: <msg>" and `text()` the whole JSON output. */
  const capture = () => {
    const c = captureLogger();
    return { out: c.log, text: c.text, get lines() { return c.lines.map((l) => `${l.level}: ${l.msg}`); }, records: c.lines };
  };

  it('is the open gate without a token file, and does not listen for SIGHUP', () => {
    const before = process.listenerCount('SIGHUP');
    const auth = startAuth({ authTokensFile: '' }, capture().out);
    expect(auth.gate).toBe(OPEN_GATE);
    expect(process.listenerCount('SIGHUP')).toBe(before);
  });

  it('a malformed file is a ConfigError naming the file and the problem', () => {
    const { dir, path } = tokenFile([{ name: 'x', sha256: 'nothex', scopes: ['read'] }]);
    files.push(dir);
    const err = (() => {
      try {
        startAuth({ authTokensFile: path }, capture().out);
      } catch (e) {
        return e as Error;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(`AuthTokensFile ${path}: tokens[0] ("x"): "sha256" must be 64 hexadecimal digits (the SHA-256 of the token; see blobstore auth hash-token)`);
  });

  it('logs the number of tokens, reloads on SIGHUP, keeps the old tokens when the new file is bad', () => {
    const { dir, path } = tokenFile([{ name: 'r', sha256: sha256Hex(TOKENS.read), scopes: ['read'] }]);
    files.push(dir);
    const c = capture();
    const auth = startAuth({ authTokensFile: path }, c.out);
    try {
      expect(c.lines).toStrictEqual([`info: bearer tokens required; 1 token loaded from ${path}`]);
      expect(c.records[0]).toMatchObject({ component: 'auth', tokens: 1, file: path });
      expect(() => auth.gate.check(`Bearer ${TOKENS.read}`, 'read')).not.toThrow();
      expect(() => auth.gate.check(`Bearer ${TOKENS.admin}`, 'read')).toThrow('missing or invalid');

      writeTokenFile(path, [{ name: 'a', sha256: sha256Hex(TOKENS.admin), scopes: ['admin'] }, { name: 'w', token: TOKENS.write, scopes: ['write'] }]);
      process.emit('SIGHUP', 'SIGHUP');
      expect(c.lines[1]).toBe(`info: SIGHUP: 2 tokens loaded from ${path}`);
      expect(() => auth.gate.check(`Bearer ${TOKENS.admin}`, 'admin')).not.toThrow();
      expect(() => auth.gate.check(`Bearer ${TOKENS.write}`, 'write')).not.toThrow();
      expect(() => auth.gate.check(`Bearer ${TOKENS.read}`, 'read')).toThrow('missing or invalid');

      writeFileSync(path, `{"tokens": [{"name": "x", "token": "${TOKENS.plain}", "scopes": ["read"]},]}`);
      process.emit('SIGHUP', 'SIGHUP');
      expect(c.lines[2]).toMatch(/^error: SIGHUP: AuthTokensFile .*: not valid JSON: Illegal trailing comma before end of array \(line 1, column \d+\); keeping the 2 tokens loaded before$/);
      expect(() => auth.gate.check(`Bearer ${TOKENS.admin}`, 'admin')).not.toThrow();
      expect(() => auth.gate.check(`Bearer ${TOKENS.plain}`, 'read')).toThrow('missing or invalid');

      rmSync(path);
      process.emit('SIGHUP', 'SIGHUP');
      expect(c.lines[3]).toContain('cannot read it (ENOENT');
      expect(() => auth.gate.check(`Bearer ${TOKENS.admin}`, 'admin')).not.toThrow();
      expectNoSecret(c.text());
    } finally {
      auth.close();
    }
    process.emit('SIGHUP', 'SIGHUP');
    expect(c.lines).toHaveLength(4);
  });

  it('warns when plain tokens sit in a file others can read', () => {
    const dir = tokenFile().dir;
    files.push(dir);
    const path = join(dir, 'open.json');
    writeFileSync(path, JSON.stringify({ tokens: standardEntries() }), { mode: 0o644 });
    const c = capture();
    startAuth({ authTokensFile: path }, c.out).close();
    expect(c.lines[1]).toMatch(/^warn: .*holds 1 plain token\(s\) and is readable by group or others \(mode 644\)/);
    expectNoSecret(c.text());
  });
});
