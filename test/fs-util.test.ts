/** mkdirDurable: every directory it creates has its entry fsynced in its parent; an existing one costs nothing. */
import { constants, promises as fsp, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { mkdirDurable } from '../src/engine/fs-util.js';
import { tempDir } from './helpers/node-process.js';

/** The directories opened for an fsync while `fn` runs. */
async function dirsSynced(fn: () => Promise<void>): Promise<string[]> {
  const opened: string[] = [];
  const open = fsp.open.bind(fsp);
  const spy = vi.spyOn(fsp, 'open').mockImplementation(async (path, flags, mode) => {
    const handle = await open(path, flags, mode);
    if (typeof flags === 'number' && (flags & constants.O_DIRECTORY) !== 0) opened.push(String(path));
    return handle;
  });
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return opened;
}

describe('mkdirDurable', () => {
  it('creates the missing levels and fsyncs the parent of each new one', async () => {
    const root = tempDir();
    const leaf = join(root, 'shards', 'ab');
    const synced = await dirsSynced(() => mkdirDurable(leaf));
    expect(statSync(leaf).isDirectory()).toBe(true);
    expect(synced).toStrictEqual([dirname(leaf), root]);
  });

  it('does nothing more for a directory that exists', async () => {
    const root = tempDir();
    await fsp.mkdir(join(root, 'blobs', 'cd'), { recursive: true });
    expect(await dirsSynced(() => mkdirDurable(join(root, 'blobs', 'cd')))).toStrictEqual([]);
    // A new prefix under an existing parent: only that parent.
    expect(await dirsSynced(() => mkdirDurable(join(root, 'blobs', 'ef')))).toStrictEqual([join(root, 'blobs')]);
  });
});
