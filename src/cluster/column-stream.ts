/**
 * One column's bytes for a read, pulled in order: a single stream over the contiguous range of
 * the column the read needs (the holder's API listener, or the local engine's read of it), taken a piece at a time. One call per column and read, instead of one per 1 MiB piece: the
 * holder opens its file once, and flow control keeps the holder at most a window ahead.
 *
 *   holder ──[start, end)──▶ read into slabs (≤ the window, then the stream pauses) ──take(n)──▶ piece
 *
 * The window starts at ecColumnQueueStartBytes and grows by every byte taken, up to
 * ecColumnQueueBytes.
 *
 * A holder's bytes are read by the kernel straight into 1 MiB slabs reused from read to read
 * (util/slabs.ts; the queue is the fetch's target, transport/http-fetcher.ts); a local column's
 * are copied in once. A take that one slab holds is a view of it, which its taker releases once
 * done (else it is a copy). A
 * take that waits longer than the timeout, or a stream that fails, fails every take after it; the
 * reader then rebuilds those pieces from other columns.
 */
import { BlobstoreError } from '../errors/errors.js';
import type { ShardMeta } from '../blob/shard.js';
import type { Slabs } from '../util/slabs.js';
import type { ChunkCv, LocalStore } from '../service/local-store.js';
import { type Answer, ArrivalHashes, CheckedColumn, valuesPrefixBytes } from './column-check.js';
import type { PeerRef, PeerTransport } from './transport/peer-transport.js';

/**
 * How long a read waits for bytes, and how many it queues ahead (settings ecFetchTimeoutMs,
 * ecColumnQueueStartBytes, ecColumnQueueBytes), and the slabs the bytes are queued in.
 */
export interface ColumnLimits {
  readonly timeoutMs: number;
  /** What a stream queues before the read takes anything: the window it starts with. */
  readonly startBytes: number;
  /** What it queues at most: the window grows by every byte the read takes, up to this. */
  readonly queueBytes: number;
  readonly slabs: Slabs;
}

export interface ColumnStream {
  /**
   * The next `length` bytes of the range, exactly: a view of a slab when one holds them all (give
   * it back with release() once done with it), else a buffer of its own.
   */
  take(length: number): Promise<Buffer>;
  /**
   * How the holder answered (a read that trusted the ring's placement checks it before its first
   * byte: ec-read-state.ts): with the column once its first bytes (or its end) came, refused once
   * the stream failed first (no such column there, the connection refused), silent when nothing
   * came within the fetch timeout.
   */
  readonly ready: Promise<Answer>;
  close(): void;
}

/** Queued bytes: a view of a slab, which the queue holds a reference of. */
interface Queued {
  view: Buffer;
  readonly slab: Buffer;
}

/** Chunks pushed by a producer, copied into slabs, taken by exact lengths; push() waits while the queue is full. */
class ByteQueue implements ColumnStream {
  private readonly chunks: Queued[] = [];
  /** The slab bytes go to (copied by push(), or read in place), and how far it is filled. */
  private tail: Buffer | undefined;
  private tailFill = 0;
  /** The tail's free space is handed out (region()) and not yet filled. */
  private lent = false;
  /** Where a read in place goes once the stream failed (its bytes are dropped). */
  private scratch: Buffer | undefined;
  private queued = 0;
  /**
   * Bytes queued ahead at most now. A read's first bytes go out once every column has given its
   * first cell: a stream that filled its whole window before the slowest had started would take
   * the CPU from it (the streams share the cores with their holders), so a window starts small
   * and grows by what the read takes.
   */
  private window: number;
  private failure: Error | undefined;
  private ended = false;
  private wanted: { length: number; resolve: (b: Buffer) => void; reject: (e: Error) => void; timer: NodeJS.Timeout } | undefined;
  private readonly takes: (() => void)[] = [];
  private space: (() => void) | undefined;
  /** How the holder answered, once it has; `ready`, made when first asked for, and what settles it. */
  private outcome: Answer | undefined;
  private asked: Promise<Answer> | undefined;
  private settle: ((answer: Answer) => void) | undefined;

  constructor(
    private readonly what: string,
    private readonly limits: ColumnLimits,
    /**
     * Where the stream starts in its column: the slabs follow the column's grid of their size
     * (the first is filled from that offset in), so that a read's pieces, cut at the column's 1 MiB
     * cells, each lie within one slab.
     */
    private readonly start: number,
    private readonly onClose: () => void = () => undefined,
    /** Told of the bytes as they are queued, before any take is served from them. */
    private readonly arrivals?: ArrivalHashes,
  ) {
    this.window = Math.min(limits.startBytes, limits.queueBytes);
  }

