/**
 * A column read whose bytes the reader checks (src/cluster/column-check.ts): the holder sends the
 * chunks' chaining values first, and each 1 MiB chunk is checked before any of it is handed on.
 */
import { describe, expect, it } from 'vitest';
import { type ColumnLimits, remoteColumn } from '../../src/cluster/column-stream.js';
import { layoutChecks, readerChecks, valuesPrefix } from '../../src/cluster/column-check.js';
import { chunkValuesOf } from '../../src/engine/blob-reader.js';
import { chunkCvOf } from '../../src/hash/blake3-tree.js';
import type { BytesTarget } from '../../src/cluster/transport/http-fetcher.js';
import type { PeerRef, PeerTransport } from '../../src/cluster/transport/peer-transport.js';
import { Slabs } from '../../src/util/slabs.js';
import { patternBytes } from '../helpers/blobs.js';
import { blake3 } from '../../src/hash/blake3.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** A holder that sends `prefix` then `bytes` into the reader's slabs, `piece` bytes at a time; the header it was asked with. */
function holder(prefix: Buffer, bytes: Buffer, piece = 100 * KiB): { transport: PeerTransport; asked: boolean[] } {
  const asked: boolean[] = [];
  const transport = {
    async readColumn(_peer: PeerRef, _id: Buffer, _index: number, _range: unknown, to: BytesTarget, chunkValues: boolean): Promise<void> {
      asked.push(chunkValues);
      const body = Buffer.concat([prefix, bytes]);
      for (let at = 0; at < body.length;) {
        const region = to.region();
        const n = Math.min(region.length, piece, body.length - at);
        body.copy(region, 0, at, at + n);
        at += n;
        await to.filled(n);
      }
    },
  } as unknown as PeerTransport;
  return { transport, asked };
}

function limits(): ColumnLimits {
  return { timeoutMs: 5000, startBytes: 2 * MiB, queueBytes: 8 * MiB, slabs: new Slabs(MiB, 16) };
}

/** Chunks hashed once taken, with this, count here. */
let takenHashes = 0;
const cv = (chunk: Buffer, offset: number, withRoot: boolean): Promise<Buffer> => {
  takenHashes++;
  return Promise.resolve(chunkCvOf(chunk, offset, withRoot));
};

/** The checksum the holder's record keeps for the column (the prefix carries it). */
const HELD = blake3(Buffer.from('the column as held'));

interface Open {
  values?: Buffer | 'holder';
  corrupt?: (offset: number, length: number) => void;
  expected?: { checksum: Buffer; onWrong: () => void };
  held?: Buffer;
  /** The holder's sends (100 KiB). */
  piece?: number;
}

/** Whether the reader hashes the chunks' parts as they arrive (chunk digests in line) or each chunk once taken (in the pool). */
const HASHING = [{ hashing: 'as the bytes arrive', onArrival: true }, { hashing: 'once each chunk is taken', onArrival: false }];

