/**
 * An erasure-coded store that sends its columns as the body arrives (docs/erasure-coding.md): the
 * columns are placed by a random key chosen at the first byte, since the id is known only after
 * the last one. It is the upload's chunk sink (BlobWriter writes the body into it, 1 MiB at a time,
 * in order), in place of the transient file the whole-body store encodes from:
 *
 *   chunk ─▶ its chaining value (worker pool or in line) ─▶ the blob's id at the end
 *         ─▶ data shard i of its stripe ─▶ column i's holder now (flow control per column)
 *         ─▶ parity_j += c_ji x bytes (rs_encode_update, in line: tens of GB/s)
 *   row r of the last data shard in ─▶ parity cells of row r final ─▶ parity holders
 *   last chunk ─▶ padding, the last parity rows ─▶ the id (EcWriter: not stored already?)
 *   seal ─▶ each column's checksum, every column's, and the blob's metadata as its last bytes ─▶ committed by its holder
 *               (EcWriter then writes the manifest)
 *
 * Memory: the m parity shards of one stripe (a cell of each is reused once its send is done) and
 * the chunks in flight, whatever the blob's size. More than m failed columns fail the store.
 */
import type { NodeConfig } from '../config/settings.js';
import type { Policy } from '../blob/policy.js';
import { columnChecksumAt } from '../blob/shard.js';
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import { encodeUpdate } from '../ec/codec.js';
import { CELL_BYTES, type StripeLayout } from '../ec/layout.js';
import { createHasher } from '../hash/blake3.js';
import { ChunkTree } from '../hash/chunk-tree.js';
import type { ChunkCv, FileSink, LocalStore } from '../service/local-store.js';
import { type ColumnHeader, ColumnWriter } from './column-writer.js';
import type { ColumnTarget } from './ec-targets.js';
import { HttpColumnSender } from './transport/http-column.js';
import type { PeerTransport } from './transport/peer-transport.js';
import { streamedColumnHeader } from './shard-transfer.js';
import { columnBlobMeta } from './wire-meta.js';
import { ColumnLag } from './column-lag.js';
import type { Logger } from '../log/logger.js';

type Hasher = ReturnType<typeof createHasher>;

/** One column of the stream: its target, its sink while it lives, and its running checksum. */
export interface StreamColumn extends ColumnTarget {
  sink: ColumnWriter | HttpColumnSender | undefined;
  readonly hasher: Hasher;
  /** The column's writes, in order. */
  chain: Promise<void>;
  /** Writes whose bytes the sink still holds: released at once if the column fails. */
  readonly holding: Set<() => void>;
}

const ZEROS = Buffer.alloc(CELL_BYTES);

export class EcStream implements FileSink {
  readonly tmpPath = '';
  size = 0;
  readonly columns: StreamColumn[];
  private chunks = 0;
  private readonly tree = new ChunkTree();
  private readonly hashing: Promise<void>[] = [];
  /** Chunks are taken apart one after another, in order. */
  private chain: Promise<void> = Promise.resolve();
  /** The m parity shards of the stripe being received. */
  private readonly parity: Buffer[];
  /** Per parity column and row: the send of that cell, which must be done before the cell is reused. */
  private readonly paritySent: Promise<void>[][];
  private stripe = -1;
  /** Rows of the current stripe whose parity cells were zeroed / sent. */
  private rowsZeroed = 0;
  private rowsSent = 0;
  /** Data bytes of each data shard of the current stripe received. */
  private readonly filled: number[];
  private failure: Error | undefined;
  /** seal() or drop() took the columns over: abort leaves them to it. */
  private handedOver = false;
  /** Columns whose holder takes nothing while the others wait: failed once lagging, up to m in all. */
  private readonly lag: ColumnLag<StreamColumn>;
  /** Peers' columns whose seal went and whose answer is awaited: a lagging one's request is cut. */
  private readonly sealing = new Map<StreamColumn, HttpColumnSender>();

