/**
 * A fresh machine installs and builds without node-gyp downloading Node headers: no package of
 * package-lock.json that `npm ci` must install needs a node-gyp build (each with native code ships
 * prebuilt binaries, or is optional), and native/ compiles against the headers of the Node that
 * runs, or says clearly that they are missing.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from './helpers/node-process.js';

interface LockEntry {
  optional?: boolean;
  hasInstallScript?: boolean;
}

const PLATFORM = `${process.platform}-${process.arch}`;

/** Whether the installed package at `dir` can load without a node-gyp build on this platform. */
function prebuilt(dir: string): boolean {
  if (existsSync(join(dir, 'prebuilds', PLATFORM))) return true;
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { optionalDependencies?: Record<string, string> };
  // Prebuilt binaries as optional packages per platform (lmdb's @lmdb/lmdb-linux-x64, ...).
  return Object.keys(pkg.optionalDependencies ?? {}).some((name) => name.endsWith(`-${PLATFORM}`) && existsSync(join(REPO, 'node_modules', name)));
}

describe('npm ci', () => {
  it('installs no package that needs a node-gyp build (native code only with prebuilt binaries, or optional)', () => {
    const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const needsBuild: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === '' || !entry.hasInstallScript || entry.optional) continue;
      const dir = join(REPO, path);
      expect(existsSync(join(dir, 'package.json')), `${path} is in the lockfile but not installed`).toBe(true);
      if (existsSync(join(dir, 'binding.gyp')) && !prebuilt(dir)) needsBuild.push(path);
    }
    expect(needsBuild).toStrictEqual([]);
  });
});

describe('native/ and the Node headers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'blobstore-node-prefix-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A `node` that answers every -p with `prefix`/include/node, as one installed under `prefix` would. */
  function fakeNode(prefix: string): string {
    const path = join(dir, `node-${Math.random().toString(36).slice(2)}`);
    writeFileSync(path, `#!/bin/sh\necho '${join(prefix, 'include/node')}'\n`);
    chmodSync(path, 0o755);
    return path;
  }

  /** The compile command make would run for the binding, with these variables. */
  function bindingCompile(vars: string[]): { status: number | null; out: string } {
    const r = spawnSync('make', ['-s', '-C', join(REPO, 'native'), '-n', '-B', 'build/Release/binding.o', ...vars], { encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  }

  it('compiles against <prefix>/include/node of the node that runs (process.execPath/../../include/node)', () => {
    const prefix = join(dir, 'prefix');
    mkdirSync(join(prefix, 'include/node'), { recursive: true });
    writeFileSync(join(prefix, 'include/node/node_api.h'), '');
    const r = bindingCompile([`NODE=${fakeNode(prefix)}`]);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain(`-I${join(prefix, 'include/node')} `);
  });

  it('falls back to /usr/include/node when that node has no headers beside it', () => {
    const r = bindingCompile([`NODE=${fakeNode(join(dir, 'bare'))}`]);
    expect(r.out).toContain('-I/usr/include/node ');
  });

  it('stops with a message that says what to install when no headers exist', () => {
    const r = spawnSync('make', ['-s', '-C', join(REPO, 'native'), 'node-headers', `NODE_INCLUDE=${join(dir, 'none')}`], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/no Node headers \(node_api\.h\) in .*none: install the headers of the Node that runs/);
  });
});
