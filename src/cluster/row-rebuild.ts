/**
 * A degraded read's rebuild of rows (ec-read-state.ts): k surviving columns are each read once,
 * as one stream over the column range the read covers, and every row (the same cell of each
 * shard of a stripe) is reconstructed once, giving all of the row's missing data cells together
 * (stripe-wide reconstruction):
 *
 *   column c1..ck [lo, hi) ──take(row)──▶ reconstruct (data only) ──▶ cells still wanted
 *
 * A row is named by its offset in the columns (stripe * shardBytes + cell start): rows in column
 * order are stripes in blob order, so one stream per column serves every stripe of the read.
 * Rows go strictly in order, one after another as they are asked for; a cell whose row has gone
 * by, or any failure of an input, is answered `undefined` and the caller rebuilds that cell on
 * its own (a fetch of k cells). A data column among the inputs may serve the read too: its cells
 * the read wants are kept for it as the rebuilt ones are (ec-read-state.ts decides which).
 */
import { reconstruct } from '../ec/codec.js';
import { CELL_BYTES, type StripeLayout } from '../ec/layout.js';
import type { ColumnStream } from './column-stream.js';

/** A column a rebuild reads: its index and an open stream over the column range [lo, hi). */
export interface RebuildInput {
  readonly index: number;
  readonly stream: ColumnStream;
}

export interface RowRebuildHooks {
  /**
   * The data cell (row at column offset `at`, column `index`) will be asked for: keep it once the
   * row is rebuilt, a rebuilt cell or an input's (a data column the read shares with the rebuild).
   */
  wanted(at: number, index: number): boolean;
  /** An input failed: the column is ruled out for the rest of the read. */
  failed(index: number, err: unknown): void;
  /** Timing of one row's reconstruction (metrics). */
  reconstructed(startMs: number): void;
  /** A buffer of `length` bytes for a rebuilt cell (a view of a reusable slab), released as an input's cell is. */
  take(length: number): Buffer;
  /** An input's or a rebuilt cell is no longer used (its slab goes back for reuse). */
  release(bytes: Buffer): void;
}

export class RowRebuild {
  /** The next row to rebuild (its column offset). */
  private next: number;
  private tail: Promise<void> = Promise.resolve();
  private broken = false;
  /** Rebuilt data cells not yet taken, by `${at}:${index}`. */
  private readonly cells = new Map<string, Buffer>();
  /** Stand-ins for the parity cells a row does not read: a data-only reconstruction writes none of them. */
  private readonly unread: Buffer[] = [];

  constructor(
    private readonly layout: StripeLayout,
    private readonly inputs: readonly RebuildInput[],
    /** The column range [lo, hi) the inputs stream (lo: a row's start). */
    lo: number,
    private readonly hi: number,
    private readonly hooks: RowRebuildHooks,
  ) {
    this.next = lo;
  }

  /** No more rows can come from this rebuild (an input failed, or it was closed). */
  get dead(): boolean {
    return this.broken;
  }

  /** Data cell `index` of the row at column offset `at`, or undefined: that row has gone by, or the rebuild failed. */
  async cell(index: number, at: number): Promise<Buffer | undefined> {
    const key = `${at}:${index}`;
    const kept = this.cells.get(key);
    if (kept) {
      this.cells.delete(key);
      return kept;
    }
    if (at < this.next || at >= this.hi || this.broken) return undefined;
    const turn = this.tail.then(() => this.rowsThrough(at, index));
    this.tail = turn.then(() => undefined, () => undefined);
    await turn;
    const out = this.cells.get(key);
    this.cells.delete(key);
    return out;
  }

  close(): void {
    this.broken = true;
    for (const input of this.inputs) input.stream.close();
    this.cells.clear();
  }

  /** Rebuilds rows up to the one at `target`, keeping the cells wanted (and the one asked for). */
  private async rowsThrough(target: number, index: number): Promise<void> {
    const { shardBytes } = this.layout;
    while (!this.broken && this.next <= target) {
      const row = this.next;
      const stripe = Math.floor(row / shardBytes);
      const cellStart = row - stripe * shardBytes;
      const length = Math.min(CELL_BYTES - (cellStart % CELL_BYTES), this.layout.shardLength(stripe) - cellStart);
      const shards = await this.takeRow(length);
      if (!shards) return;
      this.next = row + length;
      const { k, m } = this.layout;
      const present = shards.map((s) => s !== undefined);
      const full = shards.map((s, i) => s ?? (i < k ? this.hooks.take(length) : this.unreadParity(i - k, length)));
      const decodeStart = performance.now();
      reconstruct(k, m, full, present, { dataOnly: true });
      this.hooks.reconstructed(decodeStart);
      // A data cell, read or rebuilt, is kept for the read (then the read releases it) or released now.
      for (let i = 0; i < k; i++) {
        if ((row === target && i === index) || this.hooks.wanted(row, i)) this.cells.set(`${row}:${i}`, full[i]!);
        else this.hooks.release(full[i]!);
      }
      for (let i = k; i < k + m; i++) if (present[i]) this.hooks.release(full[i]!);
    }
  }

  private unreadParity(j: number, length: number): Buffer {
    this.unread[j] ??= Buffer.allocUnsafe(CELL_BYTES);
    return this.unread[j].subarray(0, length);
  }

  /** One row's cell of every input (undefined in the slots of columns not read); undefined when an input failed. */
  private async takeRow(length: number): Promise<(Buffer | undefined)[] | undefined> {
    const shards: (Buffer | undefined)[] = new Array(this.layout.shards).fill(undefined);
    const taken = await Promise.allSettled(this.inputs.map((input) => input.stream.take(length)));
    for (const [j, result] of taken.entries()) {
      const input = this.inputs[j]!;
      if (result.status === 'fulfilled') {
        shards[input.index] = result.value;
        continue;
      }
      if (!this.broken) this.close();
      this.hooks.failed(input.index, result.reason);
    }
    if (!this.broken) return shards;
    for (const cell of shards) if (cell) this.hooks.release(cell);
    return undefined;
  }
}
