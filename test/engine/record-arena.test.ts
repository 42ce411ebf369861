/**
 * The log's record arena (src/engine/record-arena.ts): records are placed as they lie on disk, a
 * run of them is one range, and a chunk is reused only once every record in it is written.
 */
import { describe, expect, it } from 'vitest';
import { type ArenaRecord, RecordArena } from '../../src/engine/record-arena.js';
import { HEADER_BYTES, recordLength } from '../../src/engine/record.js';

/** The ranges rangesInto gives, as views (what the writer writes). */
function ranges(records: ArenaRecord[]): Buffer[] {
  const triples: (Buffer | number)[] = [];
  const n = RecordArena.rangesInto(records, records.length, triples, 0);
  const out: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const start = triples[3 * i + 1] as number;
    out.push((triples[3 * i] as Buffer).subarray(start, start + (triples[3 * i + 2] as number)));
  }
  return out;
}

function record(labels: string, dataLength: number): ArenaRecord {
  const l = Buffer.from(labels);
  return { labels: l, dataLength, length: recordLength(l.length, dataLength), chunk: undefined, at: 0 };
}

describe('RecordArena', () => {
  it('places labels, data and zeroed padding after the header room, back to back', () => {
    const arena = new RecordArena(4096);
    const a = record('{"k":"v"}', 13);
    const b = record('', 5);
    arena.place(a, Buffer.alloc(13, 0xaa));
    arena.place(b, Buffer.alloc(5, 0xbb));
    expect(a.chunk).toBe(b.chunk);
    expect(b.at).toBe(a.at + a.length);
    const buf = a.chunk!.buf;
    expect(buf.subarray(a.at + HEADER_BYTES, a.at + HEADER_BYTES + 9).toString()).toBe('{"k":"v"}');
    expect(buf.subarray(a.at + HEADER_BYTES + 9, a.at + HEADER_BYTES + 22).every((x) => x === 0xaa)).toBe(true);
    // 104 + 9 + 13 = 126, padded to 128 with zeros.
    expect(a.length).toBe(128);
    expect(buf.subarray(a.at + 126, a.at + 128).every((x) => x === 0)).toBe(true);
    expect(buf.subarray(b.at + HEADER_BYTES, b.at + HEADER_BYTES + 5).every((x) => x === 0xbb)).toBe(true);
    expect(ranges([a, b])).toEqual([buf.subarray(a.at, b.at + b.length)]);
  });

  it('copies only dataLength bytes of a longer view, and takes the data from a view it may not keep', () => {
    const arena = new RecordArena(4096);
    const r = record('', 4);
    const scratch = Buffer.from([1, 2, 3, 4, 5, 6]);
    arena.place(r, scratch);
    scratch.fill(9);
    expect([...r.chunk!.buf.subarray(r.at + HEADER_BYTES, r.at + HEADER_BYTES + 4)]).toEqual([1, 2, 3, 4]);
  });

  it('copies the bytes of an ArrayBuffer (a body as uWS hands it over) without a view of it', () => {
    const arena = new RecordArena(4096);
    const r = record('', 5);
    const body = new Uint8Array([7, 8, 9, 10, 11]);
    arena.place(r, body.buffer);
    body.fill(0);
    expect([...r.chunk!.buf.subarray(r.at + HEADER_BYTES, r.at + HEADER_BYTES + 5)]).toEqual([7, 8, 9, 10, 11]);
  });

  it('ranges are triples written from the offset asked for, in a reused array longer than they are', () => {
    const arena = new RecordArena(4096);
    const a = record('', 100);
    arena.place(a, Buffer.alloc(100));
    const triples: (Buffer | number)[] = ['x' as unknown as number, 0, 0, 0, 0, 0, 0, 0, 0];
    expect(RecordArena.rangesInto([a], 1, triples, 3)).toBe(1);
    expect(triples.slice(3, 6)).toEqual([a.chunk!.buf, a.at, a.length]);
    expect(triples.length).toBe(9);
  });

  it('a record that does not fit goes to the next chunk; the runs are one range per chunk', () => {
    const arena = new RecordArena(1024);
    const rs = [record('', 300), record('', 300), record('', 300), record('', 300)];
    for (const r of rs) arena.place(r, Buffer.alloc(300));
    expect(rs[0]!.chunk).toBe(rs[1]!.chunk);
    expect(rs[2]!.chunk).not.toBe(rs[1]!.chunk);
    expect(ranges(rs).map((p) => p.length)).toEqual([rs[0]!.length * 2, rs[2]!.length * 2]);
  });

  it('a record larger than a chunk gets a chunk of its own size', () => {
    const arena = new RecordArena(1024);
    const big = record('', 5000);
    arena.place(big, Buffer.alloc(5000, 1));
    expect(big.chunk!.buf.length).toBe(big.length);
    expect(ranges([big])[0]!.length).toBe(big.length);
  });

  it('reuses a chunk only once every record placed in it is released', () => {
    const arena = new RecordArena(2048);
    const [a, b] = [record('', 300), record('', 300)];
    arena.place(a, Buffer.alloc(300, 1));
    arena.place(b, Buffer.alloc(300, 2));
    const chunk = a.chunk!;
    arena.release(a);
    expect(a.chunk).toBeUndefined();
    const c = record('', 300);
    arena.place(c, Buffer.alloc(300, 3));
    // b still waits: c goes after it (in the same chunk, which has room) or elsewhere, never over it.
    expect(c.chunk !== b.chunk || c.at >= b.at + b.length).toBe(true);
    expect(c.chunk).toBe(b.chunk);
    arena.release(b);
    arena.release(c);
    arena.release(c); // twice is once
    const d = record('', 300);
    arena.place(d, Buffer.alloc(300, 4));
    expect(d.chunk).toBe(chunk);
    expect(d.at).toBe(0);
  });

  it('a full chunk whose records are all written comes back as the next one', () => {
    const arena = new RecordArena(1024);
    const first = [record('', 300), record('', 300), record('', 300)];
    for (const r of first) arena.place(r, Buffer.alloc(300));
    const chunkA = first[0]!.chunk!;
    const chunkB = first[2]!.chunk!;
    for (const r of first) arena.release(r);
    // chunkB is current and empty: records start over in it; chunkA waits in the free list.
    const next = [record('', 300), record('', 300), record('', 300)];
    for (const r of next) arena.place(r, Buffer.alloc(300));
    expect(next[0]!.chunk).toBe(chunkB);
    expect(next[2]!.chunk).toBe(chunkA);
  });
});
