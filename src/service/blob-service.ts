/**
 * BlobService: the coordinator of every blob operation, once, for every transport (HTTP variant A
 * and B, NDJSON streams, gRPC). A transport decodes its request, calls one method here and
 * encodes the answer. A store goes through one commit point:
 *
 *   policy parsed (transport) ─▶ placement checked once ─▶ local durable write (LocalStore)
 *        ─▶ copies queued for the owners in the same index transaction (in a cluster)
 *        ─▶ the answer: at once (best effort, the spec), or after W owners (replicationAcks)
 *
 * Reads look here first and then ask the owners (Placement.find/fetch); a local copy that fails
 * its checksum is served from an owner instead and repaired. The metrics of every operation are
 * recorded here.
 */
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, notFound, payloadTooLarge, unavailable } from '../errors/errors.js';
import type { CachedRecord } from '../engine/verified-cache.js';
import type { ListResult, PutResult } from '../blob/meta.js';
import { checkPlacement, type Policy } from '../blob/policy.js';
import { ecScheme } from '../ec/layout.js';
import { ecBlobMeta } from './ec-meta.js';
import { Location } from '../index/entry.js';
import { NO_RECORDER, type Operation, type Recorder, countFailure } from '../metrics/recorder.js';
import { BlobWriter, type FlowControl, type StoreContent, type StoreOptions } from './blob-writer.js';
import type { ByteRange, ChunkSink, FileSink, LocalStore, SmallStoreDone } from './local-store.js';
import { type Located, type Placement, SINGLE_NODE } from './placement.js';
import { type Ticks, ticks } from '../metrics/clock.js';

export type { ByteRange, ChunkSink, SmallStoreDone } from './local-store.js';
export type { Located } from './placement.js';
export { BlobWriter, type FlowControl, type StoreOptions } from './blob-writer.js';

export class BlobService {
  /** Stores in flight on every transport (docs/adr/0005-limits.md: 503/UNAVAILABLE beyond the limit). */
  private uploads = 0;

  constructor(
    readonly store: LocalStore,
    readonly config: NodeConfig,
    readonly recorder: Recorder = NO_RECORDER,
    /** SINGLE_NODE on a node alone; a cluster node's is a LatePlacement (late-placement.ts). */
    private readonly placement: Placement = SINGLE_NODE,
  ) {}

  /** Ready for every request (readiness: /healthz, gRPC health): not while joining a cluster. */
  get ready(): boolean {
    return this.placement.ready();
  }

  /** 503 while the placement is not ready: a node alone would place and answer wrongly. */
  private checkReady(): void {
    if (!this.placement.ready()) throw unavailable('this node is not a member of its cluster now (joining it, or removed until a join admits it again); retry shortly or on another node', 1);
  }

  /** Runs `fn` as operation `op`: its latency and failure are recorded. */
  private async timed<T>(op: Operation, bytes: (result: T) => number, fn: () => Promise<T>): Promise<T> {
    const start = ticks();
    try {
      const result = await fn();
      this.recorder.done(op, start, bytes(result));
      return result;
    } catch (err) {
      countFailure(this.recorder, op, err);
      throw err;
    }
  }

