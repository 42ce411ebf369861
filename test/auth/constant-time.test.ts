import { beforeEach, describe, expect, it } from 'vitest';
import { TokenGate } from '../../src/auth/tokens.js';
import { parseTokenFile } from '../../src/auth/token-file.js';
import { sha256Hex } from './helpers.js';

/**
 * The comparison path: the gate hashes the presented token and folds a word-by-word comparison
 * with every entry's digest into the result, whichever entry matches and also when none does (no
 * early exit). The packed digests are watched through proxies that record every word read.
 */

const tokens = ['first-token-aaaaaaaa', 'second-token-bbbbbbbb', 'third-token-cccccccc', 'fourth-token-dddddddd', 'fifth-token-eeeeeeee'];
const gate = new TokenGate(parseTokenFile(JSON.stringify({
  tokens: tokens.map((t, i) => ({ name: `t${i}`, sha256: sha256Hex(t), scopes: i === 4 ? ['admin'] : ['read'] })),
})));

const read = { words: new Set<number>(), scopes: new Set<number>() };
function watched<T extends Uint32Array | Int32Array>(array: T, seen: Set<number>): T {
  return new Proxy(array, {
    get(target, key) {
      if (typeof key === 'string' && /^\d+$/.test(key)) seen.add(Number(key));
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
const internals = gate as unknown as { packed: { words: Uint32Array; scopes: Int32Array } };
internals.packed = { words: watched(internals.packed.words, read.words), scopes: watched(internals.packed.scopes, read.scopes) };

beforeEach(() => {
  read.words.clear();
  read.scopes.clear();
});

describe('constant-time comparison', () => {
  it.each([
    ['the first entry matches', tokens[0]!, 'read', true],
    ['the last entry matches', tokens[4]!, 'read', true],
    ['a middle entry matches but lacks the scope', tokens[2]!, 'write', false],
    ['no entry matches', 'unknown-token-ffffffff', 'read', false],
  ] as const)('reads every word of all 5 digests when %s', (_name, token, scope, passes) => {
    const check = (): void => gate.check(`Bearer ${token}`, scope);
    if (passes) expect(check).not.toThrow();
    else expect(check).toThrow();
    expect([...read.words].sort((a, b) => a - b)).toStrictEqual(Array.from({ length: 40 }, (_, i) => i));
    expect([...read.scopes].sort((a, b) => a - b)).toStrictEqual([0, 1, 2, 3, 4]);
  });

  it('compares nothing for a header that carries no bearer token', () => {
    expect(() => gate.check('Basic abc', 'read')).toThrow('missing or invalid bearer token');
    expect(read.words.size).toBe(0);
  });

  it('accepts no digest that differs from an entry in a single bit, in any word', () => {
    // Entries built from digests one bit away from a known token's digest: none may let it in.
    const digest = Buffer.from(sha256Hex('near-miss-token'), 'hex');
    const near = Array.from({ length: 256 }, (_, bit) => {
      const d = Buffer.from(digest);
      d[bit >> 3]! ^= 1 << (bit & 7);
      return { name: `n${bit}`, sha256: d.toString('hex'), scopes: ['admin'] };
    });
    const nearGate = new TokenGate(parseTokenFile(JSON.stringify({ tokens: near })));
    expect(() => nearGate.check('Bearer near-miss-token', 'read')).toThrow('missing or invalid bearer token');
    const exact = new TokenGate(parseTokenFile(JSON.stringify({ tokens: [...near, { name: 'x', sha256: digest.toString('hex'), scopes: ['read'] }] })));
    expect(() => exact.check('Bearer near-miss-token', 'read')).not.toThrow();
    expect(() => exact.check('Bearer near-miss-token', 'write')).toThrow('token lacks the write scope');
  });
});

describe('the cache of accepted tokens', () => {
  const file = (names: string[]): ReturnType<typeof parseTokenFile> =>
    parseTokenFile(JSON.stringify({ tokens: names.map((t, i) => ({ name: `c${i}`, sha256: sha256Hex(t), scopes: ['read'] })) }));

  it('answers a token accepted before without hashing and comparing again', () => {
    const cached = new TokenGate(file(['cache-token-1', 'cache-token-2']));
    const words = new Set<number>();
    const inner = cached as unknown as { packed: { words: Uint32Array; scopes: Int32Array } };
    inner.packed = { words: watched(inner.packed.words, words), scopes: inner.packed.scopes };
    cached.check('Bearer cache-token-2', 'read');
    expect(words.size).toBe(16);
    words.clear();
    cached.check('Bearer cache-token-2', 'read');
    expect(words.size).toBe(0);
    expect(() => cached.check('Bearer cache-token-2', 'write')).toThrow('token lacks the write scope');
  });

  it('never keeps a refused token, nor one that differs from a kept one in its last character', () => {
    const cached = new TokenGate(file(['cache-token-1']));
    cached.check('Bearer cache-token-1', 'read');
    for (let i = 0; i < 3; i++) expect(() => cached.check('Bearer cache-token-X', 'read')).toThrow('missing or invalid bearer token');
    expect(() => cached.check('Bearer cache-token-', 'read')).toThrow('missing or invalid bearer token');
    expect(() => cached.check('Bearer cache-token-11', 'read')).toThrow('missing or invalid bearer token');
  });

  it('forgets everything on a reload: a removed token stops working at once', () => {
    const cached = new TokenGate(file(['cache-token-1', 'cache-token-2']));
    cached.check('Bearer cache-token-1', 'read');
    cached.replace(file(['cache-token-2']));
    expect(() => cached.check('Bearer cache-token-1', 'read')).toThrow('missing or invalid bearer token');
    expect(() => cached.check('Bearer cache-token-2', 'read')).not.toThrow();
  });
});