  /** Made only for a read that asks (no timer per stream otherwise); silent after the fetch timeout from then. */
  get ready(): Promise<Answer> {
    this.asked ??= this.outcome !== undefined ? Promise.resolve(this.outcome) : new Promise<Answer>((resolve) => {
      const timer = setTimeout(() => this.answered('silent'), this.limits.timeoutMs);
      this.settle = (answer) => {
        clearTimeout(timer);
        resolve(answer);
      };
    });
    return this.asked;
  }

  private answered(answer: Answer): void {
    if (this.outcome !== undefined) return;
    this.outcome = answer;
    this.settle?.(answer);
  }

  /** Copies the chunk in (it may be reused at once); resolves once the queue has room again (the producer's backpressure). */
  push(chunk: Uint8Array): Promise<void> {
    if (this.failure) return Promise.resolve();
    for (let at = 0; at < chunk.length;) {
      const region = this.region();
      const n = Math.min(chunk.length - at, region.length);
      // fill() is one native memcpy; set() from the engine's chunks (shared memory) is slower in V8.
      region.fill(chunk.subarray(at, at + n), 0, n);
      this.append(n);
      at += n;
    }
    return this.room() ?? Promise.resolve();
  }

  /** The free space of the slab being filled (a fresh slab when it is full), for a producer that reads in place. */
  region(): Buffer {
    if (this.failure) return (this.scratch ??= Buffer.allocUnsafe(64 * 1024));
    if (!this.tail || this.tailFill === this.tail.length) this.nextTail();
    this.lent = true;
    return this.tail!.subarray(this.tailFill);
  }

  /** `n` bytes were read into region(): queued, with push()'s backpressure (undefined: room left). */
  filled(n: number): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    this.append(n);
    return this.room();
  }

  /** The tail slab's next `n` bytes are queued. */
  private append(n: number): void {
    this.lent = false;
    const tail = this.tail!;
    this.arrivals?.arrived(tail, this.tailFill, this.tailFill + n);
    const last = this.chunks.at(-1);
    // Bytes right after the last queued ones of the same slab extend its view.
    if (last && last.slab === tail && last.view.byteOffset + last.view.length === tail.byteOffset + this.tailFill) {
      last.view = tail.subarray(last.view.byteOffset - tail.byteOffset, this.tailFill + n);
    } else {
      this.chunks.push({ view: tail.subarray(this.tailFill, this.tailFill + n), slab: tail });
    }
    this.tailFill += n;
    this.queued += n;
    this.answered('column');
    this.serve();
  }

  /** Undefined while the queue has room; else resolves once it has. */
  private room(): Promise<void> | undefined {
    if (this.queued < this.window) return undefined;
    return new Promise((resolve) => (this.space = resolve));
  }

  end(): void {
    this.ended = true;
    this.answered('column');
    this.serve();
  }

  fail(err: Error): void {
    this.failure ??= err;
    this.answered('refused');
    this.serve();
  }

  /**
   * The holder has the column, but not the one its store wrote: answered as a column (it is
   * where the ring places it), then failed, as a remote one whose check fails (column-check.ts).
   */
  wrong(err: Error): void {
    this.answered('column');
    this.fail(err);
  }

  take(length: number): Promise<Buffer> {
    // Takes are served one at a time, in call order.
    return new Promise<void>((go) => {
      this.takes.push(go);
      if (this.takes.length === 1) go();
    }).then(() => new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new BlobstoreError('unavailable', `${this.what}: no data within ${this.limits.timeoutMs} ms`, { peer: true })), this.limits.timeoutMs);
      this.wanted = { length, resolve, reject, timer };
      this.serve();
    })).finally(() => {
      this.takes.shift();
      this.takes[0]?.();
    });
  }

  private serve(): void {
    const w = this.wanted;
    if (!w) return;
    if (this.queued >= w.length) {
      this.wanted = undefined;
      clearTimeout(w.timer);
      w.resolve(this.shift(w.length));
      this.window = Math.min(this.window + w.length, this.limits.queueBytes);
      if (this.queued < this.window && this.space) {
        const room = this.space;
        this.space = undefined;
        room();
      }
      return;
    }
    if (this.failure || this.ended) {
      this.wanted = undefined;
      clearTimeout(w.timer);
      w.reject(this.failure ?? new BlobstoreError('corruption', `${this.what}: the stream ended early`));
      this.close();
    }
  }

  /** A fresh slab to copy into; the one before is let go once none of its bytes is queued. */
  private nextTail(): void {
    const old = this.tail;
    this.tail = this.limits.slabs.take();
    this.tailFill = old ? 0 : this.start % this.tail.length;
    if (old && !this.chunks.some((c) => c.slab === old)) this.limits.slabs.release(old);
  }

  /** The head's first `n` bytes are taken: the head goes when empty, and its slab with it unless still filled. */
  private consume(n: number): void {
    const head = this.chunks[0]!;
    if (n < head.view.length) {
      head.view = head.view.subarray(n);
      return;
    }
    this.chunks.shift();
    if (head.slab !== this.tail) this.limits.slabs.release(head.slab);
  }

  /** The next `length` queued bytes: a view of the head's slab (one more reference) when it holds them all, else a copy. */
  private shift(length: number): Buffer {
    this.queued -= length;
    const head = this.chunks[0]!;
    if (head.view.length >= length) {
      const view = head.view.subarray(0, length);
      this.limits.slabs.ref(view);
      this.consume(length);
      return view;
    }
    const out = Buffer.allocUnsafe(length);
    for (let at = 0; at < length;) {
      const c = this.chunks[0]!;
      const n = Math.min(c.view.length, length - at);
      out.fill(c.view.subarray(0, n), at, at + n);
      at += n;
      this.consume(n);
    }
    return out;
  }

  close(): void {
    this.failure ??= new BlobstoreError('unavailable', `${this.what}: closed`);
    this.answered('refused');
    // The queue's references: each slab with queued bytes, and the one being filled.
    // The slab being filled is not given back for reuse: a fetch may have handed its free space to
    // the kernel for a read in place that lands after this close (it would overwrite another
    // column's bytes). Kept from reuse, it costs an allocation, never wrong bytes.
    const held = new Set(this.chunks.map((c) => c.slab));
    if (this.tail && this.lent) held.delete(this.tail);
    else if (this.tail) held.add(this.tail);
    for (const slab of held) this.limits.slabs.release(slab);
    this.tail = undefined;
    this.chunks.length = 0;
    this.queued = 0;
    this.space?.();
    this.space = undefined;
    this.onClose();
  }
}

