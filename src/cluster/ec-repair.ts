/**
 * Repair of erasure-coded blobs (docs/erasure-coding.md): a persistent queue of blobs whose
 * columns need work (a store that lost up to m shard stores, a read or the scrubber that found a
 * column missing or corrupt), and a worker that rebuilds what is missing onto the owners:
 *
 *   queued id ─▶ survey: who holds which column (StatBlob on the owners and the next ones)
 *     ─▶ missing columns ─▶ paired with owners that hold none (a node's second column when the
 *        ring has fewer than k + m nodes)
 *     ─▶ k present columns, each streamed once ─▶ every cell row: reconstruct ─▶ StoreShard (repair)
 *     ─▶ the rebuilt column's checksum must be the one its store computed (kept by every column)
 *     ─▶ all stored (or declined: a user deleted the blob there) ─▶ the entry goes
 *
 * A target that is offline, or a survey that cannot reach enough nodes, leaves the entry for a
 * later pass, retried with back-off. Bytes read for repair are capped at repairBytesPerSecond.
 * Progress (blobs and bytes queued, rate, time left) is kept for metrics, cluster/state and the UI.
 */
import { deleteHolds } from './deleted-here.js';
import { Backoffs } from '../util/backoff.js';
import { BackgroundLoop } from '../util/background-loop.js';
import { BlobstoreError } from '../errors/errors.js';
import { reconstruct } from '../ec/codec.js';
import { CELL_BYTES, ecScheme, StripeLayout } from '../ec/layout.js';
import { createHasher } from '../hash/blake3.js';
import { columnChecksumAt, placementKey } from '../blob/shard.js';
import type { Logger } from '../log/logger.js';
import type { ClusterMetrics } from '../metrics/cluster-metrics.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import { type ColumnHeader, ColumnWriter } from './column-writer.js';
import type { EcBlob, EcReader, Holders } from './ec-reader.js';
import { storedChecksums } from './ec-read-state.js';
import type { PeerTransport } from './transport/peer-transport.js';
import { PeerPutError } from './transport/http-put.js';
import type { RebuildInput } from './row-rebuild.js';
import type { HttpColumnSender } from './transport/http-column.js';
import type { TokenBucket } from './token-bucket.js';
import type { NodeConfig } from '../config/settings.js';

export interface EcRepairOptions {
  retryMaxMs: number;
  /** The cap on bytes read for repair (shared with anti-entropy and handoff). */
  bucket: TokenBucket;
  timeoutMs: number;
}

export interface EcRepairProgress {
  /** Blobs in the queue, and the bytes their repairs are estimated to rebuild. */
  blobsQueued: number;
  bytesLeft: number;
  /** Columns rebuilt and their bytes, since start. */
  columnsRepaired: number;
  bytesRepaired: number;
  /** Bytes read for repair per second over the last pass. */
  bytesPerSecond: number;
}

const RETRY_FIRST_MS = 500;
const PAGE = 256;

