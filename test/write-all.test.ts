/**
 * Writes that finish: a pwritev that writes fewer bytes than asked (POSIX allows it; a filling
 * disk does it) goes on from the byte where it stopped, in the middle of a part or at its edge,
 * and one that writes nothing fails with EIO instead of looping.
 */
import { promises as fsp, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writevAll } from '../src/util/write-all.js';
import { patternBytes } from './helpers/blobs.js';
import { tempDir } from './helpers/node-process.js';

/** A file handle whose writev writes at most `most` bytes per call (through the real file). */
function shortWriting(fd: number, most: number, calls: number[]): fsp.FileHandle {
  return {
    writev: async (parts: Uint8Array[], position: number) => {
      let left = most;
      let at = position;
      for (const p of parts) {
        if (left === 0) break;
        const n = Math.min(left, p.length);
        writeSync(fd, p, 0, n, at);
        at += n;
        left -= n;
      }
      calls.push(at - position);
      return { bytesWritten: at - position, buffers: parts };
    },
  } as unknown as fsp.FileHandle;
}

describe('writevAll', () => {
  const parts = [patternBytes(1000, 1), patternBytes(0, 2), patternBytes(2500, 3), patternBytes(7, 4)];
  const whole = Buffer.concat(parts);

  for (const most of [1, 999, 1000, 1001, 3500, whole.length]) {
    it(`writes every part at its place when each call writes at most ${most} bytes`, async () => {
      const path = join(tempDir(), 'f');
      const handle = await fsp.open(path, 'w+');
      try {
        await handle.write(Buffer.from('head'), 0, 4, 0);
        const calls: number[] = [];
        await writevAll(shortWriting(handle.fd, most, calls), parts, 4);
        expect(calls.reduce((a, b) => a + b, 0)).toBe(whole.length);
        expect(calls.length).toBe(Math.ceil(whole.length / most));
      } finally {
        await handle.close();
      }
      expect(readFileSync(path).equals(Buffer.concat([Buffer.from('head'), whole]))).toBe(true);
    });
  }

  it('fails with EIO when a call writes nothing', async () => {
    const path = join(tempDir(), 'f');
    const handle = await fsp.open(path, 'w+');
    try {
      await expect(writevAll(shortWriting(handle.fd, 0, []), parts, 0)).rejects.toMatchObject({ code: 'EIO', syscall: 'write' });
    } finally {
      await handle.close();
    }
  });
});
