/**
 * BlobService: the blob operations, once, for every transport (HTTP variant A and B, NDJSON
 * streams, gRPC). A transport decodes its request, calls one method here and encodes the answer;
 * the storage rules live in the engine, the placement step in policy.ts, and the metrics of
 * every operation are recorded here.
 */
import type { NodeConfig } from '../config/settings.js';
import { notFound, payloadTooLarge, toBlobstoreError, unavailable } from '../errors/errors.js';
import type { BlobMeta, Engine, ListResult, PutResult } from '../engine/engine.js';
import { checkPlacement } from '../engine/policy.js';
import { Location } from '../index/entry.js';
import { NO_RECORDER, type Operation, type Recorder } from '../metrics/recorder.js';
import { type ByteRange, type ChunkSink, readBlob } from './blob-reader.js';
import { BlobWriter, type FlowControl, type StoreOptions } from './blob-writer.js';

export type { ByteRange, ChunkSink } from './blob-reader.js';
export { BlobWriter, type FlowControl, type StoreOptions } from './blob-writer.js';

/** Nodes this one can place copies on; the cluster issue replaces it with the ring's view. */
const NODES_AVAILABLE = 1;

export class BlobService {
  /** Stores in flight on every transport (DESIGN §5: 503/UNAVAILABLE beyond the limit). */
  private uploads = 0;

  constructor(
    readonly engine: Engine,
    readonly config: NodeConfig,
    readonly recorder: Recorder = NO_RECORDER,
  ) {}

  /** Runs `fn` as operation `op`: its latency and failure are recorded. */
  private async timed<T>(op: Operation, bytes: (result: T) => number, fn: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      const result = await fn();
      this.recorder.done(op, start, bytes(result));
      return result;
    } catch (err) {
      this.recorder.failed(op, toBlobstoreError(err));
      throw err;
    }
  }

  /**
   * Takes one of maxConcurrentUploads slots for a store, whatever its transport, or throws 503
   * (UNAVAILABLE) with Retry-After rather than queueing without bound. Call the returned release
   * once, when the store is answered or dropped.
   */
  admitUpload(): () => void {
    if (this.uploads >= this.config.maxConcurrentUploads) throw unavailable('too many uploads in progress; retry shortly', 1);
    this.uploads++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.uploads--;
    };
  }

  /** Fails a store up front when its policy cannot be placed (412 for EC on too few nodes). */
  checkPlacement(options: StoreOptions): void {
    checkPlacement(options.policy, NODES_AVAILABLE);
  }

  /** Stores a blob held in memory. */
  put(data: Buffer, options: StoreOptions): Promise<PutResult> {
    return this.timed('put', (r) => r.size, async () => {
      this.checkPlacement(options);
      return BlobWriter.storeBuffer(this.engine, data, options);
    });
  }

  /**
   * A streamed store: write() the bytes as they come, then finish(options). `limit` bounds the
   * size (413 beyond); `flow` is paused while the disk is behind. The put is recorded at finish.
   */
  openWriter(flow?: FlowControl, limit = this.config.maxBlobBytes, contentLength?: number): BlobWriter {
    return new BlobWriter(flow, this.engine, this.config, contentLength, limit, true, this.recorder);
  }

  /** Collects a request body (a JSON store) in memory, bounded by `limit` (413 beyond). */
  openBodyReader(flow?: FlowControl, limit = this.config.maxJsonBodyBytes, contentLength?: number): BlobWriter {
    return new BlobWriter(flow, this.engine, this.config, contentLength, limit, false);
  }

  /** The metadata of a stored blob; 404 when it is not on this node. */
  lookup(id: Buffer): BlobMeta {
    const meta = this.engine.stat(id);
    if (!meta) throw notFound(`blob ${id.toString('hex')} not found`);
    return meta;
  }

  stat(id: Buffer): BlobMeta | undefined {
    const start = performance.now();
    const meta = this.engine.stat(id);
    this.recorder.done('stat', start, 0);
    return meta;
  }

  /** The whole blob, verified; 413 when it is larger than `maxBytes` (use a stream). */
  read(id: Buffer, maxBytes: number): Promise<{ meta: BlobMeta; data: Buffer }> {
    return this.timed('get', (r) => r.meta.size, async () => {
      const meta = this.lookup(id);
      if (meta.size > maxBytes) {
        throw payloadTooLarge(`blob of ${meta.size} bytes is larger than ${maxBytes} bytes for one message: use the stream`);
      }
      // A segment record is read whole and verified already; a file blob is gathered chunk by chunk.
      if (meta.location === Location.SEGMENT) return { meta, data: await this.engine.readInline(meta) };
      const data = Buffer.allocUnsafe(meta.size);
      let at = 0;
      await readBlob(this.engine, meta, (chunk) => {
        data.fill(chunk, at, at + chunk.length);
        at += chunk.length;
      });
      return { meta, data };
    });
  }

  /** Hands the blob (or `range` of it) to `sink` in verified chunks of at most 1 MiB. */
  stream(meta: BlobMeta, sink: ChunkSink, range?: ByteRange): Promise<void> {
    const bytes = range ? range.end - range.start : meta.size;
    return this.timed('get', () => bytes, () => readBlob(this.engine, meta, sink, range));
  }

  /** Records a get answered by a transport's own fast path (a small blob read synchronously). */
  recordGet(start: number, bytes: number): void {
    this.recorder.done('get', start, bytes);
  }

  recordFailure(op: Operation, err: unknown): void {
    this.recorder.failed(op, toBlobstoreError(err));
  }

  /** Local delete; true whether or not the blob was here (the spec's `deleted`). */
  delete(id: Buffer): Promise<void> {
    return this.timed('delete', () => 0, () => this.engine.delete(id));
  }

  /** A page of ids; `limit` <= 0 means the default page size, larger ones are clamped. */
  list(prefix: string, cursor: string | undefined, limit: number): ListResult {
    const start = performance.now();
    try {
      const page = this.engine.list(prefix, cursor, this.pageSize(limit));
      this.recorder.done('list', start, 0);
      return page;
    } catch (err) {
      this.recorder.failed('list', toBlobstoreError(err));
      throw err;
    }
  }

  pageSize(limit: number): number {
    if (!(limit > 0)) return this.config.listDefaultLimit;
    return Math.min(limit, this.config.listMaxLimit);
  }
}
