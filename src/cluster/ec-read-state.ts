/**
 * One EC read's plan and state (ec-reader.ts runs it): the pieces of the range in blob order, the
 * stream of each data column, and the rebuilding of pieces whose column is missing, slow or failing.
 */
import { BlobstoreError } from '../errors/errors.js';
import { reconstruct } from '../ec/codec.js';
import { CELL_BYTES, type StripeLayout } from '../ec/layout.js';
import type { ByteRange } from '../service/local-store.js';
import type { ColumnStream } from './column-stream.js';
import type { BlobMeta } from '../blob/meta.js';
import { type RebuildInput, RowRebuild } from './row-rebuild.js';

/** An EC blob to read: its metadata and shard size. */
export interface EcBlob {
  readonly meta: BlobMeta;
  readonly shardBytes: number;
  /** The key its columns are placed by, when not the id. */
  readonly placement?: Buffer;
  /** Every column's checksum as the store computed them, when a column found keeps them (ShardInfo.columnChecksums). */
  readonly columnChecksums?: Buffer;
}

/** The blob's column checksums as its store computed them, when a column keeps them (k + m of them). */
export function storedChecksums(blob: EcBlob, layout: StripeLayout): Buffer | undefined {
  return blob.columnChecksums?.length === layout.shards * 32 ? blob.columnChecksums : undefined;
}

/** Column index -> the node that holds it ('' = this node). */
export type Holders = Map<number, string>;

/** What a read's state asks of the reader that runs it (EcReader). */
export interface ColumnSource {
  openColumn(blob: EcBlob, node: string, index: number, start: number, end: number): ColumnStream | undefined;
  /** A buffer of `length` (at most a cell) for rebuilt bytes: a view of a reusable slab, released as a stream's. */
  take(length: number): Buffer;
  /** Bytes a column stream gave, or take() lent, are no longer used (a slab goes back for reuse). */
  release(bytes: Buffer): void;
  fetchRange(blob: EcBlob, node: string, index: number, offset: number, length: number): Promise<Buffer>;
  /** The blob's holders are stale: asked again on the next read. */
  forget(id: Buffer): void;
  /** A column was not where the ring places it: reads ask the candidates for a while (ec-reader.ts). */
  unplaced(id: Buffer): void;
  noteMissing(blob: EcBlob, indices: number[], why: string): void;
  /** Timings of a fetch and of a reconstruction (metrics). */
  fetched(startMs: number): void;
  reconstructed(startMs: number): void;
}

export interface Piece {
  stripe: number;
  index: number;
  /** The cell: where it starts in the shard, and its length. */
  cellStart: number;
  cellLength: number;
  /** The bytes of the cell this piece hands on. */
  from: number;
  to: number;
}

/** The pieces of `range`, in blob order: parts of data shards, cut at cell boundaries. */
export function piecesOf(layout: StripeLayout, range: ByteRange): Piece[] {
  const pieces: Piece[] = [];
  const stripeBytes = layout.k * layout.shardBytes;
  for (let stripe = Math.floor(range.start / stripeBytes); stripe < layout.stripes; stripe++) {
    if (layout.blobOffset(stripe) >= range.end) break;
    const shardLength = layout.shardLength(stripe);
    for (let index = 0; index < layout.k; index++) {
      const { start, end } = layout.dataRange(stripe, index);
      const from = Math.max(start, range.start);
      const to = Math.min(end, range.end);
      if (to <= from) continue;
      for (let cellStart = Math.floor((from - start) / CELL_BYTES) * CELL_BYTES; start + cellStart < to; cellStart += CELL_BYTES) {
        const cellLength = Math.min(CELL_BYTES, shardLength - cellStart);
        pieces.push({
          stripe, index, cellStart, cellLength,
          from: Math.max(0, from - start - cellStart),
          to: Math.min(cellLength, to - start - cellStart),
        });
      }
    }
  }
  return pieces;
}

