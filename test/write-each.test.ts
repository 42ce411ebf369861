/**
 * writeEach (src/engine/fs-util.ts, the addon's pwriteEach): the parts land one after another
 * from the position, whatever memory they are views of (pool chunks in shared memory, slices at an
 * offset, empty parts); a failed write rejects with Node's errno code. With an O_DIRECT descriptor
 * of the file, the 4 KiB-aligned parts go through it (past the page cache), the rest through the
 * buffered one, and the file reads back the same.
 */
import { constants as fsc, promises as fsp, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { batchWriter, directWriteBytes, writeEach, writeError } from '../src/engine/fs-util.js';
import { native } from '../src/ec/native.js';
import { tempDir } from './helpers/node-process.js';
import { directRefused, pageCacheUnseen, residentBytes, residentSoon } from './helpers/page-cache.js';

const MiB = 1024 * 1024;

/** Why the O_DIRECT cases cannot run here (the temp dir's file system, fincore), or '' when they can. */
const noDirect = await directRefused();
const noPageCache = noDirect || (await pageCacheUnseen());
const skipped = (why: string): string => (why ? ` - skipped: ${why}` : '');

function patterned(length: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

describe('writeEach', () => {
  it('is the addon’s pwriteEach when the addon is built', () => {
    expect(typeof native().pwriteEach).toBe('function');
  });

  it('writes the parts one after another from the position', async () => {
    const path = join(tempDir('write-each'), 'f');
    const shared = Buffer.from(new SharedArrayBuffer(MiB));
    patterned(MiB, 1).copy(shared);
    const sliced = patterned(3 * MiB, 2).subarray(MiB + 7, 2 * MiB + 7);
    const parts = [shared, Buffer.alloc(0), sliced, patterned(1000, 3)];
    const handle = await fsp.open(path, 'w+');
    try {
      await handle.write(Buffer.from('head'), 0, 4, 0);
      await writeEach(handle, parts, 4);
      await writeEach(handle, [patterned(10, 4)], 4 + 2 * MiB + 1000);
    } finally {
      await handle.close();
    }
    expect(readFileSync(path).equals(Buffer.concat([Buffer.from('head'), ...parts, patterned(10, 4)]))).toBe(true);
  });

  it('rejects with the errno code of a failed write', async () => {
    const path = join(tempDir('write-each'), 'ro');
    await fsp.writeFile(path, 'x');
    const handle = await fsp.open(path, 'r');
    try {
      await expect(writeEach(handle, [patterned(100, 5)], 0)).rejects.toMatchObject({ code: 'EBADF', syscall: 'write' });
    } finally {
      await handle.close();
    }
  });
});

describe('writeEach with an O_DIRECT descriptor', () => {
  it.skipIf(noDirect !== '')(`writes the aligned parts through it, from aligned memory or not, and the others through the buffered one${skipped(noDirect)}`, async () => {
    const path = join(tempDir('write-each'), 'direct');
    const handle = await fsp.open(path, 'w+');
    const direct = await fsp.open(path, fsc.O_WRONLY | fsc.O_DIRECT);
    // Whole chunks (a pool chunk, a view at an odd offset: neither need be 4 KiB-aligned memory),
    // then a part of odd length, then one that starts off the 4 KiB grid.
    const shared = Buffer.from(new SharedArrayBuffer(MiB));
    patterned(MiB, 7).copy(shared);
    const odd = patterned(2 * MiB + 3, 8).subarray(3);
    const tail = patterned(5000, 9);
    const after = patterned(8192, 10);
    const before = directWriteBytes();
    try {
      await writeEach(handle, [shared, odd, tail], 0, direct);
      await writeEach(handle, [after], 3 * MiB + 5000, direct);
    } finally {
      await direct.close();
      await handle.close();
    }
    expect(directWriteBytes() - before).toBe(3 * MiB);
    expect(readFileSync(path).equals(Buffer.concat([shared, odd, tail, after]))).toBe(true);
  });
});

describe('writeEach on a closed file', () => {
  it('rejects with EBADF, as a write on a closed FileHandle does', async () => {
    const handle = await fsp.open(join(tempDir('write-each'), 'closed'), 'w');
    await handle.close();
    await expect(writeEach(handle, [patterned(10, 6)], 0)).rejects.toMatchObject({ code: 'EBADF' });
  });
});

/** One batch through batchWriter (each write its own writer and token): resolves the errno it answers. */
function writeBatch(fd: number, parts: Buffer[], position: number, directFd: number, readBack: [number, number, number] = [0, 0, 0]): Promise<number> {
  return new Promise((resolve) => {
    const writer = batchWriter((token, errno) => {
      expect(token).toBe(7);
      resolve(errno);
    });
    expect(writer).not.toBeNull();
    const triples = parts.flatMap((p) => [p, 0, p.length]);
    // A reused array may be longer than the batch: the count says how much of it is the batch's.
    triples.push(patterned(10, 99), 0, 10);
    const queued = writer!.write(7, fd, triples, parts.length, position, directFd, ...readBack);
    if (queued !== 0) resolve(queued);
  });
}

describe('batchWriter (the addon’s writeBatchTo: a log batch, then fdatasync, in one job, answered by a callback)', () => {
  it.skipIf(noDirect !== '')(`writes whole 4 KiB blocks from an aligned position through the O_DIRECT descriptor, gathered from unaligned parts${skipped(noDirect)}`, async () => {
    const path = join(tempDir('write-batch'), 'seg');
    const handle = await fsp.open(path, 'w+');
    const direct = await fsp.open(path, fsc.O_WRONLY | fsc.O_DIRECT);
    // Records side by side in two arena chunks and a PAD: 3 parts, none aligned in memory or length,
    // 1.5 MiB + 4 KiB in all (longer than the 1 MiB bounce buffer).
    const first = patterned(MiB + 5, 11).subarray(5);
    const second = patterned(MiB / 2 + 3000, 12).subarray(1000, MiB / 2 + 3000);
    const pad = patterned(2096, 13);
    const later = patterned(4096, 14);
    const before = directWriteBytes();
    try {
      expect(await writeBatch(handle.fd, [first, second, pad], 8192, direct.fd)).toBe(0);
      expect(await writeBatch(handle.fd, [later], 8192 + MiB + MiB / 2 + 4096, direct.fd)).toBe(0);
    } finally {
      await direct.close();
      await handle.close();
    }
    expect(directWriteBytes() - before).toBe(MiB + MiB / 2 + 8192);
    const file = readFileSync(path);
    expect(file.subarray(0, 8192).equals(Buffer.alloc(8192))).toBe(true);
    expect(file.subarray(8192).equals(Buffer.concat([first, second, pad, later]))).toBe(true);
  });

  it('writes a batch that is not whole blocks through the buffered descriptor, and without a direct one', async () => {
    const path = join(tempDir('write-batch'), 'seg');
    const handle = await fsp.open(path, 'w+');
    const direct = await fsp.open(path, fsc.O_WRONLY | fsc.O_DIRECT).catch(() => undefined);
    const parts = [patterned(4000, 15), patterned(200, 16)];
    const before = directWriteBytes();
    try {
      expect(await writeBatch(handle.fd, parts, 0, direct?.fd ?? -1)).toBe(0); // 4200 bytes: not whole blocks
      expect(await writeBatch(handle.fd, [patterned(4096, 17)], 8192, -1)).toBe(0); // no direct descriptor
      expect(await writeBatch(handle.fd, [patterned(100, 18)], 4201, direct?.fd ?? -1)).toBe(0); // off the grid
    } finally {
      await direct?.close();
      await handle.close();
    }
    expect(directWriteBytes()).toBe(before);
    const want = Buffer.alloc(8192 + 4096);
    Buffer.concat(parts).copy(want, 0);
    patterned(100, 18).copy(want, 4201);
    patterned(4096, 17).copy(want, 8192);
    expect(readFileSync(path).equals(want)).toBe(true);
  });

  it.skipIf(noPageCache !== '')(`reads back the range it is given after its own write and sync, and readBack alone does too (pages past the cache come back)${skipped(noPageCache)}`, async () => {
    const path = join(tempDir('write-batch'), 'seg');
    const handle = await fsp.open(path, 'w+');
    const direct = await fsp.open(path, fsc.O_WRONLY | fsc.O_DIRECT);
    const blocks = [patterned(4096, 21), patterned(4096, 22), patterned(4096, 23)];
    const writer = batchWriter(() => undefined)!;
    try {
      expect(await writeBatch(handle.fd, [blocks[0]!, blocks[1]!], 0, direct.fd)).toBe(0);
      // Written past the page cache: none of it is there.
      expect(residentBytes(path)).toBe(0);
      // The next batch takes the first two blocks' read-back along.
      expect(await writeBatch(handle.fd, [blocks[2]!], 8192, direct.fd, [handle.fd, 0, 8192])).toBe(0);
      expect(await residentSoon(path, 8192)).toBe(8192);
      expect(writer.readBack(handle.fd, 8192, 4096)).toBe(0);
      expect(await residentSoon(path, 12288)).toBe(12288);
      expect(readFileSync(path).equals(Buffer.concat(blocks))).toBe(true);
    } finally {
      await direct.close();
      await handle.close();
    }
  });

  it('queues nothing for arguments it cannot take (a range past its buffer, more triples than given)', () => {
    const writer = batchWriter(() => expect.unreachable('nothing was queued'))!;
    const buf = patterned(100, 20);
    expect(writer.write(1, 0, [buf, 50, 51], 1, 0, -1)).toBe(22); // EINVAL
    expect(writer.write(1, 0, [buf, 0, 10], 2, 0, -1)).toBe(22);
  });

  it('answers the errno of a failed write', async () => {
    const path = join(tempDir('write-batch'), 'ro');
    await fsp.writeFile(path, 'x');
    const handle = await fsp.open(path, 'r');
    try {
      expect(writeError(await writeBatch(handle.fd, [patterned(4096, 19)], 0, -1))).toMatchObject({ code: 'EBADF', syscall: 'write' });
    } finally {
      await handle.close();
    }
  });
});
