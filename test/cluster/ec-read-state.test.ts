/**
 * A degraded EC read rebuilds stripe-wide (src/cluster/ec-read-state.ts, row-rebuild.ts): each
 * surviving column is streamed once over the read's rows, for the read and the rebuild together,
 * and each row is reconstructed once for all of its missing data cells, instead of k cells fetched
 * per missing cell. The columns here are served from memory, so the test counts what the read
 * asks for.
 */
import { describe, expect, it } from 'vitest';
import { CELL_BYTES, StripeLayout } from '../../src/ec/layout.js';
import { encodeRows, memorySource } from '../../src/ec/striper.js';
import { type ColumnSource, type EcBlob, type Holders, piecesOf, ReadState } from '../../src/cluster/ec-read-state.js';
import type { ColumnStream } from '../../src/cluster/column-stream.js';
import type { BlobMeta } from '../../src/blob/meta.js';
import type { ByteRange } from '../../src/service/local-store.js';

const K = 4;
const M = 2;
/** Not a multiple of the cell: rows of a stripe end short. */
const SHARD_BYTES = 2.5 * CELL_BYTES;
/** Two whole stripes and a short third. */
const BLOB_BYTES = 2 * K * SHARD_BYTES + 1_234_567;

async function columnsOf(data: Buffer, layout: StripeLayout): Promise<Buffer[]> {
  const columns = Array.from({ length: layout.shards }, () => Buffer.alloc(layout.columnBytes));
  for await (const row of encodeRows(memorySource(data), layout)) row.cells.forEach((cell, i) => cell.copy(columns[i]!, row.columnOffset));
  return columns;
}

/** Columns served from memory; counts the streams opened and bytes sent per column, and single-cell fetches. */
class MemoryColumns implements ColumnSource {
  readonly opened = new Map<number, number>();
  readonly sent = new Map<number, number>();
  cellFetches = 0;
  rebuiltRows = 0;

  constructor(
    private readonly columns: Buffer[],
    /** Column index -> bytes it sends in this read before it fails (per stream). */
    private readonly failAfter = new Map<number, number>(),
    /** Column index -> how many opens find it not held (dropped as corrupt, say) before it is held again (repair stored it). */
    private readonly absentFor = new Map<number, number>(),
  ) {}

  openColumn(_blob: EcBlob, _node: string, index: number, start: number, end: number): ColumnStream | undefined {
    const absent = this.absentFor.get(index) ?? 0;
    if (absent > 0) {
      this.absentFor.set(index, absent - 1);
      return undefined;
    }
    this.opened.set(index, (this.opened.get(index) ?? 0) + 1);
    let at = start;
    let closed = false;
    return {
      // A column that fails before its first byte refuses (it is not held there).
      ready: Promise.resolve(this.failAfter.get(index) === 0 ? 'refused' : 'column'),
      take: (length) => {
        if (closed) return Promise.reject(new Error('closed'));
        const limit = this.failAfter.get(index);
        if (limit !== undefined && at - start + length > limit) return Promise.reject(new Error(`column ${index} failed`));
        if (at + length > end) return Promise.reject(new Error(`column ${index}: take past the stream's end`));
        const bytes = this.columns[index]!.subarray(at, at + length);
        at += length;
        this.sent.set(index, (this.sent.get(index) ?? 0) + length);
        return Promise.resolve(bytes);
      },
      close: () => {
        closed = true;
      },
    };
  }

  fetchRange(_blob: EcBlob, _node: string, index: number, offset: number, length: number): Promise<Buffer> {
    this.cellFetches++;
    this.sent.set(index, (this.sent.get(index) ?? 0) + length);
    return Promise.resolve(Buffer.from(this.columns[index]!.subarray(offset, offset + length)));
  }

  forget(): void {}
  /** Buffers lent by take() and not yet released (by their memory, as slabs are counted). */
  readonly lent = new Set<ArrayBufferLike>();
  take(length: number): Buffer {
    const b = Buffer.alloc(length);
    this.lent.add(b.buffer);
    return b;
  }
  release(bytes: Buffer): void {
    this.lent.delete(bytes.buffer);
  }
  /** Columns reported missing, and how often one was reported out of place. */
  readonly missing: number[] = [];
  unplacedReports = 0;
  noteMissing(_blob: EcBlob, indices: number[]): void {
    this.missing.push(...indices);
  }
  unplaced(): void {
    this.unplacedReports++;
  }
  fetched(): void {}
  reconstructed(): void {
    this.rebuiltRows++;
  }
}