/**
 * One read's view of the holders. A column read healthily streams its whole needed range once
 * (column-stream.ts); a column that fails during the read is not asked again. The pieces of a
 * missing or failed column are rebuilt stripe-wide (row-rebuild.ts: k other columns streamed
 * once over the read's rows, each row reconstructed once); a cell that rebuild cannot give (its
 * row has gone by, or an input failed) is rebuilt on its own from k other columns.
 *
 * When a data column the read needs has no holder from the start, the rebuild starts with the
 * read's first row and the data columns among its inputs are shared: each streams once, its
 * cells serving the reconstruction and then the read (the rebuild keeps them for it). If that
 * rebuild fails, the shared columns' remaining pieces are fetched one by one.
 */
export class ReadState {
  private readonly bad = new Set<number>();
  /** Cells rebuilt for missing data columns, by `${stripe}:${cellStart}:${index}` (the stripe's other pieces use them). */
  private readonly rebuilt = new Map<string, Buffer>();
  /** Each data column's stream, and the column offset its next take starts at. */
  private readonly streams = new Map<number, { stream: ColumnStream; next: number }>();
  /** Per data column, the contiguous column range the read needs. */
  private readonly ranges = new Map<number, { start: number; end: number }>();
  /** Where the last row the read's pieces cover ends in the columns. */
  private rowsEnd = 0;
  /** Pieces not yet handed on, by `${column offset of the row}:${index}`. */
  private readonly pending = new Set<string>();
  private rowRebuild: RowRebuild | undefined;
  /** Data columns whose pieces the row rebuild gives (its inputs, streamed once for both). */
  private readonly shared = new Set<number>();
  /** Whether the read has looked for a column missing from the start (startShared), once. */
  private started = false;
  /** Columns whose holder answered open(). */
  private readonly answered = new Set<number>();

  constructor(
    private readonly reader: ColumnSource,
    private readonly blob: EcBlob,
    private readonly layout: StripeLayout,
    private readonly holders: Holders,
    pieces: readonly Piece[],
    /**
     * The holders are where the ring places the columns, none asked (ec-reader.ts): open() checks
     * those of the data columns the read needs. Another column that fails was perhaps never there:
     * it is reported out of place, not missing.
     */
    private readonly placed = false,
  ) {
    for (const p of pieces) {
      const at = layout.columnOffset(p.stripe) + p.cellStart;
      const r = this.ranges.get(p.index);
      if (!r) this.ranges.set(p.index, { start: at + p.from, end: at + p.to });
      else r.end = at + p.to;
      this.rowsEnd = Math.max(this.rowsEnd, at + p.cellLength);
      this.pending.add(`${at}:${p.index}`);
    }
  }

  get blobId(): Buffer {
    return this.blob.meta.id;
  }

  /**
   * Opens the stream of every data column the read needs and waits for each holder to answer.
   * `whole`: every one answered with its column, and the read goes on; else the caller drops this
   * state. `silent`: the holders that said nothing within the fetch timeout.
   */
  async open(): Promise<{ whole: boolean; silent: string[] }> {
    const indices = [...this.ranges.keys()];
    const answers = await Promise.all(indices.map((i) => this.stream(i)?.stream.ready ?? 'refused'));
    const silent: string[] = [];
    indices.forEach((index, j) => {
      if (answers[j] === 'column') this.answered.add(index);
      else if (answers[j] === 'silent') silent.push(this.holders.get(index)!);
    });
    return { whole: this.answered.size === indices.length, silent };
  }

  /** A piece's bytes: taken from its column's stream, else rebuilt. */
  async piece(p: Piece): Promise<Buffer> {
    if (!this.started) this.startShared();
    const at = this.layout.columnOffset(p.stripe) + p.cellStart;
    try {
      return await this.bytesOf(p, at);
    } finally {
      this.pending.delete(`${at}:${p.index}`);
    }
  }

