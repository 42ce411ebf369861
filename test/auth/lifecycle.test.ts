import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, runCli, tempDir } from '../helpers/node-process.js';
import { TOKENS, sha256Hex, writeTokenFile } from './helpers.js';
import { type AuthNode, authorization, call, expectDenied, expectNoTokenIn, startAuthNode } from './node.js';
import { logLines } from '../helpers/log.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The token file over a node's life: a bad file stops the start (exit 2), SIGHUP re-reads it
 * without a restart (a bad file then keeps the old tokens), and the operator helpers
 * `blobstore auth hash-token` and `blobstore auth check`.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = tempDir('blobstore-auth-');
  dirs.push(dir);
  return dir;
}

/** The message of the one fatal log line a failed start writes (in the log's JSON format). */
function fatalLine(stdout: string): string {
  const fatal = logLines(stdout).filter((l) => l.level === 'fatal');
  expect(fatal, stdout).toHaveLength(1);
  return fatal[0]!.msg;
}

describe('a bad token file at start', () => {
  it.each([
    ['malformed JSON', `{"tokens": [{"name": "a", "token": "${TOKENS.plain}", "scopes": ["read"]},]}`, 'not valid JSON: Illegal trailing comma before end of array (line 1, column'],
    ['a bad digest', JSON.stringify({ tokens: [{ name: 'ci', sha256: sha256Hex(TOKENS.read).slice(1), scopes: ['read'] }] }), 'tokens[0] ("ci"): "sha256" must be 64 hexadecimal digits'],
    ['an unknown scope', JSON.stringify({ tokens: [{ name: 'ci', token: TOKENS.read, scopes: ['root'] }] }), 'tokens[0] ("ci"): unknown scope "root"'],
  ])('(%s) stops the node with exit code 2 and a message naming the file and the problem', async (_name, text, problem) => {
    const dir = scratch();
    const path = join(dir, 'tokens.json');
    writeFileSync(path, text);
    const r = await runCli(['serve', '--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '', '--auth-tokens-file', path]);
    expect(r.code).toBe(2);
    expect(fatalLine(r.stdout)).toContain(`cannot start: AuthTokensFile ${path}: ${problem}`);
    expect(r.stdout).not.toContain('listening');
    expectNoTokenIn(r.stdout + r.stderr);
  });

  it('an unreadable file stops the node with exit code 2', async () => {
    const dir = scratch();
    const path = join(dir, 'missing.json');
    const r = await runCli(['serve', '--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0', '--metrics-addr', '', '--grpc-addr', '', '--auth-tokens-file', path]);
    expect(r.code).toBe(2);
    expect(fatalLine(r.stdout)).toContain(`cannot start: AuthTokensFile ${path}: cannot read it (ENOENT: no such file or directory)`);
  });
});

describe('SIGHUP re-reads the token file', () => {
  let n: AuthNode;
  beforeAll(async () => {
    n = await startAuthNode({ entries: [{ name: 'reader', sha256: sha256Hex(TOKENS.read), scopes: ['read'] }] });
  });
  afterAll(async () => {
    await n?.stop();
  });

  const list = () => `${n.node.url}/v1/blobs`;
  /** Sends SIGHUP and waits for the node's next auth line. */
  async function hangup(): Promise<string> {
    const reloads = (): string[] => logLines(n.node.output()).filter((l) => l.component === 'auth' && l.signal === 'SIGHUP').map((l) => `${l.level}: ${l.msg}`);
    const seen = reloads().length;
    n.node.child.kill('SIGHUP');
    await waitFor(() => reloads().length > seen, { what: () => `a reload line after SIGHUP:\n${n.node.output()}`, timeoutMs: 10_000, pollMs: 25 });
    return reloads().at(-1)!;
  }

  it('adds a token without a restart', async () => {
    expectDenied(await call(list(), 'GET', authorization('admin')), 401, 'read', 'b', 'GET');
    writeTokenFile(n.tokensPath, [
      { name: 'reader', sha256: sha256Hex(TOKENS.read), scopes: ['read'] },
      { name: 'admin', sha256: sha256Hex(TOKENS.admin), scopes: ['admin'] },
    ]);
    expect(await hangup()).toBe(`info: SIGHUP: 2 tokens loaded from ${n.tokensPath}`);
    expect((await call(list(), 'GET', authorization('admin'))).status).toBe(200);
    expect((await call(list(), 'GET', authorization('read'))).status).toBe(200);
  });

  it('removes a token and changes scopes without a restart', async () => {
    writeTokenFile(n.tokensPath, [{ name: 'admin', sha256: sha256Hex(TOKENS.admin), scopes: ['write'] }]);
    expect(await hangup()).toBe(`info: SIGHUP: 1 token loaded from ${n.tokensPath}`);
    expectDenied(await call(list(), 'GET', authorization('read')), 401, 'read', 'b', 'GET');
    expectDenied(await call(list(), 'GET', authorization('admin')), 403, 'read', 'b', 'GET');
  });

  it('keeps the tokens loaded before when the new file is malformed, and says why', async () => {
    writeFileSync(n.tokensPath, `{"tokens": [{"name": "p", "token": "${TOKENS.plain}", "scopes": ["read"]}`);
    const line = await hangup();
    expect(line).toBe(`error: SIGHUP: AuthTokensFile ${n.tokensPath}: not valid JSON: Expecting ',' delimiter (line 1, column 89); keeping the 1 token loaded before`);
    expectDenied(await call(list(), 'GET', authorization('plain')), 401, 'read', 'b', 'GET');
    expectDenied(await call(list(), 'GET', authorization('admin')), 403, 'read', 'b', 'GET');
    expect((await call(`${n.node.url}/healthz`, 'GET')).status).toBe(200);
  });

  it('keeps the tokens when the file is gone', async () => {
    rmSync(n.tokensPath);
    expect(await hangup()).toContain('cannot read it (ENOENT: no such file or directory); keeping the 1 token loaded before');
    expectDenied(await call(list(), 'GET', authorization('admin')), 403, 'read', 'b', 'GET');
  });

  it('the node is still the same process and wrote no token or digest', async () => {
    expect(n.node.child.exitCode).toBeNull();
    expect(await n.node.stop()).toBe(0);
    expectNoTokenIn(n.node.output());
  });
});

/** Runs `blobstore auth ...` with `input` on stdin. */
function runAuth(args: string[], input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, 'auth', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe('blobstore auth hash-token', () => {
  it('prints the token-file entry with the SHA-256 of the token read on stdin (a trailing newline is not part of it)', async () => {
    const r = await runAuth(['hash-token', '--name', 'ci', '--scopes', 'read,write'], `${TOKENS.readWrite}\n`);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toStrictEqual({ name: 'ci', sha256: sha256Hex(TOKENS.readWrite), scopes: ['read', 'write'] });
    expect(r.stdout).not.toContain(TOKENS.readWrite);
  });

  it('defaults to the name "token" and the read scope', async () => {
    const r = await runAuth(['hash-token'], TOKENS.read);
    expect(JSON.parse(r.stdout)).toStrictEqual({ name: 'token', sha256: sha256Hex(TOKENS.read), scopes: ['read'] });
  });

  it.each([
    ['an empty token', [], ''],
    ['a token with a space', [], 'two words'],
    ['two lines', [], 'line1\nline2\n'],
    ['an unknown scope', ['--scopes', 'read,root'], TOKENS.read],
  ])('refuses %s with exit code 2 and without echoing it', async (_name, args, input) => {
    const r = await runAuth(['hash-token', ...args], input);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    if (input !== '') expect(r.stderr).not.toContain(input.trim().split('\n')[0]);
  });

  it('its output, put in a token file, lets the token through', async () => {
    const entry = JSON.parse((await runAuth(['hash-token', '--name', 'made', '--scopes', 'admin'], TOKENS.admin)).stdout) as object;
    const n = await startAuthNode({ entries: [entry] });
    try {
      expect((await call(`${n.node.url}/v1/cluster/state`, 'GET', authorization('admin'))).status).not.toBe(401);
      expect((await call(`${n.node.url}/v1/blobs`, 'GET', authorization('admin'))).status).toBe(200);
    } finally {
      await n.stop();
    }
  });
});

describe('blobstore auth check', () => {
  it('validates a token file as a node loads it', async () => {
    const dir = scratch();
    const path = join(dir, 'tokens.json');
    writeTokenFile(path, [{ name: 'a', sha256: sha256Hex(TOKENS.admin), scopes: ['admin'] }, { name: 'p', token: TOKENS.plain, scopes: ['read'] }]);
    const ok = await runCli(['auth', 'check', path]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(`${path}: 2 token(s) OK (1 plain; sha256 entries are recommended)\n`);
    writeFileSync(path, '{"tokens": [{"name": "a"}]}');
    const bad = await runCli(['auth', 'check', path]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`blobstore: ${path}: tokens[0] ("a"): give exactly one of "sha256" and "token"\n`);
  });
});
