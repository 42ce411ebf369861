/**
 * The coordinator of an erasure-coded store (docs/erasure-coding.md). Any node takes the store;
 * the blob's id places its k + m columns on the first k + m distinct nodes of the ring:
 *
 *   bytes (memory, or the upload's transient file) ─▶ rows of cells (striper.ts, parity in line)
 *     ─▶ column i ─▶ owner i: this node (ColumnWriter) | a peer (a PUT to its API listener, or a
 *                                                          batch of small columns: a POST to it)
 *   all answered: ≤ m failed ─▶ failed columns queued for repair (durable) ─▶ 2xx
 *                 > m failed ─▶ the stored columns are taken back ─▶ 503, nothing visible
 *
 * A column is acknowledged only once durable on its node, so a 2xx means at least k columns on k
 * distinct nodes: the blob survives the loss of any m of them from then on.
 */
import { randomBytes } from 'node:crypto';
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError } from '../errors/errors.js';
import { CELL_BYTES, ecScheme, shardBytesFor, StripeLayout } from '../ec/layout.js';
import { type BlobSource, encodeRows, fileSource, memorySource, RowPool } from '../ec/striper.js';
import { idOfDigest } from '../blob/id.js';
import type { PutResult } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import { columnChecksumAt } from '../blob/shard.js';
import { blake3, createHasher } from '../hash/blake3.js';
import type { Logger } from '../log/logger.js';
import type { ClusterMetrics } from '../metrics/cluster-metrics.js';
import type { LocalStore } from '../service/local-store.js';
import type { FileSink } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import { type ColumnHeader, ColumnWriter } from './column-writer.js';
import type { PeerTransport } from './transport/peer-transport.js';
import type { ShardBatcher } from './shard-transfer.js';
import { EcStream } from './ec-stream.js';
import { manifestOf, writeManifest } from './ec-manifest.js';
import type { HttpColumnSender } from './transport/http-column.js';
import { type ColumnTarget, columnTargets } from './ec-targets.js';
import { ColumnLag, ColumnLagError } from './column-lag.js';

/** A received blob: in memory, or in the upload's (transient) file. */
export type EcContent = { readonly data: Buffer } | { readonly file: FileSink; readonly checksum: Buffer };

/** No holder is known to have hung before a store's first call. */
const NONE_HUNG: ReadonlySet<string> = new Set();

/**
 * A whole store asks the id's owners whether they hold the blob with this share of
 * peerCallTimeoutMs (1 s of the default 5 s): one that has hung would otherwise hold the store
 * back a whole deadline before its column lags as long again. An owner too slow for it counts as
 * not holding the blob: the store goes on, and a column its holder had already is left alone.
 */
const HELD_CHECK_SHARE = 5;

/** Bytes a column stream may take per second at least before it counts as failed (with ecStoreTimeoutMs). */
const SLOWEST_STORE_BYTES_PER_S = 8 * 1024 * 1024;