  private async bytesOf(p: Piece, at: number): Promise<Buffer> {
    const key = `${p.stripe}:${p.cellStart}:${p.index}`;
    const done = this.rebuilt.get(key);
    if (done) {
      this.rebuilt.delete(key);
      return done.subarray(p.from, p.to);
    }
    if (this.shared.has(p.index)) {
      const bytes = await this.sharedPiece(p, at);
      if (bytes) return bytes;
    } else if (!this.bad.has(p.index)) {
      const open = this.stream(p.index);
      if (open) {
        try {
          // Pieces take their column's bytes in order: a take anywhere else would hand on the
          // bytes of another offset (never: the column fails for the read instead).
          if (open.next !== at + p.from) throw new BlobstoreError('internal', `column ${p.index}: a take at ${at + p.from}, the stream is at ${open.next}`);
          open.next = at + p.to;
          const fetchStart = performance.now();
          const bytes = await open.stream.take(p.to - p.from);
          this.reader.fetched(fetchStart);
          return bytes;
        } catch (err) {
          this.failed(p.index, err);
        }
      }
    }
    const rebuilt = await this.rebuildOfRows(at)?.cell(p.index, at);
    if (rebuilt) return rebuilt.subarray(p.from, p.to);
    const cell = await this.rebuild(p, at);
    return cell.subarray(p.from, p.to);
  }

  /**
   * A piece of a shared column: its cell from the row rebuild, else (the rebuild failed, or a
   * later one started past the row) fetched on its own; undefined once the column failed.
   */
  private async sharedPiece(p: Piece, at: number): Promise<Buffer | undefined> {
    const rows = this.rowRebuild;
    const cell = rows !== undefined && !rows.dead ? await rows.cell(p.index, at) : undefined;
    if (cell) return cell.subarray(p.from, p.to);
    const node = this.holders.get(p.index);
    if (node === undefined || this.bad.has(p.index)) return undefined;
    try {
      const fetchStart = performance.now();
      const bytes = await this.reader.fetchRange(this.blob, node, p.index, at + p.from, p.to - p.from);
      this.reader.fetched(fetchStart);
      return bytes;
    } catch (err) {
      this.failed(p.index, err);
      return undefined;
    }
  }

  /**
   * Once, at the read's first piece: when a data column it needs has no holder, the row rebuild
   * starts now, at the read's first row, with the data columns among its inputs shared.
   */
  private startShared(): void {
    this.started = true;
    let lo = Infinity;
    let missing = false;
    for (const [row, index] of this.pendingCells()) {
      lo = Math.min(lo, row);
      if (!this.holders.has(index)) missing = true;
    }
    if (missing) this.rowRebuild = this.openRowRebuild(lo, true);
  }

  /** The cells of the pieces not yet handed on: [column offset of the row, column index]. */
  private *pendingCells(): Generator<[number, number]> {
    for (const key of this.pending) yield key.split(':').map(Number) as [number, number];
  }

  /** A column does not stream its pieces: it has no holder, or it failed in this read. */
  private unhealthy(index: number): boolean {
    return this.bad.has(index) || !this.holders.has(index);
  }

  /**
   * The read's row rebuild, started at the first row a piece of an unhealthy column still needs
   * (at the latest `at`); a new one when the last failed. Undefined when fewer than k columns
   * can be streamed.
   */
  private rebuildOfRows(at: number): RowRebuild | undefined {
    if (this.rowRebuild && !this.rowRebuild.dead) return this.rowRebuild;
    this.rowRebuild?.close();
    this.rowRebuild = undefined;
    let lo = at;
    for (const [row, index] of this.pendingCells()) if (row < lo && this.unhealthy(index)) lo = row;
    this.rowRebuild = this.openRowRebuild(lo, false);
    return this.rowRebuild;
  }

  /**
   * A row rebuild over [lo, rowsEnd) from k inputs. `share`: the data columns among the inputs
   * serve the read too (their pieces come from the rebuild), so data columns go first, each
   * streamed once for both; else parity goes first (the read streams its data columns already).
   * Undefined when fewer than k columns can be streamed.
   */
  private openRowRebuild(lo: number, share: boolean): RowRebuild | undefined {
    const { k, m } = this.layout;
    const data = [...Array(k).keys()];
    const parity = [...Array(m).keys()].map((j) => k + j);
    const order = share ? data.concat(parity) : parity.concat(data);
    const inputs: RebuildInput[] = [];
    for (const index of order) {
      if (inputs.length === k) break;
      const node = this.holders.get(index);
      if (node === undefined || this.bad.has(index)) continue;
      const stream = this.reader.openColumn(this.blob, node, index, lo, this.rowsEnd);
      if (stream) inputs.push({ index, stream });
    }
    if (inputs.length < k) {
      for (const input of inputs) input.stream.close();
      return undefined;
    }
    if (share) for (const { index } of inputs) if (index < k && this.ranges.has(index)) this.shared.add(index);
    return new RowRebuild(this.layout, inputs, lo, this.rowsEnd, {
      wanted: (row, index) => (this.unhealthy(index) || this.shared.has(index)) && this.pending.has(`${row}:${index}`),
      failed: (index, err) => this.failed(index, err),
      reconstructed: (startMs) => this.reader.reconstructed(startMs),
      take: (length) => this.reader.take(length),
      release: (bytes) => this.reader.release(bytes),
    });
  }