const BLOB: EcBlob = { meta: { id: Buffer.alloc(32), policy: 5, size: BLOB_BYTES } as BlobMeta, shardBytes: SHARD_BYTES };

/**
 * The range read as EcReader reads it: pieces in order, `ahead` of them in flight. `placed`: the
 * holders are where the ring places the columns, and the read goes on once every data column it
 * needs answered (open()).
 */
async function read(source: ColumnSource, layout: StripeLayout, holders: Holders, range: ByteRange, { ahead = 8, placed = false } = {}): Promise<Buffer> {
  const pieces = piecesOf(layout, range);
  const state = new ReadState(source, BLOB, layout, holders, pieces, placed);
  if (placed) expect(await state.open()).toStrictEqual({ whole: true, silent: [] });
  const inflight: Promise<Buffer>[] = [];
  const start = (j: number): void => {
    const p = state.piece(pieces[j]!);
    p.catch(() => undefined);
    inflight[j % ahead] = p;
  };
  for (let j = 0; j < Math.min(pieces.length, ahead); j++) start(j);
  const out: Buffer[] = [];
  try {
    for (let j = 0; j < pieces.length; j++) {
      const bytes = await inflight[j % ahead]!;
      out.push(Buffer.from(bytes));
      // Done with the piece, as EcReader is once its sink has it.
      source.release(bytes);
      if (j + ahead < pieces.length) start(j + ahead);
    }
  } finally {
    await Promise.allSettled(inflight);
    state.close();
  }
  return Buffer.concat(out);
}

const holdersWithout = (...missing: number[]): Holders => new Map([...Array(K + M).keys()].filter((i) => !missing.includes(i)).map((i) => [i, `node-${i}`]));

const layout = new StripeLayout(K, M, SHARD_BYTES, BLOB_BYTES);
const whole = { start: 0, end: BLOB_BYTES };

/** A blob of pseudo-random words (`mix` picks them), and its columns. */
async function blobOf(mix: number): Promise<{ data: Buffer; columns: Buffer[] }> {
  const data = Buffer.alloc(BLOB_BYTES);
  for (let i = 0; i + 4 <= data.length; i += 4) data.writeUInt32LE(Math.imul(i, mix) >>> 0, i);
  return { data, columns: await columnsOf(data, layout) };
}

