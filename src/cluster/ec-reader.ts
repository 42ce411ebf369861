/**
 * Reads of erasure-coded blobs from any node (docs/erasure-coding.md). The columns are read from
 * where the ring places them (column i on the i-th owner of the blob's placement key), no node
 * asked: the read opens the data columns it needs there and goes on once each holder answered
 * with its column. Where one did not, and for a while after (ecSurveyAfterMissMs: a ring change
 * or a repair onto another node leaves columns out of place), the holders are found by asking
 * every candidate (StatBlob, answered with the columns each holds; kept for the next reads).
 * Then the blob streams out in order, a piece of a data shard at a time, up to ecReadAheadCells
 * pieces fetched ahead:
 *
 *   piece (stripe s, data shard i, cell c) ──▶ holder of column i (local read, or FetchShard)
 *     missing, slow (ecFetchTimeoutMs) or failing ──▶ the same cell of k other columns
 *                                                      ──▶ Reed-Solomon reconstruct ──▶ the piece
 *
 * Every byte is hashed once on its way out: a column's chunks are checked here against the
 * chaining values their holder's file keeps (column-check.ts; a range off the 1 MiB chunks, by
 * the holder), a local column's by the engine's read, so no piece goes unchecked and a corrupt
 * one fails its column, whose pieces are then rebuilt. A column found missing or failing is
 * queued for repair.
 * A read never starts what it cannot finish: with fewer than k columns that could be read (the
 * cached holders checked against who is online; when too few, every candidate asked again, and
 * only a refusal or an answer without a column rules one out) it fails with 503 before its first
 * byte, and the first stripe is read whole before the first byte goes. A stripe that becomes
 * unreadable later (nodes die during the read) fails it after its first byte: the caller cuts the
 * answer short, and the cut is counted (blobstore_ec_reads_cut_total) and logged.
 */
