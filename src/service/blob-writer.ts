/**
 * Receiving the bytes of a blob, whatever the transport (raw HTTP body, NDJSON or gRPC stream).
 * Bodies up to smallBlobMaxBytes are collected in memory; larger ones (or streams that grow past
 * it) go to a chunk sink in 1 MiB chunks from the buffer pool, hashed as they arrive, never held
 * whole. At most chunkWritesInFlight (a setting) chunks per blob wait for the sink; beyond that the sender is
 * paused through its FlowControl. The finished blob goes to the service's one commit point.
 *
 *   write -> copy once into a pooled 1 MiB chunk -> ChunkSink.write (hash + pwrite) -> release
 *   finish -> commit({inline bytes} | {file, checksum})   (blob-service.ts: placement, local write, copies)
 */
import type { NodeConfig } from '../config/settings.js';
import { invalidArgument, payloadTooLarge } from '../errors/errors.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { PutResult } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import { NO_RECORDER, type Recorder, countFailure } from '../metrics/recorder.js';
import { ecScheme } from '../ec/layout.js';
import type { FileSink, LocalStore } from './local-store.js';
import { type Ticks, ticks } from '../metrics/clock.js';


/** Pool buffers live in shared memory; a stop-gap buffer taken when the pool ran dry does not. */
const fromPool = (chunk: Buffer): boolean => chunk.buffer instanceof SharedArrayBuffer && chunk.length === CHUNK_BYTES;

export interface StoreOptions {
  policy: Policy;
  /** Encoded labels (encodeLabels). */
  labels: Buffer;
  /** Set once the placement was checked (the service checks it once per request). */
  placed?: boolean;
}

/** A received blob: in memory, or in a chunk sink with its digest. */
export type StoreContent = { readonly data: Buffer } | { readonly file: FileSink; readonly checksum: Buffer };

/** The service's one commit point for every kind of store. */
export type Committer = (content: StoreContent, target: StoreOptions) => Promise<PutResult>;

/** How a writer slows its sender down while the disk is behind. */
export interface FlowControl {
  pause(): void;
  resume(): void;
}

/** Collects a blob of known or unknown length; `limit` bounds it (413 beyond). */
export class BlobWriter {
  lastActivityMs = Date.now();
  received = 0;
  private small: Buffer | undefined;
  private chunks: Buffer[] = [];
  private current: Buffer | undefined;
  private currentLength = 0;
  private writer: Promise<FileSink> | undefined;
  private inflight = 0;
  private writes: Promise<void>[] = [];
  private paused = false;
  private failed: unknown;
  /** The blob is erasure coded: a file it spills to is only the source of the encoding. */
  private ecSource = false;
  /** The body went to a sink that stores it as it arrives (placed when it opened). */
  private streamed = false;

  private closed = false;

  constructor(
    private readonly flow: FlowControl | undefined,
    private readonly store: LocalStore,
    private readonly commit: Committer,
    private readonly config: NodeConfig,
    /** The body's length when known (Content-Length, or a chunked body's X-Blobstore-Size): it must be exactly that. */
    private readonly contentLength: number | undefined,
    private readonly limit: number,
    /** Stream to a file once the body outgrows memory (raw bodies); JSON bodies stay in memory. */
    private readonly spill: boolean,
    private readonly recorder: Recorder = NO_RECORDER,
    /** The policy when the transport knows it before the body (raw HTTP). */
    policy?: Policy,
    private readonly start: Ticks = ticks(),
    /** A sink that stores the body as it arrives (an EC store that streams its columns), if the placement has one. */
    streamTo?: (policy: Policy, size: number) => FileSink | undefined,
  ) {
    if (policy !== undefined) this.expectPolicy(policy);
    const stream = spill && policy !== undefined && contentLength !== undefined && contentLength > config.smallBlobMaxBytes ? streamTo?.(policy, contentLength) : undefined;
    if (stream) {
      this.streamed = true;
      this.writer = Promise.resolve(stream);
    } else if (contentLength !== undefined && (contentLength <= config.smallBlobMaxBytes || !spill)) {
      this.small = Buffer.allocUnsafe(contentLength);
    } else if (spill && contentLength !== undefined) {
      // A body the disk cannot hold is refused (507) before a byte of it is read.
      store.checkSpace(contentLength);
      this.writer = this.openWriter();
    }
  }

  private openWriter(): Promise<FileSink> {
    const writer = this.store.beginFile().then((w) => {
      if (this.ecSource) w.transient();
      return w;
    });
    writer.catch((err: unknown) => (this.failed ??= err));
    return writer;
  }

  /** The policy is known (a stream's first chunk): an EC blob's file needs no flushes. */
  expectPolicy(policy: Policy): void {
    if (ecScheme(policy) === undefined || this.ecSource) return;
    this.ecSource = true;
    void this.writer?.then((w) => w.transient(), () => undefined);
  }