  constructor(
    readonly layout: StripeLayout,
    readonly policy: Policy,
    /** The random key the columns are placed by (16 bytes). */
    readonly placement: Buffer,
    targets: ColumnTarget[],
    store: LocalStore,
    private readonly chunkCv: ChunkCv,
    config: NodeConfig,
    transport: PeerTransport,
    /**
     * A column stream stalled this long fails; its holder's answer after the last byte may take
     * `answerTimeoutMs`; a column that holds the others back for `lagMs` fails while the store can lose it.
     */
    timeouts: { stallMs: number; answerTimeoutMs: number; lagMs: number },
    private readonly log: Logger,
  ) {
    const { k, m } = layout;
    this.lag = new ColumnLag(timeouts.lagMs, () => m - this.columns.filter((c) => c.failure).length, (c, err) => {
      this.sealing.get(c)?.abort();
      this.fail(c, err);
    });
    this.parity = Array.from({ length: m }, () => Buffer.alloc(layout.shardBytes));
    const rows = Math.ceil(layout.shardBytes / CELL_BYTES);
    this.paritySent = Array.from({ length: m }, () => Array.from({ length: rows }, () => Promise.resolve()));
    this.filled = new Array<number>(k).fill(0);
    this.columns = targets.map((t) => {
      const { header } = streamedColumnHeader(placement, t.index, policy, layout.shardBytes, layout.blobBytes, layout.columnBytes);
      const column: StreamColumn = { ...t, sink: undefined, hasher: createHasher(), chain: Promise.resolve(), holding: new Set() };
      if (t.failure) return column;
      column.sink = t.peer === undefined
        ? new ColumnWriter(store, config, header, layout.columnBytes)
        : transport.column(t.peer, header, layout.columnBytes, { repair: false, timeoutMs: timeouts.stallMs, checksums: layout.shards, streamed: { answerTimeoutMs: timeouts.answerTimeoutMs } });
      if (column.sink instanceof HttpColumnSender) column.sink.onFailure((err) => this.fail(column, err));
      return column;
    });
    this.checkFailures();
  }

  /** Takes the next chunk (whole 1 MiB but the last); resolves once its bytes are no longer needed. */
  write(chunk: Buffer): Promise<void> {
    if (chunk.length === 0) return Promise.resolve();
    if (this.size % CELL_BYTES !== 0 || chunk.length > CELL_BYTES) {
      return Promise.reject(new BlobstoreError('internal', `EC stream: a chunk of ${chunk.length} bytes at ${this.size}`));
    }
    if (this.size + chunk.length > this.layout.blobBytes) return Promise.reject(invalidArgument(`body longer than its Content-Length ${this.layout.blobBytes}`));
    const at = this.size;
    const index = this.chunks++;
    this.size += chunk.length;
    const hashed = this.chunkCv(chunk, at, index === 0).then((cv) => this.tree.set(index, cv));
    hashed.catch(() => undefined);
    this.hashing.push(hashed);
    const sent: Promise<void>[] = [];
    this.chain = this.chain.then(() => this.take(chunk, at, sent));
    return this.chain.then(() => Promise.all([hashed, ...sent])).then(() => undefined);
  }

  /** The chunk's pieces: each to its data column, and into the parity of its stripe. */
  private async take(chunk: Buffer, at: number, sent: Promise<void>[]): Promise<void> {
    if (this.failure) throw this.failure;
    const { k, m } = this.layout;
    for (let pos = at; pos < at + chunk.length;) {
      const stripe = Math.min(this.layout.stripes - 1, Math.floor(pos / (k * this.layout.shardBytes)));
      if (stripe !== this.stripe) this.startStripe(stripe);
      const length = this.layout.shardLength(stripe);
      const rel = pos - this.layout.blobOffset(stripe);
      const index = Math.floor(rel / length);
      const offset = rel - index * length;
      const n = Math.min(length - offset, at + chunk.length - pos);
      const piece = chunk.subarray(pos - at, pos - at + n);
      if (index === 0) await this.zeroRows(offset + n);
      encodeUpdate(k, m, index, piece, this.parity.map((p) => p.subarray(offset, offset + n)));
      sent.push(this.send(this.columns[index]!, piece));
      this.filled[index] = offset + n;
      if (index === k - 1) this.sendParityRows(this.filled[k - 1]!);
      pos += n;
    }
  }