export class EcWriter {
  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly batcher: ShardBatcher,
    private readonly metrics: ClusterMetrics,
    private readonly config: NodeConfig,
    private readonly log: Logger,
    /** A store left columns to repair (about `bytes` to rebuild): the repair worker takes them soon. */
    private readonly queuedForRepair: (id: Buffer, bytes: number) => void,
  ) {}

  /**
   * A stream for a store of `size` bytes whose columns leave as the body arrives (ec-stream.ts),
   * or undefined where the whole body is taken first: the blob is smaller than ecStreamMinBytes (or
   * fits in memory).
   */
  openStream(policy: Policy, size: number): EcStream | undefined {
    const scheme = ecScheme(policy);
    if (!scheme || size < this.config.ecStreamMinBytes || size <= this.config.smallBlobMaxBytes) return undefined;
    const layout = new StripeLayout(scheme.k, scheme.m, shardBytesFor(size, this.config), size);
    const placement = randomBytes(16);
    const targets = columnTargets(this.cluster, placement, layout.shards);
    // A column stream times out only while stalled, and before the client's body would (the client
    // is paused meanwhile): a frozen holder costs its column, not the store.
    const timeouts = { stallMs: Math.min(this.config.ecStoreTimeoutMs, this.config.bodyIdleTimeoutMs / 2), answerTimeoutMs: this.config.ecStoreTimeoutMs, lagMs: this.lagMs() };
    return new EcStream(layout, policy, placement, targets, this.store, this.store.chunkCv, this.config, this.transport, timeouts, this.log);
  }

  /** Stores the blob as k + m columns on its owners; see the module comment for the outcome. */
  async put(content: EcContent, policy: Policy, labels: Buffer): Promise<PutResult> {
    if ('file' in content && content.file instanceof EcStream) return this.seal(content.file, content.checksum, labels);
    const scheme = ecScheme(policy)!;
    const checksum = 'data' in content ? blake3(content.data) : content.checksum;
    const id = Buffer.from(idOfDigest(checksum));
    const size = 'data' in content ? content.data.length : content.file.size;
    // A blob the cluster holds already keeps its first copy and policy (a store of existing bytes
    // is a no-op): here, or on its id's first owners, as a streamed store's seal asks. Columns
    // placed by another key (a streamed store's) or by an earlier ring are not placed again.
    if (await this.held(id, scheme.m + 1, NONE_HUNG, Math.ceil(this.config.peerCallTimeoutMs / HELD_CHECK_SHARE))) return { id, size, created: false };
    const layout = new StripeLayout(scheme.k, scheme.m, shardBytesFor(size, this.config), size);
    const header = (index: number): ColumnHeader => ({
      id, index, policy, shardBytes: layout.shardBytes, blobBytes: size, blobChecksum: checksum, blobLabels: labels, createdAtNs: BigInt(Date.now()) * 1_000_000n,
    });
    const targets = columnTargets(this.cluster, id, layout.shards);
    const source = 'data' in content ? memorySource(content.data) : await fileSource(content.file.tmpPath, size);
    try {
      if ('data' in content) await this.storeWhole(source, layout, targets, header);
      else await this.storeStreamed(source, layout, targets, header);
    } finally {
      await source.close();
    }
    return this.outcome(id, size, policy, targets, layout.columnBytes);
  }

  /**
   * A blob held in memory: whole columns built at once, small ones batched per peer. Its buffers
   * are its own, not the chunk pool's: columns of a few KiB would each hold a 1 MiB chunk.
   */
  private async storeWhole(source: BlobSource, layout: StripeLayout, targets: ColumnTarget[], header: (i: number) => ColumnHeader): Promise<void> {
    const encodeStart = performance.now();
    const columns = targets.map(() => Buffer.allocUnsafe(layout.columnBytes));
    for await (const row of encodeRows(source, layout)) row.cells.forEach((cell, i) => cell.copy(columns[i]!, row.columnOffset));
    if (layout.stripes > 0) this.metrics.observe('ec_encode', encodeStart);
    const checksums = Buffer.concat(columns.map((column) => blake3(column)));
    // A column lagging behind the others is failed, not waited for: its batch goes on without this store.
    const lag = new ColumnLag<ColumnTarget>(this.lagMs(), () => layout.m - failedCount(targets), (t, err) => (t.failure ??= err));
    const answers = new Map<ColumnTarget, Promise<void>>();
    for (const t of targets) {
      if (t.failure) continue;
      answers.set(t, (async () => {
        const storeStart = performance.now();
        const data = columns[t.index]!;
        try {
          const columnChecksum = columnChecksumAt(checksums, t.index);
          const h = header(t.index);
          let created: boolean;
          if (t.peer === undefined) {
            const writer = new ColumnWriter(this.store, this.config, h, layout.columnBytes);
            await writer.write(data);
            created = (await writer.finish(columnChecksum, checksums)).created;
          } else {
            created = (await this.batcher.store(t.peer, h, data, columnChecksum, checksums)).created;
          }
          // An answer after the column was failed for lagging changes nothing: the store went on without it.
          if (t.failure) return;
          t.created = created;
          this.metrics.observe('shard_store', storeStart);
        } catch (err) {
          t.failure ??= err as Error;
        }
      })());
    }
    try {
      await lag.settle(answers);
    } finally {
      lag.close();
    }
  }

  /**
   * A blob in a file: rows are encoded and sent column by column as each sink drains, to every
   * holder not failed already (more than m failures stop it). Row buffers are reused (ecRowsInFlight of them, borrowed from the
   * node's chunk pool while it has them): a row goes back once every sink is done with its cell, and the next row is read and
   * encoded while the sinks drain the last one.
   */
  private async storeStreamed(source: BlobSource, layout: StripeLayout, all: ColumnTarget[], header: (i: number) => ColumnHeader): Promise<void> {
    const sending = all.filter((t) => !t.failure);
    const storeStart = performance.now();
    const timeoutMs = this.config.ecStoreTimeoutMs + (layout.columnBytes / SLOWEST_STORE_BYTES_PER_S) * 1000;
    const sinks = new Map<ColumnTarget, ColumnWriter | HttpColumnSender>();
    for (const t of sending) {
      const h = header(t.index);
      sinks.set(t, t.peer === undefined
        ? new ColumnWriter(this.store, this.config, h, layout.columnBytes)
        : this.transport.column(t.peer, h, layout.columnBytes, { repair: false, timeoutMs, checksums: layout.shards }));
    }
    const pool = new RowPool(layout.shards, CELL_BYTES, this.config.ecRowsInFlight, this.store.pool);
    // Rows each sink still holds: handed back at once if the sink fails.
    const held = new Map(sending.map((t) => [t, new Set<Buffer[]>()]));
    // Every column is hashed, a failed one's too: each column keeps every column's checksum, which its rebuild must match.
    const hashers = all.map(() => createHasher());
    // A column that holds the others back (its holder hung) is failed while the store can lose it.
    const lag = new ColumnLag<ColumnTarget>(this.lagMs(), () => layout.m - failedCount(all), (t, err) => failed(t, err));
    const failed = (t: ColumnTarget, err: unknown): void => {
      t.failure ??= err as Error;
      lag.caughtUp(t);
      const sink = sinks.get(t);
      sinks.delete(t);
      if (sink instanceof ColumnWriter) void sink.abort();
      else sink?.abort();
      for (const row of held.get(t)!) pool.release(row);
      held.get(t)!.clear();
    };
    try {
      let encodeMs = 0;
      let drains: Promise<void>[] = [];
      const rows = encodeRows(source, layout, pool.take);
      for (;;) {
        const t0 = performance.now();
        const next = await rows.next();
        encodeMs += performance.now() - t0;
        if (next.done) break;
        const row = next.value;
        await Promise.all(drains);
        const live = [...sinks.keys()];
        pool.handOut(row.buffers, live.length);
        row.cells.forEach((cell, i) => hashers[i]!.update(cell));
        drains = live.map((t) => {
          const cell = row.cells[t.index]!;
          held.get(t)!.add(row.buffers);
          const done = (): void => {
            if (held.get(t)!.delete(row.buffers)) pool.release(row.buffers);
          };
          const written = sinks.get(t)!.write(cell, done);
          lag.behind(t);
          return written.then(() => lag.caughtUp(t), (err: unknown) => failed(t, err));
        });
        if (all.filter((t) => t.failure).length > layout.m || sinks.size === 0) break;
      }
      await Promise.all(drains);
      if (layout.stripes > 0) this.metrics.observeSeconds('ec_encode', encodeMs / 1000);
      const checksums = Buffer.concat(hashers.map((h) => h.digest()));
      const answers = new Map<ColumnTarget, Promise<void>>();
      for (const [t, sink] of sinks) {
        if (t.failure) continue;
        answers.set(t, (async () => {
          try {
            const { created } = await sink.finish(columnChecksumAt(checksums, t.index), checksums);
            if (t.failure) return; // failed for lagging meanwhile: the store went on without it
            t.created = created;
            this.metrics.observe('shard_store', storeStart);
          } catch (err) {
            failed(t, err);
          }
        })());
      }
      await lag.settle(answers);
    } finally {
      lag.close();
      // Every row is back once the sinks have answered or failed; their buffers go back to the node's pool.
      pool.close();
    }
  }

  /**
   * How long a column may hold the others back before it counts as failed (column-lag.ts): a call
   * to a peer's deadline. Well under the 10 s a holder's uWS lets a request body stay quiet, so the
   * healthy columns, kept waiting meanwhile, are not closed by their holders.
   */
  private lagMs(): number {
    return Math.min(this.config.peerCallTimeoutMs, this.config.ecStoreTimeoutMs);
  }

  /**
   * The streamed columns' last bytes go: each column's checksum and the seal naming the blob, with
   * which its holder commits it (durable and visible); once at least k are, the manifest goes to
   * the id's first m + 1 owners. A blob the cluster holds already keeps its first copy: the
   * columns' streams are cut and their holders drop them.
   */
  private async seal(stream: EcStream, checksum: Buffer, labels: Buffer): Promise<PutResult> {
    const id = Buffer.from(idOfDigest(checksum));
    const { layout, policy, placement } = stream;
    const sealStart = performance.now();
    // Holders that hung during this store are not asked again: each would cost a call's deadline.
    const hung = new Set(stream.columns.filter((c) => c.failure instanceof ColumnLagError).map((c) => c.node));
    if (await this.held(id, layout.m + 1, hung)) {
      await stream.drop();
      return { id, size: layout.blobBytes, created: false };
    }
    const blob = { id, policy, blobChecksum: checksum, blobLabels: labels, createdAtNs: BigInt(Date.now()) * 1_000_000n };
    await stream.seal(blob);
    this.metrics.observe('ec_seal', sealStart);
    const sealed = stream.columns.filter((c) => !c.failure);
    if (sealed.length >= layout.k) {
      const meta = { policy, size: layout.blobBytes, createdAtNs: blob.createdAtNs, checksum, labels };
      const manifestStart = performance.now();
      const { held, failures } = await writeManifest(this.store, this.cluster, this.transport, id, manifestOf(meta, placement, layout.shardBytes), layout.m + 1, this.config.peerCallTimeoutMs, hung);
      this.metrics.observe('ec_manifest', manifestStart);
      if (failures.length > 0) this.log.warn({ blob: id.toString('hex'), held, failed: failures.map((f) => ({ node: f.node, err: f.err.message })) }, 'EC store: the manifest is not on every owner of the id');
      if (held === 0) {
        // Nobody could find the blob: its columns go, and the client retries.
        await this.takeBack(id, sealed);
        throw new BlobstoreError('unavailable', `no owner of the blob's id took its manifest (${failures[0]?.err.message ?? 'none online'}); retrying is safe`, {
          headers: { 'Retry-After': '1' }, peer: true,
        });
      }
    }
    const result = await this.outcome(id, layout.blobBytes, policy, stream.columns, layout.columnBytes, placement);
    this.metrics.ecStreamedStore();
    return result;
  }

  /**
   * Whether the cluster holds the blob already: here (whole, a column or its manifest), or on
   * the first `owners` owners of its id, who hold its manifest or columns placed by the id.
   */
  private async held(id: Buffer, owners: number, hung: ReadonlySet<string>, timeoutMs = this.config.peerCallTimeoutMs): Promise<boolean> {
    if (this.store.stat(id) || this.store.shardsOf(id).length > 0 || this.store.ecManifests.get(id)) return true;
    const answers = await Promise.all(this.cluster.ring.owners(id, owners).filter((n) => n !== this.cluster.nodeId).map(async (node) => {
      const member = this.cluster.member(node);
      if (!member || !this.cluster.online(node) || hung.has(node)) return false;
      const res = await this.transport.stat(member, id, timeoutMs).catch(() => ({ exists: false }));
      return res.exists === true;
    }));
    return answers.some(Boolean);
  }

  private async outcome(id: Buffer, size: number, policy: Policy, targets: ColumnTarget[], columnBytes: number, placement?: Buffer): Promise<PutResult> {
    const failures = targets.filter((t) => t.failure);
    const m = ecScheme(policy)!.m;
    if (failures.length > m) {
      this.log.warn({ blob: id.toString('hex'), failed: failures.map((t) => ({ column: t.index, node: t.node, err: t.failure!.message })) },
        'EC store failed: more shard stores failed than the policy tolerates; the stored columns are taken back');
      // Too few columns to trust: take back the ones stored, so nothing of the blob stays visible.
      await this.takeBack(id, targets.filter((t) => !t.failure));
      throw new BlobstoreError('unavailable', `${failures.length} of ${targets.length} shard stores failed (at most ${m} may): ${failures[0]!.failure!.message}; retrying is safe`, {
        headers: { 'Retry-After': '1' }, peer: true,
      });
    }
    if (failures.length > 0) {
      // Durable before the answer: the missing columns will be rebuilt whatever happens next.
      await this.store.ecRepairs.put(id, {
        ...(placement ? { placement } : {}), policy, queuedAtMs: Date.now(), reason: `store: ${failures.map((t) => `column ${t.index} on ${t.node}`).join(', ')} failed`, bytes: failures.length * columnBytes,
      });
      this.metrics.shardsMissingDetected(failures.length);
      this.log.warn({ blob: id.toString('hex'), failed: failures.map((t) => ({ column: t.index, node: t.node, err: t.failure!.message })) },
        'EC store: some shard stores failed; the blob is stored and their columns are queued for repair');
      this.queuedForRepair(id, failures.length * columnBytes);
    }
    return { id, size, created: targets.some((t) => t.created === true) };
  }

  /**
   * Deletes the columns this store made. A column its holder had already (`created` false: the
   * same bytes stored before, content addressing) is another store's, perhaps of a blob the
   * cluster acknowledged: it stays, or a failed store of existing bytes would delete that blob.
   */
  private async takeBack(id: Buffer, stored: ColumnTarget[]): Promise<void> {
    await Promise.allSettled(stored.filter((t) => t.created === true).map(async (t) => {
      if (t.peer === undefined) return this.store.deleteShards(id, t.index, true);
      await this.transport.call(t.peer, 'DeleteShard', { id: { id }, index: t.index });
    })).then((results) => {
      const left = results.filter((r) => r.status === 'rejected').length;
      if (left > 0) this.log.warn({ blob: id.toString('hex'), left }, 'EC store failed: some stored columns could not be taken back (the scrubber finds them)');
    });
  }
}


function failedCount(targets: readonly ColumnTarget[]): number {
  let n = 0;
  for (const t of targets) if (t.failure) n++;
  return n;
}
