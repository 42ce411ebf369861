/**
 * Cutting a blob into stripes and encoding them, a row of cells at a time (layout.ts):
 *
 *   row (stripe s, shard offset o, length L ≤ cellBytes):
 *     data i   = blob bytes of data shard i of stripe s, [o, o + L)   (zeros past the blob's end)
 *     parity j = Reed-Solomon parity of the k data cells               (native kernel, in line)
 *
 * Rows come in column order (stripe by stripe, and within a stripe by offset), so every column
 * can be written front to back as its cells come. A row takes (k + m) * L bytes; the caller sends
 * its cells on before asking for the next, which bounds the memory of an encode to a few rows
 * whatever the blob's size. Encoding in line costs ~0.1 ms per 4 MiB of data here (the kernel runs
 * at tens of GB/s), less than a worker round trip (~70 us) plus the copies to shared memory.
 */
import { open } from 'node:fs/promises';
import { internal } from '../errors/errors.js';
import { encode } from './codec.js';
import { CELL_BYTES, type StripeLayout } from './layout.js';

/** Where the blob's bytes are read from while it is encoded. */
export interface BlobSource {
  readonly size: number;
  /** Copies blob bytes [start, end) into `into` from its start. */
  read(start: number, end: number, into: Buffer): Promise<void>;
  close(): Promise<void>;
}

/** A blob held in memory. */
export function memorySource(data: Buffer): BlobSource {
  return {
    size: data.length,
    read: (start, end, into) => {
      data.copy(into, 0, start, end);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
}

/** A blob in a file (an upload's temp file); the bytes are the file's first `size`. */
export async function fileSource(path: string, size: number): Promise<BlobSource> {
  const handle = await open(path, 'r');
  return {
    size,
    read: async (start, end, into) => {
      for (let done = 0; done < end - start;) {
        const { bytesRead } = await handle.read(into, done, end - start - done, start + done);
        if (bytesRead === 0) throw internal(`EC source ${path} ended at ${start + done}, before ${end}`);
        done += bytesRead;
      }
    },
    close: () => handle.close(),
  };
}

/** The same byte range of every shard of one stripe. */
export interface CellRow {
  readonly stripe: number;
  /** Where the row starts in each shard of the stripe, and in each column. */
  readonly shardOffset: number;
  readonly columnOffset: number;
  /** k data cells then m parity cells, each the row's length (views of the row's buffers). */
  readonly cells: Buffer[];
  /** The buffers the cells are views of (a RowPool's row, handed back when the cells are done). */
  readonly buffers: Buffer[];
}

/** k + m buffers of at least `length` bytes for one row. */
export type RowAlloc = (length: number) => Promise<Buffer[]> | Buffer[];

const freshRow = (shards: number) => (length: number): Buffer[] => Array.from({ length: shards }, () => Buffer.allocUnsafe(length));

/** The encoded rows of a blob, in column order; `alloc` gives each row its buffers (fresh ones by default). */
export async function* encodeRows(source: BlobSource, layout: StripeLayout, alloc: RowAlloc = freshRow(layout.shards), cellBytes = CELL_BYTES): AsyncGenerator<CellRow> {
  const { k, m } = layout;
  for (let stripe = 0; stripe < layout.stripes; stripe++) {
    const shardLength = layout.shardLength(stripe);
    for (let offset = 0; offset < shardLength; offset += cellBytes) {
      const length = Math.min(cellBytes, shardLength - offset);
      const buffers = await alloc(length);
      const cells = buffers.map((b) => b.subarray(0, length));
      // The k data cells are read at once (each read is a thread-pool round trip).
      await Promise.all(cells.slice(0, k).map(async (cell, i) => {
        const { start, end } = layout.dataRange(stripe, i);
        const from = Math.min(end, start + offset);
        const to = Math.min(end, from + length);
        if (to > from) await source.read(from, to, cell);
        // Past the blob's end a shard is zero padding (the last stripe's).
        if (to - from < length) cell.fill(0, to - from);
      }));
      encode(k, m, cells.slice(0, k), cells.slice(k, k + m));
      yield { stripe, shardOffset: offset, columnOffset: layout.columnOffset(stripe) + offset, cells, buffers };
    }
  }
}

/** Where a RowPool takes 1 MiB cell buffers from and gives them back (the node's BufferPool). */
export interface CellSource {
  /** A buffer of CELL_BYTES now, or undefined when none is free (the pool allocates its own then). */
  tryAcquire(): Buffer | undefined;
  release(buf: Buffer): void;
}

/**
 * Rows of cell buffers reused from one row to the next: a row goes back once every sink is done
 * with its cells (`release` once per sink), and take() waits while all `rows` are out. Bounds an
 * encode's memory to rows * (k + m) * cellBytes, and spares the garbage collector 1.5x the blob's
 * bytes of buffers (a 1 GiB EC42 store spent a fifth of its time in GC with fresh buffers). With a
 * `cells` source the buffers come from it and go back at close(), so stores of a few MiB, each
 * with a pool of its own, allocate nothing either (fresh rows of 6 MiB a store set off a
 * collection every few stores).
 */
export class RowPool {
  private readonly free: Buffer[][] = [];
  private readonly waiting: ((row: Buffer[]) => void)[] = [];
  private made = 0;
  private readonly refs = new Map<Buffer[], number>();
  /** Buffers taken from `cells`, to give back at close(). */
  private readonly borrowed = new Set<Buffer>();

  constructor(
    private readonly shards: number,
    private readonly cellBytes: number,
    private readonly rows: number,
    private readonly cells?: CellSource,
  ) {}

  readonly take = (): Promise<Buffer[]> => {
    const row = this.free.pop() ?? (this.made < this.rows ? this.make() : undefined);
    if (row) return Promise.resolve(row);
    return new Promise((resolve) => this.waiting.push(resolve));
  };

  private make(): Buffer[] {
    this.made++;
    return Array.from({ length: this.shards }, () => {
      const borrowed = this.cellBytes === CELL_BYTES ? this.cells?.tryAcquire() : undefined;
      if (borrowed === undefined) return Buffer.allocUnsafeSlow(this.cellBytes);
      this.borrowed.add(borrowed);
      return borrowed;
    });
  }

  /**
   * The encode is over: the free rows' borrowed buffers go back to their source. A row still out
   * (a sink that never let go, after a failure) is left to the garbage collector.
   */
  close(): void {
    for (const row of this.free.splice(0)) {
      for (const buf of row) if (this.borrowed.delete(buf)) this.cells!.release(buf);
    }
  }

  /** The row's cells went to `users` sinks; each calls release(row) once done with its cell. */
  handOut(row: Buffer[], users: number): void {
    if (users === 0) this.giveBack(row);
    else this.refs.set(row, users);
  }

  release(row: Buffer[]): void {
    const left = (this.refs.get(row) ?? 1) - 1;
    if (left > 0) {
      this.refs.set(row, left);
      return;
    }
    this.refs.delete(row);
    this.giveBack(row);
  }

  private giveBack(row: Buffer[]): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(row);
    else this.free.push(row);
  }
}