describe('a degraded EC read', async () => {
  const { data, columns } = await blobOf(2654435761);

  it('with a data and a parity column gone: each surviving column streams once, no cell is fetched on its own', async () => {
    const source = new MemoryColumns(columns);
    expect((await read(source, layout, holdersWithout(1, 4), whole)).equals(data)).toBe(true);
    expect(source.cellFetches).toBe(0);
    // The data columns stream once, for their own pieces and as inputs of the rebuild; parity 5 once.
    expect(Object.fromEntries(source.opened)).toStrictEqual({ 0: 1, 2: 1, 3: 1, 5: 1 });
    // Each row of the blob (ceil(2.5) cells per shard and stripe) reconstructed once.
    expect(source.rebuiltRows).toBe(3 + 3 + Math.ceil(layout.lastShardBytes / CELL_BYTES));
    for (const [index, bytes] of source.sent) expect(bytes, `column ${index}`).toBeLessThanOrEqual(layout.columnBytes);
    // Every rebuilt cell's buffer went back: handed on and released, or released at once.
    expect(source.lent.size).toBe(0);
  });

  it('with two data columns gone: one reconstruction per row gives both', async () => {
    const source = new MemoryColumns(columns);
    expect((await read(source, layout, holdersWithout(1, 3), whole)).equals(data)).toBe(true);
    expect(source.cellFetches).toBe(0);
    expect(Object.fromEntries(source.opened)).toStrictEqual({ 0: 1, 2: 1, 4: 1, 5: 1 });
    expect(source.rebuiltRows).toBe(3 + 3 + Math.ceil(layout.lastShardBytes / CELL_BYTES));
    for (const [index, bytes] of source.sent) expect(bytes, `column ${index}`).toBeLessThanOrEqual(layout.columnBytes);
    // Every rebuilt cell's buffer went back: handed on and released, or released at once.
    expect(source.lent.size).toBe(0);
  });

  it('a range across stripes, with the first data column gone', async () => {
    const source = new MemoryColumns(columns);
    const range = { start: SHARD_BYTES + 777, end: 2 * K * SHARD_BYTES + 99_999 };
    expect((await read(source, layout, holdersWithout(0), range)).equals(data.subarray(range.start, range.end))).toBe(true);
    expect(source.cellFetches).toBe(0);
    expect(Object.fromEntries(source.opened)).toStrictEqual({ 1: 1, 2: 1, 3: 1, 4: 1 });
  });

  it('a column that fails mid-read is rebuilt too, and the bytes stay right', async () => {
    const source = new MemoryColumns(columns, new Map([[2, 3 * CELL_BYTES + 5]]));
    expect((await read(source, layout, holdersWithout(1), whole)).equals(data)).toBe(true);
  });

  it('a column the read shares with the rebuild fails mid-read: the rest comes right, fetched or rebuilt anew', async () => {
    for (const failing of [0, 2, 4]) {
      const source = new MemoryColumns(columns, new Map([[failing, 3 * CELL_BYTES + 5]]));
      expect((await read(source, layout, holdersWithout(1), whole)).equals(data), `column ${failing} failing`).toBe(true);
    }
  });

  it('a column gone when the read first asks and back before its later pieces (dropped as corrupt, then rebuilt) is read around throughout: the bytes stay right', async () => {
    for (const [index, ahead] of [[0, 8], [2, 8], [1, 1]] as const) {
      const source = new MemoryColumns(columns, new Map(), new Map([[index, 1]]));
      expect((await read(source, layout, holdersWithout(), whole, { ahead })).equals(data), `column ${index}, ${ahead} ahead`).toBe(true);
      expect(source.opened.get(index) ?? 0, `column ${index} opened`).toBe(0);
      expect(source.missing).toContain(index);
    }
  });

  it('with more than m columns unreadable the read fails: never wrong bytes', async () => {
    const source = new MemoryColumns(columns, new Map([[5, CELL_BYTES]]));
    await expect(read(source, layout, holdersWithout(1, 4), whole)).rejects.toThrow(/readable/);
  });
});

describe('an EC read from the columns where the ring places them', async () => {
  const { data, columns } = await blobOf(2246822519);

  it('opens each data column it needs, goes on once every holder answered, and reads byte-exact', async () => {
    const source = new MemoryColumns(columns);
    expect((await read(source, layout, holdersWithout(), whole, { placed: true })).equals(data)).toBe(true);
    expect(Object.fromEntries(source.opened)).toStrictEqual({ 0: 1, 1: 1, 2: 1, 3: 1 });
    const range = { start: SHARD_BYTES + 5, end: SHARD_BYTES + 70_000 };
    const one = new MemoryColumns(columns);
    expect((await read(one, layout, holdersWithout(), range, { placed: true })).equals(data.subarray(range.start, range.end))).toBe(true);
    // A range within one shard needs one column: only it is opened.
    expect(Object.fromEntries(one.opened)).toStrictEqual({ 1: 1 });
  });

  it('is not whole when a data column is not where the ring places it: the reader asks the candidates instead', async () => {
    const source = new MemoryColumns(columns, new Map([[2, 0]]));
    const state = new ReadState(source, BLOB, layout, holdersWithout(), piecesOf(layout, whole), true);
    // A holder that refused answered: it is asked where its columns are (only the silent are not).
    expect(await state.open()).toStrictEqual({ whole: false, silent: [] });
    state.close();
    // Nothing counted missing: the column may be elsewhere.
    expect(source.missing).toStrictEqual([]);
  });

  it('a parity column that fails when a rebuild needs it is reported out of place, not missing; one that answered and failed is missing', async () => {
    // Data column 1 answers, then fails mid-read; parity 4, not opened until the rebuild, never answers.
    const source = new MemoryColumns(columns, new Map([[1, 3 * CELL_BYTES + 5], [4, 0]]));
    expect((await read(source, layout, holdersWithout(), whole, { placed: true })).equals(data)).toBe(true);
    expect(source.missing).toStrictEqual([1]);
    expect(source.unplacedReports).toBe(1);
  });
});