  private startStripe(stripe: number): void {
    this.stripe = stripe;
    this.rowsZeroed = 0;
    this.rowsSent = 0;
    this.filled.fill(0);
  }

  /** Parity cells of the rows up to `end` start at zero (once their previous stripe's send is done). */
  private async zeroRows(end: number): Promise<void> {
    const length = this.layout.shardLength(this.stripe);
    while (this.rowsZeroed * CELL_BYTES < end) {
      const r = this.rowsZeroed++;
      await Promise.all(this.paritySent.map((rows) => rows[r]!));
      for (const p of this.parity) p.fill(0, r * CELL_BYTES, Math.min(length, (r + 1) * CELL_BYTES));
    }
  }

  /** Parity rows wholly covered by the last data shard's bytes so far (`upTo`) are final: they go. */
  private sendParityRows(upTo: number): void {
    const length = this.layout.shardLength(this.stripe);
    const { k } = this.layout;
    while (this.rowsSent * CELL_BYTES < length && Math.min(length, (this.rowsSent + 1) * CELL_BYTES) <= upTo) {
      const r = this.rowsSent++;
      const cell = (p: Buffer): Buffer => p.subarray(r * CELL_BYTES, Math.min(length, (r + 1) * CELL_BYTES));
      this.parity.forEach((p, j) => (this.paritySent[j]![r] = this.send(this.columns[k + j]!, cell(p))));
    }
  }