export class EcRepairer {
  readonly progress: EcRepairProgress = { blobsQueued: 0, bytesLeft: 0, columnsRepaired: 0, bytesRepaired: 0, bytesPerSecond: 0 };
  private readonly backoff: Backoffs;
  private readonly loop: BackgroundLoop;
  /**
   * Rebuilds of a blob (by id) that did not match the checksums its store computed: each next try
   * leaves out another of the columns present, so that one wrong source among them is left out
   * in turn when there are more than k.
   */
  private readonly mismatched = new Map<string, number>();
  /** The source a matching rebuild left out, by blob id: checked on the blob's next survey. */
  private readonly suspects = new Map<string, number>();
  /** Blobs whose every owner answered with fewer than k columns: logged once each (bounded by the repair queue). */
  private readonly reportedShort = new Set<string>();

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly reader: EcReader,
    private readonly metrics: ClusterMetrics,
    private readonly config: NodeConfig,
    private readonly log: Logger,
    private readonly options: EcRepairOptions,
  ) {
    this.backoff = new Backoffs(RETRY_FIRST_MS, options.retryMaxMs);
    this.loop = new BackgroundLoop({
      step: () => this.pass(), everyMs: Math.min(5_000, options.retryMaxMs),
      onError: (err) => this.log.error({ err }, `EC repair: ${err.message}`),
    });
  }

  start(): void {
    this.loop.start();
    this.loop.kick();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /**
   * A column of the blob was found missing or failing: queued (durably) and repaired soon; `bytes`:
   * an estimate of what to rebuild; `suspect`: a column a read found wrong though it matches its own
   * checksum (its holder drops it where the holders agree on the blob's column checksums).
   */
  queue(id: Buffer, policy: number, reason: string, bytes = 0, placement?: Buffer, suspect?: number): void {
    if (this.stopped) return;
    if (suspect !== undefined && this.suspects.get(id.toString('hex')) !== suspect) {
      this.suspects.set(id.toString('hex'), suspect);
      this.kick();
    }
    if (this.store.ecRepairs.get(id)) return;
    void this.store.ecRepairs.put(Buffer.from(id), { policy, queuedAtMs: Date.now(), reason, bytes, ...(placement ? { placement } : {}) }).then(
      () => {
        this.progress.blobsQueued++;
        this.progress.bytesLeft += bytes;
        this.kick();
      },
      (err: Error) => this.log.error({ blob: id.toString('hex'), err }, `EC repair: could not queue: ${err.message}`),
    );
  }

  /** A pass soon (a repair was queued); while one runs, one more after it. */
  kick(): void {
    this.loop.kick();
  }

  private async pass(): Promise<void> {
    let after: Buffer | undefined;
    const passStart = performance.now();
    const bytesBefore = this.progress.bytesRepaired;
    this.recount();
    for (;;) {
      const page = this.store.ecRepairs.page(PAGE, after);
      if (page.length === 0) break;
      for (const { id, entry } of page) {
        if (this.stopped) return;
        const key = id.toString('hex');
        if (!this.backoff.due(key)) continue;
        let done = false;
        try {
          done = await this.repairOne(id, entry.policy, entry.placement ? Buffer.from(entry.placement) : undefined, entry.queuedAtMs);
        } catch (err) {
          // The target holds the column, or another holder's repair writes it: the next try finds it there.
          if (err instanceof PeerPutError && err.status === 409) this.log.info({ blob: key, err: err.message }, 'EC repair: the column is there or being rebuilt by another node; looking again later');
          else this.log.warn({ blob: key, err: (err as Error).message }, 'EC repair failed; retrying with back-off');
        }
        if (done) {
          await this.store.ecRepairs.remove(id);
          this.backoff.clear(key);
          this.mismatched.delete(key);
          this.suspects.delete(key);
          this.progress.blobsQueued = Math.max(0, this.progress.blobsQueued - 1);
          this.progress.bytesLeft = Math.max(0, this.progress.bytesLeft - (entry.bytes ?? 0));
        } else {
          this.backoff.failed(key);
        }
      }
      after = page[page.length - 1]!.id;
      if (page.length < PAGE) break;
    }
    const seconds = (performance.now() - passStart) / 1000;
    if (seconds > 0.05) this.progress.bytesPerSecond = (this.progress.bytesRepaired - bytesBefore) / seconds;
  }

  /** The queue's size and estimated bytes, counted afresh (once a pass). */
  private recount(): void {
    let blobs = 0;
    let bytes = 0;
    for (let after: Buffer | undefined; ;) {
      const page = this.store.ecRepairs.page(PAGE, after);
      for (const { entry } of page) {
        blobs++;
        bytes += entry.bytes ?? 0;
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.id;
    }
    this.progress.blobsQueued = blobs;
    this.progress.bytesLeft = bytes;
  }

  /** Rebuilds the blob's missing columns onto owners; true when nothing is left to do for it. */
  async repairOne(id: Buffer, policy: number, placement?: Buffer, queuedAtMs = 0): Promise<boolean> {
    const scheme = ecScheme(policy);
    if (!scheme) return true;
    const shards = scheme.k + scheme.m;
    const { holders, blob, unreachable, slow, votes } = await this.reader.survey(id, shards, placement);
    if (!blob) {
      // No column anywhere it could be: gone for good when every candidate answered (deleted
      // everywhere, or a store that never completed), else ask again later.
      return unreachable === 0 && slow === 0;
    }
    // A user deleted it here after it was made: this node rebuilds none of it (its own column
    // would bring the blob back here; holders that deleted it decline theirs likewise).
    if (deleteHolds(this.store, id, blob.meta)) return true;
    const layout = this.reader.layoutOf(blob);
    const key = id.toString('hex');
    const checksums = storedChecksums(blob, layout);
    const suspect = this.suspects.get(key);
    if (suspect !== undefined) {
      // Dropped only where k nodes or more, and more than name any others, name the checksums.
      const trusted = votes.for >= scheme.k && votes.for > votes.against;
      const holder = holders.get(suspect);
      const dropped = checksums !== undefined && trusted && holder !== undefined && (await this.droppedIfWrong(id, holder, suspect, columnChecksumAt(checksums, suspect)));
      if (dropped) {
        // Rebuilt now, from the others (data first again).
        this.suspects.delete(key);
        this.mismatched.delete(key);
        return this.repairOne(id, policy, placement);
      }
      // Not dropped (the holders do not agree enough, or it holds the right one): it stays left
      // out as a source while more than k columns are present (sourcesOf), until the blob is done.
    }
    const missing = [...Array(shards).keys()].filter((i) => !holders.has(i));
    if (missing.length === 0) return true;
    if (holders.size < scheme.k) {
      // With owners out of reach (this node cut off, or peers down) or slow to answer (a busy
      // machine) the columns may be there: it waits, as any repair does. So it does for a blob
      // queued less than a store's deadline ago: its columns may still be arriving from a store
      // under way. Every owner answered, and fewer than k hold one: said once.
      const young = Date.now() - queuedAtMs < this.config.ecStoreTimeoutMs;
      if (unreachable > 0 || slow > 0 || young) this.log.debug({ blob: key, held: holders.size, k: scheme.k, unreachable, slow }, 'EC repair: fewer than k columns reachable; waiting for the owners');
      else if (!this.reportedShort.has(key)) {
        this.reportedShort.add(key);
        this.log.error({ blob: key, held: holders.size, k: scheme.k }, 'EC repair: fewer than k columns are left; the blob cannot be rebuilt now');
      }
      return false;
    }
    this.reportedShort.delete(key);
    const targets = this.targetsFor(placementKey(id, blob), shards, holders, missing);
    if (targets.size === 0) return false;
    const tries = this.mismatched.get(key) ?? 0;
    const settled = await this.rebuild(blob, layout, holders, targets);
    if (settled !== missing.length) return false;
    // Rebuilt right only once a source was left out: that source is suspect, checked next.
    const left = tries > 0 ? this.leftOut(holders, scheme.k, tries) : undefined;
    if (left === undefined || !checksums) return true;
    this.suspects.set(key, left);
    return this.repairOne(id, policy, placement);
  }

  /**
   * Has column `index`'s holder drop it if its checksum is not `expected`, the one its store
   * computed (a column wrong though it matches its own checksum); whether it did. The holder
   * decides on its own record, so a column replaced meanwhile is not dropped.
   */
  private async droppedIfWrong(id: Buffer, node: string, index: number, expected: Buffer): Promise<boolean> {
    let dropped: boolean;
    if (node === '') {
      const held = this.store.shardsOf(id).find((c) => c.shard.index === index);
      dropped = held !== undefined && !held.checksum.equals(expected);
      if (dropped) await this.store.deleteShards(id, index, true);
    } else {
      const member = this.cluster.member(node);
      if (!member) return false;
      const answer = await this.transport.call<{ deleted?: number }>(member, 'DeleteShard', { id: { id }, index, unless_checksum: expected });
      dropped = (answer.deleted ?? 0) > 0;
    }
    if (dropped) {
      this.log.error({ blob: id.toString('hex'), column: index, holder: node === '' ? this.cluster.nodeId : node },
        'EC repair: a column is wrong though it matches its own checksum (not the checksum its store computed); its holder dropped it, and it is rebuilt');
      this.reader.forget(id);
    }
    return dropped;
  }

  /** Missing column -> owner to hold it: owners without a column first (in ring order), online ones only. */
  private targetsFor(key: Buffer, shards: number, holders: Holders, missing: number[]): Map<number, string> {
    const self = this.cluster.nodeId;
    const owners = this.cluster.ring.owners(key, shards);
    const holding = new Set([...holders.values()].map((n) => (n === '' ? self : n)));
    const free = owners.filter((n) => !holding.has(n));
    // With fewer nodes than columns some node holds two: owners again, in ring order.
    const order = [...free, ...owners];
    const targets = new Map<number, string>();
    missing.forEach((index, j) => {
      const node = order[j % Math.max(1, order.length)];
      if (node !== undefined && (node === self || this.cluster.online(node))) targets.set(index, node);
    });
    return targets;
  }

  /**
   * Rebuilds `targets`' columns and stores them; how many settled (stored or declined). k present
   * columns (data first) are each read as one stream per window of rows, and every cell row (the
   * same cell of each shard of a stripe) is reconstructed once, giving all of the row's missing
   * cells together: one request per source and window, not one per cell, and the sources' bytes
   * in reused slabs.
   */
  private async rebuild(blob: EcBlob, layout: StripeLayout, holders: Holders, targets: Map<number, string>): Promise<number> {
    const { k, m } = layout;
    const id = blob.meta.id;
    const header = (index: number): ColumnHeader => ({
      id, index, policy: blob.meta.policy, shardBytes: layout.shardBytes, blobBytes: layout.blobBytes,
      blobChecksum: blob.meta.checksum, blobLabels: blob.meta.labels, createdAtNs: blob.meta.createdAtNs, ...(blob.placement ? { placement: blob.placement } : {}),
    });
    const self = this.cluster.nodeId;
    // What each rebuilt column must match, as its store computed it: columns stored before the
    // checksums were kept have none, and are checked against their rebuilt bytes alone.
    const checksums = storedChecksums(blob, layout);
    const sinks = new Map<number, ColumnWriter | HttpColumnSender>();
    for (const [index, node] of targets) {
      if (node === self) sinks.set(index, new ColumnWriter(this.store, this.config, header(index), layout.columnBytes));
      else {
        const member = this.cluster.member(node)!;
        const options = { repair: true, timeoutMs: this.options.timeoutMs + layout.columnBytes / 8192, checksums: checksums ? layout.shards : 0 };
        sinks.set(index, this.transport.column(member, header(index), layout.columnBytes, options));
      }
    }
    const hashers = new Map([...targets.keys()].map((i) => [i, createHasher()]));
    // A peer that refuses its column at once (it holds it, or another node's repair is writing it
    // there) stops this rebuild before it reads on: every sink refused, nothing is left to rebuild for.
    const refused = new Map<number, Error>();
    for (const [index, sink] of sinks) if ('onFailure' in sink) sink.onFailure((err) => refused.set(index, err));
    // Stand-ins for missing columns no target takes (reconstruct writes every missing cell).
    const unused: Buffer[] = [];
    const rows = rowLengths(layout);
    const windowBytes = this.windowBytes(k);
    try {
      for (let first = 0, lo = 0; first < rows.length;) {
        // A window of rows whose reads the cap allows at once: its sources are read without pause.
        let end = first;
        let hi = lo;
        while (end < rows.length && (end === first || hi - lo + rows[end]! <= windowBytes)) hi += rows[end++]!;
        if (this.stopped) throw new BlobstoreError('unavailable', 'EC repair stopped');
        await this.options.bucket.take(k * (hi - lo));
        const sources = this.openSources(blob, layout, holders, lo, hi);
        try {
          for (let r = first; r < end; r++) {
            if (refused.size === sinks.size) throw [...refused.values()][0]!;
            const length = rows[r]!;
            const taken = await this.row(sources, length);
            const cells: (Buffer | undefined)[] = new Array(k + m).fill(undefined);
            sources.forEach(({ index }, j) => (cells[index] = taken[j]));
            const present = cells.map((cell) => cell !== undefined);
            // A rebuilt cell is a buffer of its own: a sink may still be writing it after write() resolves.
            const full = cells.map((cell, i) => cell ?? (targets.has(i) ? Buffer.allocUnsafe(length) : (unused[i] ??= Buffer.allocUnsafe(CELL_BYTES)).subarray(0, length)));
            const decodeStart = performance.now();
            reconstruct(k, m, full, present);
            this.metrics.observe('ec_decode', decodeStart);
            for (const cell of taken) this.reader.release(cell);
            for (const [index, sink] of sinks) {
              hashers.get(index)!.update(full[index]!);
              await sink.write(full[index]!);
            }
            this.progress.bytesRepaired += length * targets.size;
          }
        } finally {
          for (const { stream } of sources) stream.close();
        }
        first = end;
        lo = hi;
      }
    } catch (err) {
      for (const sink of sinks.values()) void sink.abort();
      throw err;
    }
    let settled = 0;
    let mismatch = false;
    const key = id.toString('hex');
    await Promise.all([...sinks].map(async ([index, sink]) => {
      const rebuilt = hashers.get(index)!.digest();
      // The target checks the bytes it received against the checksum sent, so a column rebuilt
      // wrong (here, or on its way) is never stored as the blob's.
      const expected = checksums ? columnChecksumAt(checksums, index) : rebuilt;
      if (!rebuilt.equals(expected)) {
        void sink.abort();
        this.metrics.ecRebuildMismatch();
        mismatch = true;
        this.log.error({ blob: key, column: index, holder: targets.get(index), sources: this.sourcesOf(holders, k, key) },
          'EC repair: the rebuilt column does not match the checksum it was stored with (a source column is wrong though it matches its own checksum, or the rebuild failed); not stored, the next try leaves out another source');
        return;
      }
      try {
        await sink.finish(expected, checksums);
        settled++;
        this.progress.columnsRepaired++;
        this.metrics.ecReconstructed();
        this.log.info({ blob: id.toString('hex'), column: index, holder: targets.get(index) }, 'EC repair: column rebuilt');
      } catch (err) {
        this.log.warn({ blob: id.toString('hex'), column: index, holder: targets.get(index), err: (err as Error).message }, 'EC repair: storing a rebuilt column failed');
      }
    }));
    if (mismatch) this.mismatched.set(key, (this.mismatched.get(key) ?? 0) + 1);
    this.reader.forget(id);
    return settled;
  }

  /** The next `length` bytes of every source; throws the first failure, having given back what the others took. */
  private async row(sources: readonly RebuildInput[], length: number): Promise<Buffer[]> {
    const taken = await Promise.allSettled(sources.map(({ stream }) => stream.take(length)));
    const failed = taken.find((t) => t.status === 'rejected');
    if (failed === undefined) return taken.map((t) => (t as PromiseFulfilledResult<Buffer>).value);
    for (const t of taken) if (t.status === 'fulfilled') this.reader.release(t.value);
    throw failed.reason;
  }

  /**
   * Column bytes a window of rows reads from each source: a second of the cap's share (whole rows,
   * one at least), so that a low cap waits before a window's streams open rather than leaving
   * them paused mid-column; with no cap, the whole column.
   */
  private windowBytes(k: number): number {
    const rate = this.options.bucket.rate;
    return rate > 0 ? Math.max(CELL_BYTES, Math.floor(rate / k)) : Infinity;
  }

  /**
   * The k present columns a rebuild reads: data first, leaving out one of them in turn after
   * rebuilds that did not match (mismatched) when more than k are present.
   */
  private sourcesOf(holders: Holders, k: number, key: string): number[] {
    const present = [...holders.keys()].sort((a, b) => a - b);
    const suspect = this.suspects.get(key);
    const left = suspect !== undefined && holders.has(suspect) && present.length > k ? suspect : this.leftOut(holders, k, this.mismatched.get(key) ?? 0);
    return present.filter((i) => i !== left).slice(0, k);
  }

  /** The present column a rebuild after `tries` that did not match leaves out (none on a first try, or with only k present). */
  private leftOut(holders: Holders, k: number, tries: number): number | undefined {
    const present = [...holders.keys()].sort((a, b) => a - b);
    return tries === 0 || present.length <= k ? undefined : present[(tries - 1) % present.length];
  }

  /** The source columns (sourcesOf), each a stream over the column range [lo, hi); throws when one cannot be opened. */
  private openSources(blob: EcBlob, layout: StripeLayout, holders: Holders, lo: number, hi: number): RebuildInput[] {
    const sources: RebuildInput[] = [];
    for (const index of this.sourcesOf(holders, layout.k, blob.meta.id.toString('hex'))) {
      const node = holders.get(index)!;
      const stream = this.reader.openColumn(blob, node, index, lo, hi);
      if (!stream) {
        for (const s of sources) s.stream.close();
        throw new BlobstoreError('unavailable', `column ${index} of ${blob.meta.id.toString('hex')}: node ${node} cannot be read now`);
      }
      sources.push({ index, stream });
    }
    return sources;
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}

/** The lengths of a column's cell rows in column order: each stripe's shard in cells of at most CELL_BYTES. */
function rowLengths(layout: StripeLayout): number[] {
  const rows: number[] = [];
  for (let stripe = 0; stripe < layout.stripes; stripe++) {
    const shardLength = layout.shardLength(stripe);
    for (let offset = 0; offset < shardLength; offset += CELL_BYTES) rows.push(Math.min(CELL_BYTES, shardLength - offset));
  }
  return rows;
}
