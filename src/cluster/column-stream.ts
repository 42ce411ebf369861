/**
 * One column's bytes for a read, pulled in order: a single FetchShard stream over the contiguous
 * range of the column the read needs (or the local engine's read of it), taken a piece at a time.
 * One call per column and read, instead of one per 1 MiB piece: the holder opens its file once,
 * and HTTP/2 flow control keeps the holder at most a window ahead of the reader.
 *
 *   holder ──FetchShard [start, end)──▶ queue (≤ ecColumnQueueBytes, then the call pauses) ──take(n)──▶ piece
 *
 * A take that waits longer than the timeout, or a stream that fails, fails every take after it;
 * the reader then rebuilds those pieces from other columns.
 */
import type * as grpc from '@grpc/grpc-js';
import { BlobstoreError } from '../errors/errors.js';
import type { ShardMeta } from '../blob/shard.js';
import type { LocalStore } from '../service/local-store.js';
import { PeerCallError, type Stub } from './peers.js';
import { FetchUnavailable, type HttpFetcher } from './http-fetcher.js';
import { shardPath } from './http-column.js';

/** Bytes received ahead of the reader before the stream is paused (plus the HTTP/2 window in flight). */
/** How long a read waits for bytes, and how many it queues ahead (settings ecFetchTimeoutMs, ecColumnQueueBytes). */
export interface ColumnLimits {
  readonly timeoutMs: number;
  readonly queueBytes: number;
}

export interface ColumnStream {
  /** The next `length` bytes of the range (exactly; a view when one chunk holds them). */
  take(length: number): Promise<Buffer>;
  close(): void;
}

/** Chunks pushed by a producer, taken by exact lengths; push() waits while the queue is full. */
class ByteQueue implements ColumnStream {
  private readonly chunks: Buffer[] = [];
  private queued = 0;
  private failure: Error | undefined;
  private ended = false;
  private wanted: { length: number; resolve: (b: Buffer) => void; reject: (e: Error) => void; timer: NodeJS.Timeout } | undefined;
  private readonly takes: (() => void)[] = [];
  private space: (() => void) | undefined;

  constructor(
    private readonly what: string,
    private readonly limits: ColumnLimits,
    private readonly onFull: () => void = () => undefined,
    private readonly onRoom: () => void = () => undefined,
    private readonly onClose: () => void = () => undefined,
  ) {}

  /** Resolves once the queue has room again (the producer's backpressure). */
  push(chunk: Buffer): Promise<void> {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.queued += chunk.length;
    }
    this.serve();
    if (this.queued < this.limits.queueBytes) return Promise.resolve();
    this.onFull();
    return new Promise((resolve) => (this.space = resolve));
  }

  end(): void {
    this.ended = true;
    this.serve();
  }

  fail(err: Error): void {
    this.failure ??= err;
    this.serve();
  }

  take(length: number): Promise<Buffer> {
    // Takes are served one at a time, in call order.
    return new Promise<void>((go) => {
      this.takes.push(go);
      if (this.takes.length === 1) go();
    }).then(() => new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new BlobstoreError('unavailable', `${this.what}: no data within ${this.limits.timeoutMs} ms`)), this.limits.timeoutMs);
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
      if (this.queued < this.limits.queueBytes && this.space) {
        const room = this.space;
        this.space = undefined;
        this.onRoom();
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

  /** The next `length` queued bytes: the head chunk's view when it holds them all, else a copy. */
  private shift(length: number): Buffer {
    this.queued -= length;
    const head = this.chunks[0]!;
    if (head.length === length) return this.chunks.shift()!;
    if (head.length > length) {
      this.chunks[0] = head.subarray(length);
      return head.subarray(0, length);
    }
    const out = Buffer.allocUnsafe(length);
    for (let at = 0; at < length;) {
      const c = this.chunks[0]!;
      const n = Math.min(c.length, length - at);
      c.copy(out, at, 0, n);
      at += n;
      if (n === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(n);
    }
    return out;
  }

  close(): void {
    this.failure ??= new BlobstoreError('unavailable', `${this.what}: closed`);
    this.chunks.length = 0;
    this.queued = 0;
    this.space?.();
    this.space = undefined;
    this.onClose();
  }
}

/** A peer that holds a column: its node id, its API address (the bulk path) and its gRPC stub (the fallback). */
export interface ColumnPeer {
  nodeId: string;
  address: string;
  stub: Stub;
  metadata: () => grpc.Metadata;
}

/**
 * Column `index` of blob `id`, bytes [start, end), from a peer: over its API listener
 * (GET /internal/v1/shards/{id}/{index}, http-fetcher.ts) when `http` is set and it has an address,
 * else, or when that path cannot serve it before the first byte, over gRPC FetchShard.
 */
export function remoteColumn(peer: ColumnPeer, http: HttpFetcher | undefined, id: Buffer, index: number, start: number, end: number, limits: ColumnLimits): ColumnStream {
  let call: grpc.ClientReadableStream<{ data?: Buffer }> | undefined;
  let closed = false;
  const queue = new ByteQueue(`column ${index} of ${id.toString('hex')} from ${peer.nodeId}`, limits, () => call?.pause(), () => call?.resume(), () => {
    closed = true;
    call?.cancel();
  });
  const overGrpc = (): void => {
    if (closed) return;
    call = peer.stub.FetchShard!({ id: { id }, index, offset: start, length: end - start }, peer.metadata()) as unknown as grpc.ClientReadableStream<{ data?: Buffer }>;
    call.on('data', (msg) => void queue.push(msg.data ?? EMPTY));
    call.on('error', (err: grpc.ServiceError) => queue.fail(new PeerCallError(peer.nodeId, 'FetchShard', err.code, err.details)));
    call.on('end', () => queue.end());
  };
  if (!http || peer.address === '') {
    overGrpc();
    return queue;
  }
  // The fetcher reuses its buffer once the sink returns: each chunk is copied into the queue.
  http.fetchPath(peer.address, shardPath(id, index), { start, end }, (chunk) => {
    if (closed) throw new BlobstoreError('unavailable', 'column read closed');
    return queue.push(Buffer.from(chunk));
  }).then(() => queue.end(), (err: Error) => (err instanceof FetchUnavailable ? overGrpc() : queue.fail(err)));
  return queue;
}

/** Bytes [start, end) of a column held here (verified by the engine's read). */
export function localColumn(store: LocalStore, meta: ShardMeta, start: number, end: number, limits: ColumnLimits, onCorrupt: (err: BlobstoreError) => void): ColumnStream {
  let closed = false;
  const queue = new ByteQueue(`column ${meta.shard.index} of ${meta.id.toString('hex')} here`, limits, undefined, undefined, () => (closed = true));
  store.read(meta, async (chunk) => {
    if (closed) throw new BlobstoreError('unavailable', 'local column read closed');
    // The engine reuses its chunk buffers: each is copied before it is queued.
    await queue.push(Buffer.from(chunk));
  }, { start, end }).then(() => queue.end(), (err: unknown) => {
    if (err instanceof BlobstoreError && err.kind === 'corruption') onCorrupt(err);
    queue.fail(err as Error);
  });
  return queue;
}

const EMPTY = Buffer.alloc(0);
