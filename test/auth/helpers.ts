/** Token files and credentials shared by the auth tests. */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/node-process.js';

export const sha256Hex = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** Distinctive tokens, so a leak in any output can be searched for. */
export const TOKENS = {
  read: 'tkR-read-4f1c9a2e7b5d3086aa11',
  write: 'tkW-write-9b3e6d0c2a8f4175bb22',
  admin: 'tkA-admin-1d7f3b9e5c0a2864cc33',
  readWrite: 'tkRW-rdwr-6a2c8e4f0b1d3957dd44',
  plain: 'tkP-plain-3e5a7c9b1d0f2468ee55',
  wrong: 'tkX-wrong-8c6e4a2f0d9b7135ff66',
} as const;

export type TokenName = keyof typeof TOKENS;

/** The standard file: hashed entries for read, write, admin, read+write; a plain read entry. */
export function standardEntries(): object[] {
  return [
    { name: 'reader', sha256: sha256Hex(TOKENS.read), scopes: ['read'] },
    { name: 'writer', sha256: sha256Hex(TOKENS.write), scopes: ['write'] },
    { name: 'admin', sha256: sha256Hex(TOKENS.admin).toUpperCase(), scopes: ['admin'] },
    { name: 'rw', sha256: sha256Hex(TOKENS.readWrite), scopes: ['read', 'write'] },
    { name: 'plain', token: TOKENS.plain, scopes: ['read'] },
  ];
}

export function writeTokenFile(path: string, entries: object[]): void {
  writeFileSync(path, JSON.stringify({ tokens: entries }, null, 2), { mode: 0o600 });
}

export function tokenFile(entries: object[] = standardEntries()): { dir: string; path: string } {
  const dir = tempDir('blobstore-auth-');
  const path = join(dir, 'tokens.json');
  writeTokenFile(path, entries);
  return { dir, path };
}

/** Every secret a test output must not contain: each token and its digest. */
export function secrets(): string[] {
  return Object.values(TOKENS).flatMap((t) => [t, sha256Hex(t), sha256Hex(t).toUpperCase()]);
}

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