  /** Copies `bytes` (which may be reused after this call); throws a BlobstoreError on overflow. */
  write(bytes: Uint8Array): void {
    this.lastActivityMs = Date.now();
    if (this.received + bytes.length > this.limit) throw payloadTooLarge(`body larger than ${this.limit} bytes`);
    if (this.contentLength !== undefined && this.received + bytes.length > this.contentLength) throw invalidArgument(`body longer than its declared ${this.contentLength} bytes`);
    if (this.small) {
      this.small.set(bytes, this.received);
      this.received += bytes.length;
      return;
    }
    this.received += bytes.length;
    let at = 0;
    while (at < bytes.length) {
      if (!this.current) {
        this.current = this.store.pool.tryAcquire() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
        this.currentLength = 0;
      }
      const n = Math.min(bytes.length - at, CHUNK_BYTES - this.currentLength);
      // fill() with a source as long as the range is a plain copy, and about twice as fast as
      // set() into a SharedArrayBuffer-backed pool chunk on Node 20.
      this.current.fill(bytes.subarray(at, at + n), this.currentLength, this.currentLength + n);
      this.currentLength += n;
      at += n;
      if (this.currentLength === CHUNK_BYTES) this.pushChunk();
    }
  }

  private pushChunk(): void {
    const chunk = this.current!;
    this.current = undefined;
    if (!this.writer) {
      this.chunks.push(chunk);
      if (!this.spill || this.received <= this.config.smallBlobMaxBytes) return;
      this.spillToFile();
      return;
    }
    this.submit(chunk, CHUNK_BYTES);
  }

  /** Outgrew memory: everything so far goes to a file. */
  private spillToFile(): void {
    this.writer = this.openWriter();
    for (const c of this.chunks.splice(0)) this.submit(c, CHUNK_BYTES);
  }

  private submit(chunk: Buffer, length: number): void {
    this.inflight++;
    const write = this.writer!.then((w) => w.write(length === chunk.length ? chunk : chunk.subarray(0, length))).then(
      () => this.written(chunk),
      (err: unknown) => {
        this.failed ??= err;
        this.written(chunk);
      },
    );
    this.writes.push(write);
    if (this.inflight >= this.config.chunkWritesInFlight && !this.paused && this.live()) {
      this.paused = true;
      this.flow!.pause();
    }
  }

  private written(chunk: Buffer): void {
    this.inflight--;
    if (fromPool(chunk)) this.store.pool.release(chunk);
    if (this.paused && this.inflight < this.config.chunkWritesInFlight && this.live()) {
      this.paused = false;
      this.flow!.resume();
    }
  }

  /** The sender may be paused or resumed only until it is answered or gone. */
  private live(): boolean {
    return this.flow !== undefined && !this.closed;
  }

  /** The sender is answered or gone: no more pause/resume calls reach it. */
  detach(): void {
    this.closed = true;
  }

  /** The whole body in memory (JSON bodies, and raw bodies that stayed small). */
  inMemory(): Buffer | undefined {
    if (this.writer) return undefined;
    if (this.small) return this.received === this.small.length ? this.small : this.small.subarray(0, this.received);
    const parts = this.chunks.slice();
    if (this.current) parts.push(this.current.subarray(0, this.currentLength));
    const body = Buffer.concat(parts, this.received);
    this.releaseChunks();
    return body;
  }

  /** After the last chunk: stores the blob (inline or file) and returns the result. */
  async finish(target: StoreOptions): Promise<PutResult> {
    try {
      const result = await this.storeBody(target);
      this.recorder.done('put', this.start, this.received);
      return result;
    } catch (err) {
      countFailure(this.recorder, 'put', err);
      throw err;
    }
  }

  private async storeBody(target: StoreOptions): Promise<PutResult> {
    if (this.contentLength !== undefined && this.received !== this.contentLength) throw invalidArgument(`body of ${this.received} bytes, ${this.contentLength} declared`);
    // A body of unknown length that outgrew the segment limit without filling a chunk past it
    // (the limit is below 1 MiB, or the last bytes came after a chunk that ended on it).
    if (!this.writer && this.spill && this.received > this.config.smallBlobMaxBytes) this.spillToFile();
    const body = this.inMemory();
    if (body) return this.commit({ data: body }, target);
    if (this.current) {
      const last = this.current;
      this.current = undefined;
      this.submit(last, this.currentLength);
    }
    await Promise.all(this.writes);
    const writer = await this.writer!;
    if (this.failed) throw this.failed;
    if (ecScheme(target.policy)) writer.transient();
    const checksum = await writer.finish();
    // A streamed store's columns were placed as it opened, and are complete on their holders:
    // its outcome is the seal's (at most m of them lost since), not the nodes up now.
    return this.commit({ file: writer, checksum }, this.streamed ? { ...target, placed: true } : target);
  }

  /** Stores bytes decoded from a JSON body, streaming them to a file when they are large. */
  static async storeBuffer(store: LocalStore, config: NodeConfig, commit: Committer, data: Buffer, target: StoreOptions): Promise<PutResult> {
    if (data.length <= config.smallBlobMaxBytes) return commit({ data }, target);
    const writer = await store.beginFile();
    if (ecScheme(target.policy)) writer.transient();
    try {
      for (let at = 0; at < data.length; at += CHUNK_BYTES) await writer.write(data.subarray(at, at + CHUNK_BYTES));
      const checksum = await writer.finish();
      return await commit({ file: writer, checksum }, target);
    } catch (err) {
      await writer.abort();
      throw err;
    }
  }

  private releaseChunks(): void {
    for (const c of this.chunks.splice(0)) if (fromPool(c)) this.store.pool.release(c);
    if (this.current && fromPool(this.current)) this.store.pool.release(this.current);
    this.current = undefined;
  }

  /** Drops everything received: temp file removed, buffers back in the pool. */
  async discard(): Promise<void> {
    this.closed = true;
    this.releaseChunks();
    await Promise.allSettled(this.writes);
    const writer = await this.writer?.catch(() => undefined);
    await writer?.abort();
  }
}