  /**
   * Bytes to a column, in order; resolves once the sink no longer needs them (or the column
   * failed). A failed column's bytes are hashed still: every column keeps every column's checksum,
   * which its rebuild must match.
   */
  private send(column: StreamColumn, bytes: Buffer): Promise<void> {
    column.hasher.update(bytes);
    if (!column.sink) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        column.holding.delete(release);
        // Progress: the column is timed afresh while it holds more, and no longer once it holds nothing.
        this.lag.caughtUp(column);
        if (column.holding.size > 0 && column.sink) this.lag.behind(column);
        resolve();
      };
      column.holding.add(release);
      if (column.sink) this.lag.behind(column);
      column.chain = column.chain.then(() => {
        const sink = column.sink;
        if (!sink) return release();
        return sink.write(bytes, release).catch((err: unknown) => this.fail(column, err as Error));
      });
    });
  }

  /** A column failed: its sink goes, its held bytes are released; more than m failures fail the store. */
  private fail(column: StreamColumn, err: Error): void {
    if (column.failure) return;
    column.failure = err;
    this.lag.caughtUp(column);
    const sink = column.sink;
    column.sink = undefined;
    if (sink instanceof ColumnWriter) void sink.abort();
    else sink?.abort();
    for (const release of [...column.holding]) release();
    this.checkFailures();
  }

  private checkFailures(): void {
    const failed = this.columns.filter((c) => c.failure);
    if (failed.length <= this.layout.m || this.failure) return;
    this.log.warn({ placement: this.placement.toString('hex'), failed: failed.map((c) => ({ column: c.index, node: c.node, err: c.failure!.message })) },
      'EC store failed: more column streams failed than the policy tolerates; every column stream is cut');
    this.failure = new BlobstoreError('unavailable', `${failed.length} of ${this.columns.length} shard stores failed (at most ${this.layout.m} may): ${failed[0]!.failure!.message}; retrying is safe`, {
      headers: { 'Retry-After': '1' }, peer: true,
    });
    for (const c of this.columns) if (c.sink) this.fail(c, new Error('the store failed'));
  }

  /**
   * After the last chunk: the padding of the last stripe and its last parity rows go; returns the
   * blob's BLAKE3 digest once every chunk is hashed. The columns then wait for seal() or drop().
   */
  async finish(): Promise<Buffer> {
    await this.chain;
    if (this.size !== this.layout.blobBytes || this.stripe < 0) throw invalidArgument(`body of ${this.size} bytes, its Content-Length said ${this.layout.blobBytes}`);
    const { k } = this.layout;
    const length = this.layout.shardLength(this.stripe);
    const padding: Promise<void>[] = [];
    await this.zeroRows(length);
    for (let i = 0; i < k; i++) {
      for (let at = this.filled[i]!; at < length; at += CELL_BYTES) padding.push(this.send(this.columns[i]!, ZEROS.subarray(0, Math.min(CELL_BYTES, length - at))));
    }
    this.sendParityRows(length);
    await Promise.all([...padding, ...this.hashing]);
    if (this.failure) throw this.failure;
    return this.tree.digest(this.chunks);
  }

  /**
   * Every column's last bytes: its checksum and the seal naming `blob`, with which its holder
   * commits it once complete and checked (this node's own column, here). A column that fails is
   * marked failed; `created` is set on those stored.
   */
  async seal(blob: Omit<ColumnHeader, 'index' | 'shardBytes' | 'blobBytes' | 'placement'>): Promise<void> {
    this.handedOver = true;
    const checksums = Buffer.concat(this.columns.map((c) => c.hasher.digest()));
    const answers = new Map<StreamColumn, Promise<void>>();
    for (const c of this.columns) if (c.sink) answers.set(c, this.sealColumn(c, blob, checksums));
    try {
      // A holder that does not answer while the others have is not waited for past lagMs (column-lag.ts).
      await this.lag.settle(answers);
    } finally {
      this.lag.close();
    }
  }

  /** One column's checksums and seal; its holder commits it. */
  private async sealColumn(c: StreamColumn, blob: Omit<ColumnHeader, 'index' | 'shardBytes' | 'blobBytes' | 'placement'>, checksums: Buffer): Promise<void> {
    await c.chain;
    const sink = c.sink;
    if (!sink) return;
    // The seal is under way: other columns failing no longer cut this one (the outcome takes back
    // what was stored when too few were).
    c.sink = undefined;
    if (sink instanceof HttpColumnSender) this.sealing.set(c, sink);
    const header: ColumnHeader = { ...blob, index: c.index, shardBytes: this.layout.shardBytes, blobBytes: this.layout.blobBytes, placement: this.placement };
    try {
      const checksum = columnChecksumAt(checksums, c.index);
      let created: boolean;
      if (sink instanceof ColumnWriter) {
        await sink.complete(checksum, checksums);
        created = (await sink.commit(header)).created;
      } else {
        created = (await sink.finish(checksum, checksums, columnBlobMeta(header))).created;
      }
      // Failed for lagging meanwhile: the store went on without it (a column committed this late is whole, and stays).
      if (!c.failure) c.created = created;
    } catch (err) {
      // A failed complete or commit has taken its column back already (ColumnWriter).
      c.failure ??= err as Error;
    } finally {
      this.sealing.delete(c);
    }
  }

  transient(): void {
    // Nothing is written here but the columns.
  }

  /**
   * Gives the store up (once seal() took the columns, they are the seal's): live column streams
   * are cut, and their holders drop what came; this node's column goes.
   */
  async abort(): Promise<void> {
    if (this.handedOver) return;
    await this.drop();
  }

  /** Cuts every column's stream, its holder drops it: the store is abandoned, or the blob is stored already. */
  async drop(): Promise<void> {
    this.handedOver = true;
    this.failure ??= new BlobstoreError('unavailable', 'the store was abandoned');
    for (const c of this.columns) if (c.sink) this.fail(c, this.failure);
    this.lag.close();
    await Promise.allSettled(this.columns.map((c) => c.chain));
  }
}
