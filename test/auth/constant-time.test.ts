import { beforeEach, describe, expect, it, vi } from 'vitest';
import { sha256Hex } from './helpers.js';

/**
 * The comparison path: the gate hashes the presented token and runs crypto.timingSafeEqual against
 * every entry's digest, whichever entry matches and also when none does (no early exit).
 */

const compared = vi.hoisted(() => ({ calls: [] as [Buffer, Buffer][] }));
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return {
    ...actual,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
      compared.calls.push([Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)]);
      return actual.timingSafeEqual(a, b);
    },
  };
});

const { TokenGate } = await import('../../src/auth/tokens.js');
const { parseTokenFile } = await import('../../src/auth/token-file.js');

const tokens = ['first-token-aaaaaaaa', 'second-token-bbbbbbbb', 'third-token-cccccccc', 'fourth-token-dddddddd', 'fifth-token-eeeeeeee'];
const gate = new TokenGate(parseTokenFile(JSON.stringify({
  tokens: tokens.map((t, i) => ({ name: `t${i}`, sha256: sha256Hex(t), scopes: i === 4 ? ['admin'] : ['read'] })),
})));

beforeEach(() => {
  compared.calls.length = 0;
});

describe('constant-time comparison', () => {
  it.each([
    ['the first entry matches', tokens[0]!, 'read', true],
    ['the last entry matches', tokens[4]!, 'read', true],
    ['a middle entry matches but lacks the scope', tokens[2]!, 'write', false],
    ['no entry matches', 'unknown-token-ffffffff', 'read', false],
  ] as const)('compares the SHA-256 digest with all 5 entries when %s', (_name, token, scope, passes) => {
    const check = (): void => gate.check(`Bearer ${token}`, scope);
    if (passes) expect(check).not.toThrow();
    else expect(check).toThrow();
    expect(compared.calls).toHaveLength(5);
    const presented = sha256Hex(token);
    for (const [entry, digest] of compared.calls) {
      expect(entry).toHaveLength(32);
      expect(digest.toString('hex')).toBe(presented);
    }
    expect(compared.calls.map(([entry]) => entry.toString('hex'))).toStrictEqual(tokens.map(sha256Hex));
  });

  it('compares nothing for a header that carries no bearer token', () => {
    expect(() => gate.check('Basic abc', 'read')).toThrow('missing or invalid bearer token');
    expect(compared.calls).toHaveLength(0);
  });
});
