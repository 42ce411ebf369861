/**
 * A column stream queues the bytes it receives in reusable 1 MiB slabs (src/util/slabs.ts,
 * src/cluster/column-stream.ts): a piece one slab holds is lent as a view, and a slab is reused
 * only once the queue and every taker are done with it.
 */
import { describe, expect, it } from 'vitest';
import { type ColumnLimits, localColumn, remoteColumn } from '../../src/cluster/column-stream.js';
import type { BytesTarget } from '../../src/cluster/transport/http-fetcher.js';
import type { PeerRef, PeerTransport } from '../../src/cluster/transport/peer-transport.js';
import { Slabs } from '../../src/util/slabs.js';
import type { ShardMeta } from '../../src/blob/shard.js';
import type { ByteRange, ChunkSink, LocalStore } from '../../src/service/local-store.js';

const MiB = 1024 * 1024;

describe('Slabs', () => {
  it('reuses a slab only once every view lent of it is released', () => {
    const slabs = new Slabs(64, 4);
    const a = slabs.take();
    const view = a.subarray(8, 16);
    slabs.ref(view);
    slabs.release(a);
    expect(slabs.kept).toBe(0);
    expect(slabs.take().buffer).not.toBe(a.buffer);
    slabs.release(view);
    expect(slabs.kept).toBe(1);
    expect(slabs.take().buffer).toBe(a.buffer);
  });

  it('ignores buffers that are not slabs, and keeps at most `keep` free', () => {
    const slabs = new Slabs(64, 1);
    slabs.release(Buffer.alloc(64));
    const [a, b] = [slabs.take(), slabs.take()];
    slabs.release(a);
    slabs.release(b);
    slabs.release(b);
    expect(slabs.kept).toBe(1);
  });

  it('prefault readies the slabs kept, touched, once; take hands them out before allocating', async () => {
    const slabs = new Slabs(8192, 3);
    const taken = slabs.take();
    await slabs.prefault();
    expect(slabs.kept).toBe(3);
    const ready = [slabs.take(), slabs.take(), slabs.take()];
    expect(slabs.kept).toBe(0);
    await slabs.prefault();
    expect(slabs.kept, 'a second call readies nothing more').toBe(0);
    for (const s of ready) {
      expect(s.length).toBe(8192);
      expect(s.every((b) => b === 0)).toBe(true);
      expect(s.buffer).not.toBe(taken.buffer);
    }
    // A slab released after it is full again is left to the collector.
    for (const s of ready) slabs.release(s);
    slabs.release(taken);
    expect(slabs.kept).toBe(3);
  });
});

/** A column of `bytes` held "here", read back in chunks of `chunkBytes` (the engine reuses its chunk buffer). */
function storeOf(column: Buffer, chunkBytes: number): LocalStore {
  return {
    read: async (_meta: unknown, sink: ChunkSink, range?: ByteRange) => {
      const scratch = Buffer.alloc(chunkBytes);
      let index = 0;
      for (let at = range!.start; at < range!.end; at += chunkBytes) {
        const n = Math.min(chunkBytes, range!.end - at);
        column.copy(scratch, 0, at, at + n);
        await sink(scratch.subarray(0, n), index++);
        scratch.fill(0xee); // a buffer reused at once: the stream must have copied it
      }
    },
  } as unknown as LocalStore;
}

const meta = { id: Buffer.alloc(16), shard: { index: 2 } } as unknown as ShardMeta;