/** How a remote column's bytes are checked here rather than by its holder (column-check.ts). */
export interface ReaderCheck {
  readonly chunkCv: ChunkCv;
  /** Bytes [offset, offset + length) of the column did not match (the holder is asked to check them). */
  readonly onCorrupt: (offset: number, length: number) => void;
  /** The checksum the column's store computed, when known: a column with another is refused, and `onWrong` hears of it. */
  readonly expected?: { checksum: Buffer; onWrong: () => void };
  /** Bytes in the column (all of a column of one chunk is checked against its checksum too). */
  readonly columnBytes: number;
  /** Chunks are hashed in line as their bytes arrive (setting chunkDigests=inline), not with chunkCv once taken. */
  readonly onArrival: boolean;
}

/**
 * Column `index` of blob `id`, bytes [start, end), from a peer's API listener
 * (GET /internal/v1/shards/{id}/{index}, the data plane); with `check`, the chunks' chaining values
 * come first and each chunk is checked here as it is taken (column-check.ts).
 */
export function remoteColumn(transport: PeerTransport, peer: PeerRef, id: Buffer, index: number, start: number, end: number, limits: ColumnLimits, check?: ReaderCheck): ColumnStream {
  const what = `column ${index} of ${id.toString('hex')} from ${peer.nodeId}`;
  const range = { start, end };
  // The values come first: the queue's slabs start that much before the column's grid, so that
  // its bytes still lie on it.
  const prefix = check ? valuesPrefixBytes(range) : 0;
  const slab = limits.slabs.bytes;
  const arrivals = check?.onArrival ? new ArrivalHashes(range, prefix) : undefined;
  const queue = new ByteQueue(what, limits, (((start - prefix) % slab) + slab) % slab, undefined, arrivals);
  // The kernel reads the column straight into the queue's slabs (a closed queue fails the read).
  transport.readColumn(peer, id, index, range, queue, check !== undefined).then(() => queue.end(), (err: Error) => queue.fail(err));
  if (!check) return queue;
  return new CheckedColumn(queue, range, check.chunkCv, limits.slabs, check.onCorrupt, what, check.columnBytes, check.expected, arrivals);
}

/**
 * Bytes [start, end) of a column held here (verified by the engine's read); refused at once when
 * its checksum is not `expected`'s (ReaderCheck.expected).
 */
export function localColumn(store: LocalStore, meta: ShardMeta, start: number, end: number, limits: ColumnLimits, onCorrupt: (err: BlobstoreError) => void, expected?: ReaderCheck['expected']): ColumnStream {
  let closed = false;
  const what = `column ${meta.shard.index} of ${meta.id.toString('hex')} here`;
  const queue = new ByteQueue(what, limits, start, () => (closed = true));
  if (expected && !meta.checksum.equals(expected.checksum)) {
    expected.onWrong();
    queue.wrong(new BlobstoreError('corruption', `${what}: the column's checksum is not the one its store computed`));
    return queue;
  }
  store.read(meta, async (chunk) => {
    if (closed) throw new BlobstoreError('unavailable', 'local column read closed');
    // The engine reuses its chunk buffers: push() copies each into the queue's slabs.
    await queue.push(chunk);
  }, { start, end }).then(() => queue.end(), (err: unknown) => {
    if (err instanceof BlobstoreError && err.kind === 'corruption') onCorrupt(err);
    queue.fail(err as Error);
  });
  return queue;
}