describe.each(HASHING)('a column read the reader checks, hashed $hashing', ({ onArrival }) => {
  function open(column: Buffer, start: number, end: number, opts: Open = {}) {
    const range = { start, end };
    const values = opts.values === 'holder' ? undefined : (opts.values ?? chunkValuesOf(column.subarray(start, end), start));
    const { transport, asked } = holder(valuesPrefix(values, range, opts.held ?? HELD), column.subarray(start, end), opts.piece);
    const l = limits();
    const stream = remoteColumn(transport, { nodeId: 'n2', address: '127.0.0.1:1' } as PeerRef, Buffer.alloc(16), 1, start, end, l, {
      chunkCv: cv, onCorrupt: opts.corrupt ?? (() => undefined), columnBytes: column.length, onArrival, ...(opts.expected ? { expected: opts.expected } : {}),
    });
    return { stream, asked, slabs: l.slabs };
  }

  it('is asked with the chunk values header and hands on the column\'s bytes, whole chunks as views of the slabs', async () => {
    const column = patternBytes(2 * MiB + 300 * KiB, 31);
    const { stream, asked, slabs } = open(column, 0, column.length);
    const pieces = [await stream.take(MiB), await stream.take(MiB), await stream.take(300 * KiB)];
    expect(asked).toEqual([true]);
    expect(Buffer.concat(pieces).equals(column)).toBe(true);
    for (const p of pieces) slabs.release(p);
    stream.close();
    expect(slabs.kept).toBeGreaterThan(0);
  });

  it('serves takes smaller than a chunk (64 KiB cells) from the checked chunk, from a range that starts a chunk in', async () => {
    const column = patternBytes(3 * MiB, 32);
    const { stream, slabs } = open(column, MiB, 3 * MiB);
    const pieces: Buffer[] = [];
    for (let at = MiB; at < 3 * MiB; at += 64 * KiB) pieces.push(await stream.take(64 * KiB));
    expect(Buffer.concat(pieces).equals(column.subarray(MiB))).toBe(true);
    for (const p of pieces) slabs.release(p);
    stream.close();
  });

  it('fails a chunk that does not match its value before any of it goes, and every take after it; the holder is asked to check it', async () => {
    const column = patternBytes(3 * MiB, 33);
    const values = chunkValuesOf(column, 0);
    const damaged = Buffer.from(column);
    damaged[MiB + 4321]! ^= 0x10;
    const corrupt: [number, number][] = [];
    const { stream } = open(damaged, 0, column.length, { values, corrupt: (offset, length) => corrupt.push([offset, length]) });
    expect((await stream.take(MiB)).equals(column.subarray(0, MiB))).toBe(true);
    await expect(stream.take(512 * KiB)).rejects.toMatchObject({ kind: 'corruption' });
    expect(corrupt).toEqual([[MiB, MiB]]);
    await expect(stream.take(512 * KiB)).rejects.toMatchObject({ kind: 'corruption' });
    stream.close();
  });

  it('refuses a column whose checksum is not the one its store computed before any of its bytes, and says so; takes one whose checksum is', async () => {
    const column = patternBytes(MiB + 9, 36);
    let wrong = 0;
    const refused = open(column, 0, column.length, { expected: { checksum: blake3(Buffer.from('what the store wrote')), onWrong: () => wrong++ } }).stream;
    await expect(refused.take(MiB)).rejects.toMatchObject({ kind: 'corruption', message: expect.stringContaining('not the one its store computed') });
    await expect(refused.take(9)).rejects.toMatchObject({ kind: 'corruption' });
    expect(wrong).toBe(1);
    refused.close();
    const taken = open(column, 0, column.length, { values: 'holder', expected: { checksum: HELD, onWrong: () => wrong++ } }).stream;
    expect((await taken.take(MiB)).equals(column.subarray(0, MiB))).toBe(true);
    expect(wrong).toBe(1);
    taken.close();
  });

  it('checks a column of one chunk against the column\'s checksum too: another column\'s whole file (its own chaining value with it) is refused before any byte', async () => {
    for (const bytes of [300 * KiB, MiB]) {
      const column = patternBytes(bytes, 37);
      const other = patternBytes(bytes, 38);
      // The holder's record names this column's checksum; its file is the other's, consistent in itself.
      let corrupt = 0;
      const swapped = open(other, 0, bytes, { held: blake3(column), corrupt: () => corrupt++ }).stream;
      await expect(swapped.take(bytes), `${bytes} bytes`).rejects.toMatchObject({ kind: 'corruption' });
      expect(corrupt).toBe(1);
      swapped.close();
      const right = open(column, 0, bytes, { held: blake3(column) }).stream;
      expect((await right.take(bytes)).equals(column)).toBe(true);
      right.close();
    }
  });

  it('checks chunks sent in pieces of every size, a damaged byte in a chunk\'s first part, its middle or its short last part caught', async () => {
    const column = patternBytes(2 * MiB + 70 * KiB + 3, 39);
    const values = chunkValuesOf(column, 0);
    for (const piece of [1000, 7 * KiB, 64 * KiB, 64 * KiB + 1, 3 * MiB]) {
      takenHashes = 0;
      const whole = open(column, 0, column.length, { piece });
      const pieces = [await whole.stream.take(MiB), await whole.stream.take(MiB), await whole.stream.take(70 * KiB + 3)];
      expect(Buffer.concat(pieces).equals(column), `pieces of ${piece}`).toBe(true);
      expect(takenHashes, `pieces of ${piece}: chunks hashed once taken`).toBe(onArrival ? 0 : 3);
      whole.stream.close();
      for (const at of [5, MiB + 512 * KiB + 17, 2 * MiB + 64 * KiB + 1]) {
        const damaged = Buffer.from(column);
        damaged[at]! ^= 0x01;
        const corrupt: number[] = [];
        const { stream } = open(damaged, 0, column.length, { values, piece, corrupt: (offset) => corrupt.push(offset) });
        const chunk = Math.floor(at / MiB);
        for (let c = 0; c < chunk; c++) expect((await stream.take(MiB)).equals(column.subarray(c * MiB, (c + 1) * MiB))).toBe(true);
        await expect(stream.take(chunk === 2 ? 70 * KiB + 3 : MiB), `byte ${at}, pieces of ${piece}`).rejects.toMatchObject({ kind: 'corruption' });
        expect(corrupt).toEqual([chunk * MiB]);
        stream.close();
      }
    }
  });

  it('takes the bytes as they come from a holder that checked them itself (a file without chaining values)', async () => {
    const column = patternBytes(MiB + 5, 34);
    const { stream } = open(column, 0, column.length, { values: 'holder' });
    expect((await stream.take(MiB)).equals(column.subarray(0, MiB))).toBe(true);
    expect((await stream.take(5)).equals(column.subarray(MiB))).toBe(true);
    stream.close();
  });

  it('refuses a take that crosses a chunk\'s end, and a body without the values', async () => {
    const column = patternBytes(2 * MiB, 35);
    const crossing = open(column, 0, column.length).stream;
    expect((await crossing.take(MiB - 10)).length).toBe(MiB - 10);
    await expect(crossing.take(20)).rejects.toMatchObject({ kind: 'internal' });
    crossing.close();
    const { transport } = holder(Buffer.alloc(0), column);
    const bare = remoteColumn(transport, { nodeId: 'n2', address: '127.0.0.1:1' } as PeerRef, Buffer.alloc(16), 1, 0, column.length, limits(), { chunkCv: cv, onCorrupt: () => undefined, columnBytes: column.length, onArrival });
    await expect(bare.take(MiB)).rejects.toMatchObject({ kind: 'corruption' });
    bare.close();
  });
});

describe('a column read the reader checks', () => {
  it('is used only for ranges on the chunks and shards that divide 1 MiB or are a multiple of it', () => {
    expect(readerChecks({ start: 0, end: 3 * MiB + 7 }, 3 * MiB + 7)).toBe(true);
    expect(readerChecks({ start: MiB, end: 2 * MiB }, 3 * MiB)).toBe(true);
    expect(readerChecks({ start: MiB, end: 2 * MiB - 1 }, 3 * MiB)).toBe(false);
    expect(readerChecks({ start: 5, end: MiB }, 3 * MiB)).toBe(false);
    expect([64 * KiB, MiB, 16 * MiB].map(layoutChecks)).toEqual([true, true, true]);
    expect([3 * 64 * KiB, MiB + MiB / 2].map(layoutChecks)).toEqual([false, false]);
  });
});