import { TtlCache } from '../util/ttl-cache.js';
import { Slabs } from '../util/slabs.js';
import { CELL_BYTES } from '../ec/layout.js';
import * as grpc from '@grpc/grpc-js';
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError } from '../errors/errors.js';
import { ecScheme, StripeLayout } from '../ec/layout.js';
import type { ClusterMetrics } from '../metrics/cluster-metrics.js';
import type { ByteRange, ChunkSink, LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import { PeerCallError } from './transport/grpc-peers.js';
import type { PeerTransport } from './transport/peer-transport.js';
import { statOfAnswer } from './wire-meta.js';
import { type ColumnLimits, type ColumnStream, localColumn, remoteColumn } from './column-stream.js';
import { layoutChecks, readerChecks } from './column-check.js';
import { type ColumnSource, type EcBlob, type Holders, type Piece, piecesOf, ReadState, storedChecksums } from './ec-read-state.js';
import { manifestBlob } from './ec-manifest.js';
import { ecBlobMeta } from '../service/ec-meta.js';
import { columnChecksumAt, type ShardMeta } from '../blob/shard.js';
import type { Logger } from '../log/logger.js';

export type { EcBlob, Holders };

/** What a survey found (EcReader.survey). */
export interface Survey {
  holders: Holders;
  /** Every column each node holds ('' = this node), duplicates included. */
  byNode: Map<string, number[]>;
  blob: EcBlob | undefined;
  /** Candidates that could not be asked, and those slow to answer or seen offline lately. */
  unreachable: number;
  slow: number;
  /** Nodes that named the blob's column checksums (blob.columnChecksums), and those that named others. */
  votes: { for: number; against: number };
}

/** Located holders are kept this long (columns move only on repair and ring changes). */
const HOLDERS_CACHE_MS = 30_000;
const HOLDERS_CACHE_ENTRIES = 4096;
const SELF = '';
/** No read from the ring's placement, and nobody to skip when asking. */
const NOT_PLACED: { read?: ReadState; silent: ReadonlySet<string> } = { silent: new Set() };


export class EcReader implements ColumnSource {
  private readonly cache = new TtlCache<Holders>(HOLDERS_CACHE_ENTRIES, HOLDERS_CACHE_MS);
  /** Columns found not the ones their store wrote lately, by `${id hex}:${index}`: reported once a while. */
  private readonly wrongSeen = new TtlCache<boolean>(HOLDERS_CACHE_ENTRIES, HOLDERS_CACHE_MS);

  private readonly columnLimits: ColumnLimits;
  /** Until then (performance.now() ms) reads ask where the columns are rather than trust the ring's placement. */
  private surveyUntil = 0;

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly metrics: ClusterMetrics,
    private readonly config: NodeConfig,
    /** Columns were found missing or failing, about `bytes` to rebuild (the repair worker takes the blob). */
    /** Columns missing or failing (`suspect`: a column found wrong though it matches its own checksum) go to repair. */
    private readonly onMissing: (id: Buffer, policy: number, why: string, bytes: number, placement: Buffer | undefined, suspect?: number) => void,
    /** A column held here failed its check (it is dropped and rebuilt). */
    private readonly onCorruptColumn: (meta: ShardMeta) => void,
    private readonly log: Logger,
  ) {
    // Free slabs kept: what a degraded read of EC42 holds at once (its queues of six columns, the
    // pieces read ahead). Kept fewer, the slabs a read lets go of are collected and allocated
    // again: with the queues of four columns kept, a degraded 1 GiB read allocated about 130 slabs
    // and spent a tenth of its CPU in V8's major GCs.
    const slabs = new Slabs(CELL_BYTES, Math.ceil((6 * config.ecColumnQueueBytes) / CELL_BYTES) + config.ecReadAheadCells);
    this.columnLimits = { timeoutMs: config.ecFetchTimeoutMs, startBytes: config.ecColumnQueueStartBytes, queueBytes: config.ecColumnQueueBytes, slabs };
  }

  /** Readies the read slabs before the next reads need them (Slabs.prefault; once). */
  prefault(): Promise<void> {
    return this.columnLimits.slabs.prefault();
  }

  /** prefault() was called, by a read or by the cluster. */
  get slabsReadied(): boolean {
    return this.columnLimits.slabs.readied;
  }

  layoutOf(blob: EcBlob): StripeLayout {
    const scheme = ecScheme(blob.meta.policy);
    if (!scheme) throw new BlobstoreError('internal', `blob ${blob.meta.id.toString('hex')} has no EC policy`);
    return new StripeLayout(scheme.k, scheme.m, blob.shardBytes, blob.meta.size);
  }

  /** Nodes that may hold columns: the owners, then the next as many in ring order (columns not yet moved after a ring change). */
  private candidates(key: Buffer, shards: number): string[] {
    return this.cluster.ring.owners(key, 2 * shards).filter((n) => n !== this.cluster.nodeId);
  }

  /** Which node holds which column: as an earlier read found, else asks every candidate at once (but the `silent`). */
  async locate(id: Buffer, layout: StripeLayout, placement?: Buffer, silent?: ReadonlySet<string>): Promise<Holders> {
    const key = id.toString('hex');
    const cached = this.cache.get(key);
    this.metrics.ecReadHolders(cached ? 'cached' : 'survey');
    if (cached) return cached;
    const { holders } = await this.survey(id, layout.shards, placement, silent);
    // Only a complete answer is kept: a missing column is looked for again on the next read.
    if (holders.size === layout.shards) this.cache.set(key, holders);
    return holders;
  }

  /**
   * Asks this node and every candidate (the owners of `shards` columns and as many after them on
   * the ring) which columns of the blob they hold: the holders, the blob as a column describes
   * it (with the column checksums the most nodes name), and how many candidates could not be asked. The candidates are those of the blob's
   * placement key: given, known from a column or the manifest held here, or learnt from the
   * owners of the id (their manifest, or a column of theirs), then asked in a second round. Nodes
   * in `silent` (a read waited for them in vain just now) are counted slow, not asked.
   */
  async survey(id: Buffer, shards: number, placement?: Buffer, silent?: ReadonlySet<string>): Promise<Survey> {
    const holders: Holders = new Map();
    /** Every column each node holds ('' = this node), duplicates included. */
    const byNode = new Map<string, number[]>();
    let blob: EcBlob | undefined;
    const local = this.store.shardsOf(id);
    for (const c of local) holders.set(c.shard.index, SELF);
    if (local.length > 0) byNode.set(SELF, local.map((c) => c.shard.index));
    if (local[0]) blob = { meta: ecBlobMeta(local[0]), shardBytes: local[0].shard.shardBytes, placement: local[0].shard.placement };
    // The column checksums the most nodes name (with the shard size they are for): one column's
    // record alone does not decide them.
    const lists = new Map<string, { checksums: Buffer; shardBytes: number; votes: number }>();
    const vote = (checksums: Buffer | undefined, shardBytes: number): void => {
      if (!checksums) return;
      const key = `${shardBytes}:${checksums.toString('hex')}`;
      const seen = lists.get(key);
      if (seen) seen.votes++;
      else lists.set(key, { checksums, shardBytes, votes: 1 });
    };
    const listed = local.find((c) => c.shard.columnChecksums);
    if (listed) vote(listed.shard.columnChecksums, listed.shard.shardBytes);
    const manifest = local[0] ? undefined : this.store.ecManifests.get(id);
    if (manifest) blob = manifestBlob(id, manifest);
    let key = placement ?? blob?.placement;
    let unreachable = 0;
    /** Candidates that may hold columns still: not asked (seen offline lately) or slow to answer. */
    let slow = 0;
    const ask = async (candidates: string[]): Promise<void> => {
      const answers = await Promise.all(candidates.map((node) => this.statOf(id, node, silent)));
      for (const a of answers) {
        if (a.unreachable) unreachable++;
        if (a.slow) slow++;
        if (!blob && a.blob) blob = a.blob;
        if (a.blob) vote(a.blob.columnChecksums, a.blob.shardBytes);
        key ??= a.placement;
        if (a.indices.length > 0) byNode.set(a.node, a.indices);
        for (const i of a.indices) if (i < shards && !holders.has(i)) holders.set(i, a.node);
      }
    };
    const first = this.candidates(key ?? id, shards);
    await ask(first);
    if (key && !key.equals(id) && placement === undefined && blob?.placement === undefined) {
      // Learnt from the id's owners: the columns are with the placement key's.
      await ask(this.candidates(key, shards).filter((n) => !first.includes(n)));
    }
    if (blob && key && !blob.placement) blob = { ...blob, placement: key };
    const all = [...lists.values()];
    const best = all.reduce<(typeof all)[number] | undefined>((b, l) => (!b || l.votes > b.votes ? l : b), undefined);
    const votes = { for: best?.votes ?? 0, against: all.reduce((n, l) => n + l.votes, 0) - (best?.votes ?? 0) };
    if (blob) {
      const { columnChecksums: _, ...rest } = blob;
      blob = best && best.shardBytes === blob.shardBytes ? { ...rest, columnChecksums: best.checksums } : rest;
    }
    return { holders, byNode, blob, unreachable, slow, votes };
  }

  /** One candidate's stat (StatBlob's answer): the columns it holds, and the blob and placement key it names. */
  private async statOf(id: Buffer, node: string, silent?: ReadonlySet<string>): Promise<{ node: string; indices: number[]; blob?: EcBlob; placement?: Buffer; unreachable?: boolean; slow?: boolean }> {
    if (silent?.has(node)) return { node, indices: [], slow: true };
    const member = this.cluster.member(node);
    if (!member || !this.cluster.online(node)) {
      // Seen offline by heartbeats, which lag under load: not asked, but not ruled out either.
      return member ? { node, indices: [], slow: true } : { node, indices: [], unreachable: true };
    }
    try {
      const answer = await this.transport.stat(member, id, this.config.ecFetchTimeoutMs);
      const { meta, ec, indices } = statOfAnswer(id, answer, this.config);
      const blob = meta && ec ? { meta, shardBytes: ec.shardBytes, placement: ec.placement, ...(ec.columnChecksums ? { columnChecksums: ec.columnChecksums } : {}) } : undefined;
      return { node, indices, blob, placement: ec?.placement };
    } catch (err) {
      return err instanceof PeerCallError && err.code === grpc.status.DEADLINE_EXCEEDED ? { node, indices: [], slow: true } : { node, indices: [], unreachable: true };
    }
  }

  /** Columns whose holder is this node or a node online now. */
  private reachable(holders: Holders): number {
    let n = 0;
    for (const node of holders.values()) if (node === SELF || this.cluster.online(node)) n++;
    return n;
  }

  forget(id: Buffer): void {
    this.cache.delete(id.toString('hex'));
  }

  /**
   * The ring changed: columns may have moved, every cached answer goes. Reads go on trusting the
   * ring's placement: the first that finds a column out of place has the next ones ask instead.
   */
  forgetAll(): void {
    this.cache.clear();
  }

  /** Streams `range` (default: all) of the blob to `sink` in chunks of at most 1 MiB. */
  async read(blob: EcBlob, sink: ChunkSink, range: ByteRange = { start: 0, end: blob.meta.size }): Promise<void> {
    // A node that holds no column reads EC blobs too: its later reads find the slabs ready.
    void this.prefault();
    const layout = this.layoutOf(blob);
    if (range.end <= range.start) return sink(Buffer.alloc(0), 0);
    const pieces = piecesOf(layout, range);
    const progress = { sent: 0 };
    // Holders an earlier read found stand; else the ring's placement is tried first.
    const placed = this.cache.get(blob.meta.id.toString('hex')) ? NOT_PLACED : await this.openPlaced(blob, layout, pieces);
    if (placed.read) {
      try {
        return await this.send(placed.read, pieces, sink, progress);
      } catch (err) {
        if (progress.sent > 0) throw err;
        // Nothing went yet: the read starts again from the holders the candidates name.
        this.unplaced(blob.meta.id);
      }
    }
    const read = await this.surveyed(blob, layout, pieces, placed.silent);
    return this.send(read, pieces, sink, progress);
  }

  /**
   * The read's state over the columns where the ring places them (column i on the i-th owner of
   * the placement key), none asked, when every data column the read needs answered from there.
   * Else no state, and the nodes that said nothing (the survey does not wait for them again); none
   * when the placement is not trusted now: a read found a column out of place lately
   * (ecSurveyAfterMissMs), the ring has fewer nodes than columns, an owner of a data column is
   * offline, or what this node holds differs from its share.
   */
  private async openPlaced(blob: EcBlob, layout: StripeLayout, pieces: Piece[]): Promise<{ read?: ReadState; silent: ReadonlySet<string> }> {
    if (performance.now() < this.surveyUntil) return NOT_PLACED;
    const owners = this.cluster.ring.owners(blob.placement ?? blob.meta.id, layout.shards);
    if (owners.length < layout.shards) return NOT_PLACED;
    const local = new Set(this.store.shardsOf(blob.meta.id).map((c) => c.shard.index));
    const holders: Holders = new Map();
    for (const [index, node] of owners.entries()) {
      const self = node === this.cluster.nodeId;
      if (self !== local.has(index)) return NOT_PLACED;
      if (!self && index < layout.k && !this.cluster.online(node)) return NOT_PLACED;
      holders.set(index, self ? SELF : node);
    }
    const read = new ReadState(this, blob, layout, holders, pieces, true);
    const { whole, silent } = await read.open();
    if (whole) {
      this.metrics.ecReadHolders('ring');
      return { read, silent: NOT_PLACED.silent };
    }
    read.close();
    this.unplaced(blob.meta.id);
    // A node that refused (no such column there) is asked where its columns are; one that said
    // nothing is not waited for again.
    return { silent: new Set(silent.filter((n) => n !== SELF)) };
  }

  /**
   * The read's state over the holders the candidates name (cached from an earlier read, else a
   * survey that skips the nodes in `silent`). A read never starts what it cannot finish: with
   * fewer than k columns that could be read it fails with 503 before its first byte.
   */
  private async surveyed(blob: EcBlob, layout: StripeLayout, pieces: Piece[], silent: ReadonlySet<string>): Promise<ReadState> {
    const id = blob.meta.id;
    let holders = await this.locate(id, layout, blob.placement, silent);
    if (this.reachable(holders) < layout.k) {
      // Asked again: a column may have moved. Every holder in the answer was heard just now; a
      // node slow to answer, or seen offline (heartbeats lag under load), may hold one still: the
      // read goes ahead then, and a stripe it cannot read fails before the first byte (send()).
      // Only nodes that refused the call or answered without a column rule a column out.
      const again = await this.survey(id, layout.shards, blob.placement, silent);
      holders = again.holders;
      const reachable = holders.size;
      if (reachable + again.slow < layout.k) {
        throw new BlobstoreError('unavailable', `EC blob ${id.toString('hex')}: ${reachable} of its ${layout.shards} columns can be reached, ${layout.k} are needed`, {
          headers: { 'Retry-After': '1' }, peer: true,
        });
      }
    }
    const missing = [...Array(layout.shards).keys()].filter((i) => !holders.has(i));
    if (missing.length > 0) this.noteMissing(blob, missing, 'not found on any node');
    return new ReadState(this, blob, layout, holders, pieces);
  }

  /** The pieces to `sink` in order, up to ecReadAheadCells fetched ahead; `progress.sent` counts the chunks handed on. */
  private async send(read: ReadState, pieces: Piece[], sink: ChunkSink, progress: { sent: number }): Promise<void> {
    const ahead = this.config.ecReadAheadCells;
    const inflight: Promise<Buffer>[] = [];
    const start = (j: number): void => {
      const p = read.piece(pieces[j]!);
      p.catch(() => undefined); // awaited in turn
      inflight[j % ahead] = p;
    };
    for (let j = 0; j < Math.min(pieces.length, ahead); j++) start(j);
    try {
      // The first stripe is whole before the first byte goes: a blob of one stripe (up to k
      // shards) is answered completely or not at all.
      const first = Math.min(ahead, pieces.filter((p) => p.stripe === pieces[0]!.stripe).length);
      await Promise.all(inflight.slice(0, first));
      for (let j = 0; j < pieces.length; j++) {
        const bytes = await inflight[j % ahead]!;
        await sink(bytes, progress.sent++);
        // The sink is done with the bytes (ChunkSink): a column's slab goes back for reuse.
        this.release(bytes);
        if (j + ahead < pieces.length) start(j + ahead);
      }
    } catch (err) {
      if (progress.sent > 0) {
        this.metrics.ecReadCut();
        this.log.warn({ id: read.blobId.toString('hex'), sentChunks: progress.sent, err: (err as Error).message }, 'EC read cut short: a stripe became unreadable after the first byte');
      }
      throw err;
    } finally {
      await Promise.allSettled(inflight);
      read.close();
    }
  }

  /** A column was not where the ring places it: reads ask the candidates for ecSurveyAfterMissMs. */
  unplaced(id: Buffer): void {
    this.forget(id);
    this.surveyUntil = performance.now() + this.config.ecSurveyAfterMissMs;
  }

  noteMissing(blob: EcBlob, indices: number[], why: string): void {
    this.metrics.shardsMissingDetected(indices.length);
    this.onMissing(blob.meta.id, blob.meta.policy, `columns ${indices.join(', ')} ${why}`, indices.length * this.layoutOf(blob).columnBytes, blob.placement);
  }

  /** Bytes [offset, offset + length) of column `index` from `node`. */
  async fetchRange(blob: EcBlob, node: string, index: number, offset: number, length: number): Promise<Buffer> {
    const fetchStart = performance.now();
    const out = node === SELF ? await this.localRange(blob, index, offset, length) : await this.remoteRange(blob, node, index, offset, length);
    this.metrics.observe('shard_fetch', fetchStart);
    return out;
  }

  private async localRange(blob: EcBlob, index: number, offset: number, length: number): Promise<Buffer> {
    const id = blob.meta.id;
    const meta = this.store.shardsOf(id).find((c) => c.shard.index === index);
    if (!meta) throw new BlobstoreError('not_found', `column ${index} of ${id.toString('hex')} is not here any more`);
    const expected = this.expectedOf(blob, this.layoutOf(blob), SELF, index);
    if (expected && !meta.checksum.equals(expected.checksum)) {
      expected.onWrong();
      throw new BlobstoreError('corruption', `column ${index} of ${id.toString('hex')} here: its checksum is not the one its store computed`);
    }
    const out = Buffer.allocUnsafe(length);
    let at = 0;
    try {
      await this.store.read(meta, (chunk) => {
        chunk.copy(out, at);
        at += chunk.length;
      }, { start: offset, end: offset + length });
    } catch (err) {
      if (err instanceof BlobstoreError && err.kind === 'corruption') this.onCorruptColumn(meta);
      throw err;
    }
    if (at !== length) throw new BlobstoreError('corruption', `column ${index} of ${id.toString('hex')}: ${at} bytes, expected ${length}`);
    return out;
  }

  /** Bytes of a peer's column, through a column stream of just that range. */
  private async remoteRange(blob: EcBlob, node: string, index: number, offset: number, length: number): Promise<Buffer> {
    const stream = this.openColumn(blob, node, index, offset, offset + length);
    if (!stream) throw new BlobstoreError('unavailable', `node ${node} is not a member any more`, { peer: true });
    try {
      return await stream.take(length);
    } finally {
      stream.close();
    }
  }

  /** A stream of column `index`'s bytes [start, end) from `node` (this node: its engine). */
  openColumn(blob: EcBlob, node: string, index: number, start: number, end: number): ColumnStream | undefined {
    const layout = this.layoutOf(blob);
    const expected = this.expectedOf(blob, layout, node, index);
    if (node === SELF) {
      const meta = this.store.shardsOf(blob.meta.id).find((c) => c.shard.index === index);
      return meta && localColumn(this.store, meta, start, end, this.columnLimits, () => this.onCorruptColumn(meta), expected);
    }
    const member = this.cluster.member(node);
    if (!member) return undefined;
    if (!layoutChecks(layout.shardBytes) || !readerChecks({ start, end }, layout.columnBytes)) {
      return remoteColumn(this.transport, member, blob.meta.id, index, start, end, this.columnLimits);
    }
    return remoteColumn(this.transport, member, blob.meta.id, index, start, end, this.columnLimits, {
      chunkCv: this.store.chunkCv,
      onCorrupt: (offset, length) => this.checkAtHolder(blob, node, index, offset, length),
      columnBytes: layout.columnBytes,
      onArrival: this.config.chunkDigests === 'inline',
      ...(expected ? { expected } : {}),
    });
  }

  /**
   * What column `index` must be, when the blob's column checksums are known: one with another
   * checksum is read around, and repair hears of it (it has the column dropped where the holders
   * agree on the checksums, and rebuilds it).
   */
  private expectedOf(blob: EcBlob, layout: StripeLayout, node: string, index: number): { checksum: Buffer; onWrong: () => void } | undefined {
    const checksums = storedChecksums(blob, layout);
    if (!checksums) return undefined;
    return {
      checksum: columnChecksumAt(checksums, index),
      onWrong: () => {
        // Once a while per column: every read of the blob finds it until repair has replaced it.
        const id = blob.meta.id;
        const key = `${id.toString('hex')}:${index}`;
        if (this.wrongSeen.get(key)) return;
        this.wrongSeen.set(key, true);
        this.log.error({ id: id.toString('hex'), column: index, holder: node === SELF ? this.cluster.nodeId : node },
          'EC read: a column is not the one its store wrote (its checksum is another); it is read around and queued for repair');
        this.onMissing(id, blob.meta.policy, `column ${index} on ${node === SELF ? 'this node' : node} is not the one its store wrote`, layout.columnBytes, blob.placement, index);
      },
    };
  }

  /**
   * Bytes of a column failed their check here (column-check.ts): its holder is asked for them
   * checked by itself, so that a column corrupt on its disk is dropped and rebuilt there; bytes
   * damaged on the way are only logged.
   */
  private checkAtHolder(blob: EcBlob, node: string, index: number, offset: number, length: number): void {
    const id = blob.meta.id.toString('hex');
    this.log.warn({ id, column: index, holder: node, offset }, 'EC read: bytes of a column failed their check; its holder checks them');
    const member = this.cluster.member(node);
    if (!member) return;
    const stream = remoteColumn(this.transport, member, blob.meta.id, index, offset, offset + length, this.columnLimits);
    stream.take(length).then((bytes) => this.release(bytes), (err: Error) => this.log.warn({ id, column: index, holder: node, err: err.message }, 'EC read: a holder\'s check of its column failed'))
      .finally(() => stream.close());
  }

  /** A slab's view for a rebuilt cell of `length` (at most CELL_BYTES). */
  take(length: number): Buffer {
    return this.columnLimits.slabs.take().subarray(0, length);
  }

  /** A column stream's bytes or a rebuilt cell (a view of a slab, or not) are no longer used. */
  release(bytes: Buffer): void {
    this.columnLimits.slabs.release(bytes);
  }

  /** A piece of a shard arrived (shard_fetch_latency_seconds). */
  fetched(startMs: number): void {
    this.metrics.observe('shard_fetch', startMs);
  }

  reconstructed(startMs: number): void {
    this.metrics.ecReconstructed();
    this.metrics.observe('ec_decode', startMs);
  }
}