  /**
   * The column's stream over its needed range, opened once, for the read's first piece of it;
   * undefined when nobody holds it. A column its holder no longer has then (dropped as corrupt,
   * say) fails for the rest of the read: opened later, once repair has stored it again, its
   * stream would start at the range's start, not at the piece that asks.
   */
  private stream(index: number): { stream: ColumnStream; next: number } | undefined {
    const open = this.streams.get(index);
    if (open) return open;
    const node = this.holders.get(index);
    const range = this.ranges.get(index);
    if (node === undefined || !range || this.bad.has(index)) return undefined;
    const stream = this.reader.openColumn(this.blob, node, index, range.start, range.end);
    if (!stream) {
      this.failed(index, new BlobstoreError('not_found', `column ${index} cannot be read from ${node === '' ? 'this node' : node} (not held there, or not a member, any more)`));
      return undefined;
    }
    const opened = { stream, next: range.start };
    this.streams.set(index, opened);
    return opened;
  }

  close(): void {
    for (const { stream } of this.streams.values()) stream.close();
    this.streams.clear();
    this.rowRebuild?.close();
    this.rowRebuild = undefined;
  }

  private failed(index: number, err: unknown): void {
    if (this.bad.has(index)) return;
    this.bad.add(index);
    this.streams.get(index)?.stream.close();
    this.streams.delete(index);
    this.reader.forget(this.blob.meta.id);
    if (this.placed && !this.answered.has(index)) this.reader.unplaced(this.blob.meta.id);
    else this.reader.noteMissing(this.blob, [index], `failed a read (${(err as Error).message})`);
  }

  /** Reconstructs the piece's cell (and the same cell of any other missing data column) from k columns. */
  private async rebuild(p: Piece, offset: number): Promise<Buffer> {
    const { k, m } = this.layout;
    const shards: Buffer[] = [];
    const present: boolean[] = [];
    for (let i = 0; i < k + m; i++) {
      shards.push(Buffer.alloc(p.cellLength));
      present.push(false);
    }
    // Data columns first (a reconstruction from data alone is cheapest), then parity.
    const order = [...Array(k + m).keys()].filter((i) => i !== p.index);
    let have = 0;
    let next = 0;
    const fetchOne = async (): Promise<void> => {
      while (have < k && next < order.length) {
        const i = order[next++]!;
        const node = this.holders.get(i);
        if (node === undefined || this.bad.has(i)) continue;
        try {
          shards[i] = await this.reader.fetchRange(this.blob, node, i, offset, p.cellLength);
          present[i] = true;
          have++;
          return;
        } catch (err) {
          this.failed(i, err);
        }
      }
    };
    // k fetches at once; each one that fails tries the next column in line.
    await Promise.all(Array.from({ length: k }, () => fetchOne()));
    if (have < k) {
      throw new BlobstoreError('unavailable', `EC blob ${this.blob.meta.id.toString('hex')}: only ${have} of the ${k} shards needed are readable (${k + m - have} unavailable, at most ${m} may be)`, {
        headers: { 'Retry-After': '1' }, peer: true,
      });
    }
    const decodeStart = performance.now();
    reconstruct(k, m, shards, present, { dataOnly: true });
    this.reader.reconstructed(decodeStart);
    for (let i = 0; i < k; i++) {
      if (present[i] || i === p.index) continue;
      this.rebuilt.set(`${p.stripe}:${p.cellStart}:${i}`, shards[i]!);
    }
    return shards[p.index]!;
  }
}