describe('a column stream', () => {
  const column = Buffer.alloc(5 * MiB + 12_345);
  for (let i = 0; i + 4 <= column.length; i += 4) column.writeUInt32LE(Math.imul(i, 0x9e3779b1) >>> 0, i);

  it('hands out the bytes in order, a piece one slab holds as a view of it, and gets the slabs back', async () => {
    const slabs = new Slabs(MiB, 64);
    const limits: ColumnLimits = { timeoutMs: 10_000, startBytes: 3 * MiB, queueBytes: 3 * MiB, slabs };
    const start = 1000;
    const stream = localColumn(storeOf(column, 300_000), meta, start, column.length, limits, () => undefined);
    const pieces: Buffer[] = [];
    const slabsSeen = new Set<ArrayBufferLike>();
    const first = MiB - start; // the rest of the first slab's MiB, then whole MiBs: each within one slab
    for (let at = start, length = first; at < column.length; at += length, length = Math.min(MiB, column.length - at)) {
      const piece = await stream.take(length);
      slabsSeen.add(piece.buffer);
      pieces.push(Buffer.from(piece));
      expect(piece.length).toBe(length);
      slabs.release(piece);
    }
    expect(Buffer.concat(pieces).equals(column.subarray(start))).toBe(true);
    stream.close();
    // Six pieces through a few slabs (the queue's 3 MiB and the one lent), each a view of one;
    // every slab came back for the next read.
    expect(pieces).toHaveLength(6);
    expect(slabsSeen.size).toBeLessThanOrEqual(5);
    expect(slabs.kept).toBe(slabsSeen.size);
  });

  it('a column held here whose checksum is not the one its store computed answers as a column, then fails every take without reading; one whose checksum is, reads', async () => {
    const limits: ColumnLimits = { timeoutMs: 10_000, startBytes: MiB, queueBytes: MiB, slabs: new Slabs(MiB, 8) };
    let reads = 0;
    const store = { read: async () => void reads++ } as unknown as LocalStore;
    const held = { ...meta, checksum: Buffer.alloc(32, 1) } as unknown as ShardMeta;
    let wrong = 0;
    const refused = localColumn(store, held, 0, MiB, limits, () => undefined, { checksum: Buffer.alloc(32, 2), onWrong: () => wrong++ });
    expect(await refused.ready).toBe('column');
    await expect(refused.take(MiB)).rejects.toMatchObject({ kind: 'corruption', message: expect.stringContaining('not the one its store computed') });
    expect([wrong, reads]).toEqual([1, 0]);
    refused.close();
    const taken = localColumn(storeOf(column, MiB), held, 0, MiB, limits, () => undefined, { checksum: Buffer.alloc(32, 1), onWrong: () => wrong++ });
    expect((await taken.take(MiB)).equals(column.subarray(0, MiB))).toBe(true);
    expect(wrong).toBe(1);
    taken.close();
  });

  it('a piece across two slabs is a copy of its own; a view held by its taker is not reused', async () => {
    const slabs = new Slabs(MiB, 64);
    const limits: ColumnLimits = { timeoutMs: 10_000, startBytes: 8 * MiB, queueBytes: 8 * MiB, slabs };
    const stream = localColumn(storeOf(column, MiB), meta, 0, 3 * MiB, limits, () => undefined);
    const held = await stream.take(MiB / 2); // a view, not released
    const across = await stream.take(MiB); // half of slab 0, half of slab 1
    const rest = await stream.take(MiB + MiB / 2 - MiB); // the rest of slab 1
    expect(held.equals(column.subarray(0, MiB / 2))).toBe(true);
    expect(across.equals(column.subarray(MiB / 2, MiB + MiB / 2))).toBe(true);
    expect(rest.equals(column.subarray(MiB + MiB / 2, 2 * MiB))).toBe(true);
    slabs.release(across);
    slabs.release(rest);
    stream.close();
    // Slab 0 is still lent (held): only the others came back, and held's bytes are untouched.
    const again = localColumn(storeOf(Buffer.alloc(3 * MiB, 0x55), MiB), meta, 0, 3 * MiB, limits, () => undefined);
    for (let i = 0; i < 3; i++) slabs.release(await again.take(MiB));
    again.close();
    expect(held.equals(column.subarray(0, MiB / 2))).toBe(true);
  });

  it('queues a small window before the read takes anything, and opens it by what the read takes', async () => {
    const slabs = new Slabs(MiB, 64);
    const limits: ColumnLimits = { timeoutMs: 10_000, startBytes: 2 * MiB, queueBytes: 5 * MiB, slabs };
    let pushed = 0;
    const counting: LocalStore = {
      read: async (_meta: unknown, sink: ChunkSink, range?: ByteRange) => {
        let index = 0;
        for (let at = range!.start; at < range!.end; at += MiB / 4) {
          const n = Math.min(MiB / 4, range!.end - at);
          pushed += n;
          await sink(column.subarray(at, at + n), index++);
        }
      },
    } as unknown as LocalStore;
    /** What the producer has pushed once it waits (each push hands over a quarter MiB). */
    const settled = async (): Promise<number> => {
      for (let last = -1; last !== pushed;) {
        last = pushed;
        await new Promise((r) => setTimeout(r, 5));
      }
      return pushed;
    };
    const stream = localColumn(counting, meta, 0, column.length, limits, () => undefined);
    // Nothing taken: the stream stops at its 2 MiB start window.
    expect(await settled()).toBe(2 * MiB);
    // 1 MiB taken: 1 MiB left queued, a window of 3 MiB: 2 MiB more come.
    slabs.release(await stream.take(MiB));
    expect(await settled()).toBe(4 * MiB);
    // 2 MiB more taken: the window would be 5 MiB, its most: the rest of the column (5 MiB + 12,345) comes.
    slabs.release(await stream.take(MiB));
    slabs.release(await stream.take(MiB));
    expect(await settled()).toBe(column.length);
    const rest: Buffer[] = [];
    for (let at = 3 * MiB; at < column.length; at += MiB) {
      const piece = await stream.take(Math.min(MiB, column.length - at));
      rest.push(Buffer.from(piece));
      slabs.release(piece);
    }
    expect(Buffer.concat(rest).equals(column.subarray(3 * MiB))).toBe(true);
    stream.close();
  });

  it('a stream closed while the kernel reads into its slab does not give that slab to another read', async () => {
    const slabs = new Slabs(MiB, 64);
    const limits: ColumnLimits = { timeoutMs: 10_000, startBytes: 2 * MiB, queueBytes: 2 * MiB, slabs };
    // A holder whose read into the lent region is still pending when the read closes the stream.
    let target: BytesTarget | undefined;
    const transport = {
      readColumn: (_peer: PeerRef, _id: Buffer, _index: number, _range: ByteRange, to: BytesTarget) => {
        target = to;
        return new Promise<void>(() => undefined);
      },
    } as unknown as PeerTransport;
    const stream = remoteColumn(transport, { nodeId: 'n2', address: '127.0.0.1:1' } as PeerRef, Buffer.alloc(16), 0, 0, MiB, limits);
    const inFlight = target!.region();
    stream.close();
    // Another column's read takes a slab and fills it; then the pending read lands in its region.
    const other = localColumn(storeOf(column, MiB), meta, 0, MiB, limits, () => undefined);
    const piece = await other.take(MiB);
    inFlight.fill(0xee);
    expect(piece.equals(column.subarray(0, MiB))).toBe(true);
    slabs.release(piece);
    other.close();
  });

  it('tells how its holder answered: with the column (its first bytes), refused (it failed first), or silent within the timeout', async () => {
    const slabs = new Slabs(MiB, 8);
    const limits: ColumnLimits = { timeoutMs: 200, startBytes: MiB, queueBytes: MiB, slabs };
    const peer = { nodeId: 'n2', address: '127.0.0.1:1' } as PeerRef;
    const holder = (answer: (to: BytesTarget) => Promise<void>): PeerTransport =>
      ({ readColumn: (_p: PeerRef, _id: Buffer, _i: number, _r: ByteRange, to: BytesTarget) => answer(to) }) as unknown as PeerTransport;
    const answering = remoteColumn(holder(async (to) => {
      to.region().fill(7, 0, 10);
      await to.filled(10);
    }), peer, Buffer.alloc(16), 0, 0, 10, limits);
    expect(await answering.ready).toBe('column');
    expect((await answering.take(10)).every((b) => b === 7)).toBe(true);
    answering.close();
    const refusing = remoteColumn(holder(() => Promise.reject(new Error('answered 404 Not Found'))), peer, Buffer.alloc(16), 0, 0, 10, limits);
    expect(await refusing.ready).toBe('refused');
    refusing.close();
    const started = performance.now();
    const silent = remoteColumn(holder(() => new Promise<void>(() => undefined)), peer, Buffer.alloc(16), 0, 0, 10, limits);
    expect(await silent.ready).toBe('silent');
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    silent.close();
    const local = localColumn(storeOf(column, MiB), meta, 0, MiB, limits, () => undefined);
    expect(await local.ready).toBe('column');
    local.close();
  });
});