  /**
   * Takes one of maxConcurrentUploads slots for a store, whatever its transport, or throws 503
   * (UNAVAILABLE) with Retry-After rather than queueing without bound. Call the returned release
   * once, when the store is answered or dropped.
   */
  admitUpload(): () => void {
    this.takeUpload();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.releaseUpload();
    };
  }

  /** admitUpload without the closure: give the slot back with releaseUpload(), once. */
  takeUpload(): void {
    if (this.uploads >= this.config.maxConcurrentUploads) throw unavailable('too many uploads in progress; retry shortly', 1);
    this.uploads++;
  }

  releaseUpload(): void {
    this.uploads--;
  }

  /**
   * Whether a store of this policy may take the small store's fast path (putSmall): a whole blob,
   * not erasure coded. Call after checkPlacement.
   */
  takesSmallStore(policy: Policy): boolean {
    return ecScheme(policy) === undefined;
  }

  /**
   * A small store of bytes the transport holds only for the call (`data` may be reused once this
   * returns): `done.stored` runs once it is durable (LocalStore.putSmall). Only where
   * takesSmallStore(policy) said so; the transport records the put's metrics. `replicate`: what
   * replicates() said as the store began; then, once stored without an error, the transport calls
   * copiesOf(id, a copy of the bytes) and answers when that settles (as the commit point does for
   * the long way).
   */
  putSmall(data: Uint8Array | ArrayBuffer, policy: Policy, labels: Buffer, done: SmallStoreDone, replicate: boolean): void {
    this.store.putSmall(data, policy, labels, done, replicate);
  }

  /** Whether a client's store of `policy` here is copied to the ring's owners (there are other members; not NONE). */
  replicates(policy: Policy): boolean {
    return this.placement.replicates(policy);
  }

  /**
   * A small store that replicates was stored here: its copies go out (`data`, a copy of its bytes
   * the replicator may send instead of reading them back). Undefined when the answer waits for
   * none, else resolves once replicationAcks owners hold it (503 after the timeout).
   */
  /** A copy of a small store's bytes for copiesOf (pooled memory the copies give back once sent). */
  freshCopy(bytes: Uint8Array | ArrayBuffer): Buffer {
    return this.placement.freshCopy(bytes);
  }

  copiesOf(id: Buffer, data: Buffer): Promise<void> | undefined {
    return this.placement.stored(id, data);
  }

  /**
   * The placement step, once per store: 412 when the policy cannot be placed (EC on too few
   * nodes). A transport that knows the policy before the body calls it early; the commit point
   * does not check again.
   */
  checkPlacement(options: StoreOptions): void {
    if (options.placed) return;
    this.checkPolicy(options.policy);
    options.placed = true;
  }

  /** checkPlacement for a store that holds no StoreOptions (the small store's fast path). */
  checkPolicy(policy: Policy): void {
    this.checkReady();
    checkPlacement(policy, this.placement.nodesAvailable());
  }

  /** The one commit point of every store: placement, the local durable write, the copies. */
  private readonly commit = async (content: StoreContent, target: StoreOptions): Promise<PutResult> => {
    this.checkPlacement(target);
    if (ecScheme(target.policy)) {
      // Columns on the owners; an upload's file was only the source of the encoding.
      try {
        return await this.placement.storeEc(content, target.policy, target.labels);
      } finally {
        if ('file' in content) await content.file.abort();
      }
    }
    const origin = { replicate: this.placement.replicates(target.policy) };
    let result: PutResult;
    if ('data' in content) {
      result = await this.store.putInline(content.data, target.policy, target.labels, origin);
    } else {
      result = await this.store.commitFile(content.file, content.checksum, target.policy, target.labels, origin);
    }
    // A retried store of bytes held here still waits for its copies (replicationAcks), if any are pending.
    if (origin.replicate) await this.placement.stored(result.id, 'data' in content ? content.data : undefined);
    return result;
  };

  /** An EC store's body that the placement stores as it arrives (BlobWriter's streamTo). */
  private readonly openEcStream = (policy: Policy, size: number): FileSink | undefined => this.placement.openEcStream(policy, size);

  /** Stores a blob held in memory. */
  /** A store of bytes already in memory (gRPC Put, a JSON body, a batch's blob), at most maxBlobBytes. */
  put(data: Buffer, options: StoreOptions): Promise<PutResult> {
    return this.timed('put', (r) => r.size, () => {
      const limit = this.config.maxBlobBytes;
      if (data.length > limit) throw payloadTooLarge(`blob of ${data.length} bytes exceeds the limit of ${limit} bytes (MaxBlobBytes)`);
      return BlobWriter.storeBuffer(this.store, this.config, this.commit, data, options);
    });
  }

  /**
   * A streamed store: write() the bytes as they come, then finish(options). `limit` bounds the
   * size (413 beyond); `flow` is paused while the disk is behind. The put is recorded at finish.
   */
  openWriter(flow?: FlowControl, limit = this.config.maxBlobBytes, contentLength?: number, policy?: Policy): BlobWriter {
    return new BlobWriter(flow, this.store, this.commit, this.config, contentLength, limit, true, this.recorder, policy, ticks(), this.openEcStream);
  }

  /** Collects a request body (a JSON store) in memory, bounded by `limit` (413 beyond). */
  openBodyReader(flow?: FlowControl, limit = this.config.maxJsonBodyBytes, contentLength?: number): BlobWriter {
    return new BlobWriter(flow, this.store, this.commit, this.config, contentLength, limit, false);
  }

  /** The metadata of a blob stored here (whole, or columns of it), if it is. */
  local(id: Buffer): Located | undefined {
    return this.held(id);
  }

  /** The blob (or columns of an EC blob) held here. */
  private held(id: Buffer): Located | undefined {
    const here = this.store.stat(id);
    if (here) return here;
    const column = this.store.shardsOf(id)[0];
    return column && ecBlobMeta(column);
  }

  /** The blob here or, in a cluster, on a node that holds it; 404 when nobody has it. */
  async find(id: Buffer): Promise<Located> {
    const here = this.held(id);
    if (here) return here;
    this.checkReady();
    const there = await this.placement.find(id);
    if (!there) throw notFound(`blob ${id.toString('hex')} not found`);
    return there;
  }

  /**
   * The blob here, or a promise of it from another node: callers answer small local blobs
   * without waiting (a GET fast path) and fall back to the promise otherwise.
   */
  locate(id: Buffer): Located | Promise<Located> {
    return this.store.stat(id) ?? this.find(id);
  }

  /** Stat: the metadata here or on another node; undefined when nobody has it. */
  async stat(id: Buffer): Promise<Located | undefined> {
    const start = ticks();
    let meta = this.held(id);
    if (!meta) {
      this.checkReady();
      meta = await this.placement.find(id);
    }
    this.recorder.done('stat', start, 0);
    return meta;
  }

  /** Stat of a local blob only, answered without waiting (HEAD's fast path). */
  statLocal(id: Buffer): Located | undefined {
    const start = ticks();
    const meta = this.store.stat(id);
    if (meta) this.recorder.done('stat', start, 0);
    return meta;
  }

  /**
   * A small local blob's bytes, read and verified on the calling thread (a view of a scratch
   * buffer: copy it out at once), or undefined when the read must go the long way (large, in a
   * file, elsewhere; or a corrupt copy a replica can stand in for).
   */
  readSmallSync(meta: Located): Buffer | undefined {
    if (meta.peer !== undefined || meta.ec !== undefined || meta.location !== Location.SEGMENT) return undefined;
    try {
      return this.store.readInlineSync(meta);
    } catch (err) {
      if (!(err instanceof BlobstoreError && err.kind === 'corruption') || this.placement.nodesAvailable() <= 1) throw err;
      this.placement.repair(meta);
      return undefined;
    }
  }

  /**
   * A small blob stored here, verified, from the read cache or read into it now: the GET fast path
   * (a hit allocates nothing). undefined sends the caller the long way (locate, readSmallSync),
   * which also handles a corrupt copy.
   */
  cachedLocal(id: Buffer): CachedRecord | undefined {
    return this.store.cachedRecord(id);
  }

  /** The whole blob, verified; 413 when it is larger than `maxBytes` (use a stream). */
  read(id: Buffer, maxBytes: number): Promise<{ meta: Located; data: Buffer }> {
    return this.timed('get', (r) => r.meta.size, async () => {
      const meta = await this.find(id);
      if (meta.size > maxBytes) {
        throw payloadTooLarge(`blob of ${meta.size} bytes is larger than ${maxBytes} bytes for one message: use the stream`);
      }
      const data = Buffer.allocUnsafe(meta.size);
      let at = 0;
      await this.deliver(meta, (chunk) => {
        data.fill(chunk, at, at + chunk.length);
        at += chunk.length;
      });
      return { meta, data };
    });
  }

  /** Hands the blob (or `range` of it) to `sink` in verified chunks of at most 1 MiB. */
  stream(meta: Located, sink: ChunkSink, range?: ByteRange): Promise<void> {
    const bytes = range ? range.end - range.start : meta.size;
    return this.timed('get', () => bytes, () => this.deliver(meta, sink, range));
  }

  /**
   * Reads from here or from the peer that holds it. A local copy that fails its checksum part way
   * hands over to an owner for the rest (the client never sees wrong bytes) and is repaired; one
   * removed between its lookup and its read (handed off to its owners) is read from them.
   */
  private async deliver(meta: Located, sink: ChunkSink, range: ByteRange = { start: 0, end: meta.size }): Promise<void> {
    if (meta.peer !== undefined || meta.ec !== undefined) return this.placement.fetch(meta, sink, range);
    let delivered = 0;
    let index = 0;
    try {
      await this.store.read(meta, (chunk) => {
        delivered += chunk.length;
        return sink(chunk, index++);
      }, range);
    } catch (err) {
      if (!(err instanceof BlobstoreError) || this.placement.nodesAvailable() <= 1) throw err;
      if (err.kind === 'corruption') this.placement.repair(meta);
      else if (err.kind !== 'not_found') throw err;
      const there = await this.placement.find(meta.id);
      if (!there) throw err;
      await this.placement.fetch(there, (chunk) => sink(chunk, index++), { start: range.start + delivered, end: range.end });
    }
  }

  /** Records a get answered by a transport's own fast path (a small blob read synchronously). */
  recordGet(start: Ticks, bytes: number): void {
    this.recorder.done('get', start, bytes);
  }

  /** Counts a failed request once, however many layers report it (countFailure). */
  recordFailure(op: Operation, err: unknown): void {
    countFailure(this.recorder, op, err);
  }

  /** Local delete; true whether or not the blob was here (the spec's `deleted`). */
  delete(id: Buffer): Promise<void> {
    return this.timed('delete', () => 0, async () => {
      await this.store.delete(id);
      // The manifest of an EC blob stored as it streamed in, kept here as an owner of its id.
      if (this.store.ecManifests.get(id)) await this.store.ecManifests.remove(id);
    });
  }

  /** A page of ids; `limit` <= 0 means the default page size, larger ones are clamped. */
  list(prefix: string, cursor: string | undefined, limit: number): ListResult {
    const start = ticks();
    try {
      const page = this.store.list(prefix, cursor, this.pageSize(limit));
      this.recorder.done('list', start, 0);
      return page;
    } catch (err) {
      countFailure(this.recorder, 'list', err);
      throw err;
    }
  }

  pageSize(limit: number): number {
    if (!(limit > 0)) return this.config.listDefaultLimit;
    return Math.min(limit, this.config.listMaxLimit);
  }

  /** Why stores cannot be taken now, if they cannot (health checks). */
  get failure(): Error | undefined {
    return this.store.failure;
  }
}
