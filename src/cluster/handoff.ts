/**
 * Handoff: copies this node holds but does not own go to their owners (and shard columns of EC
 * blobs, with an owner's second column of a blob once the ring has a node for each column,
 * column-handoff.ts; the manifests of streamed EC blobs to their ids' owners, manifest-handoff.ts). That is a store a non-owner took from a client (NONE's copy stays
 * where Ring.holders says), a range that moved to a joining node, or, when this node is
 * leaving, everything it holds (a graceful leave's migration).
 *
 *   scan the index ──▶ ids whose owners (current ring) do not include this node, 256 at a time
 *     (no scan while the last one found none and neither the ring nor what came in changed)
 *     ──HaveBlobs──▶ each owner: which does it lack?  ──▶ send those (repair: a user's delete there holds)
 *     ──▶ every owner has it: drop the local copy (a leaving node keeps its files)
 *
 * Progress (blobs and bytes left, rate) is kept for the log, metrics, cluster/state and the UI.
 * When a leaving node has handed everything over it tells the cluster it is gone.
 */
import { BackgroundLoop } from '../util/background-loop.js';
import type { Logger } from '../log/logger.js';
import type { BlobMeta } from '../blob/meta.js';
import { replicaCount } from '../blob/policy.js';
import type { HeldIdWatcher, LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import { PeerCallError } from './transport/grpc-peers.js';
import { PeerPutError } from './transport/http-put.js';
import type { PeerTransport } from './transport/peer-transport.js';
import type { BlobSender } from './transfer.js';
import type { TokenBucket } from './token-bucket.js';
import type { ColumnHandoff } from './column-handoff.js';
import type { ManifestHandoff } from './manifest-handoff.js';
import { scanInSlices } from './index-scan.js';

const BATCH = 256;

export interface HandoffProgress {
  /** A pass is under way. */
  active: boolean;
  /** Blobs and bytes this node holds without owning them, at the start of the pass, and left. */
  blobsTotal: number;
  bytesTotal: number;
  blobsLeft: number;
  bytesLeft: number;
  /** Bytes handed over per second in this pass. */
  bytesPerSecond: number;
  startedAtMs: number;
}

export interface HandoffOptions {
  intervalMs: number;
  /** A count of copies not owned that found none holds this long while nothing came in (a check). */
  rescanMs: number;
  /** The cap on what handoff sends (shared with repair). */
  bucket: TokenBucket;
}

export class Handoff {
  readonly progress: HandoffProgress = { active: false, blobsTotal: 0, bytesTotal: 0, blobsLeft: 0, bytesLeft: 0, bytesPerSecond: 0, startedAtMs: 0 };
  private readonly loop: BackgroundLoop;
  private lastLogMs = 0;
  /** The last count of blobs held and not owned, and the ring and state it was made on. */
  private counted: { ringVersion: number; leaving: boolean; blobs: number; atMs: number } | undefined;
  /** A blob this node does not own came in, or one went, since that count. */
  private changed = false;
  /** ownership() as of the ring and state it was made for. */
  private owns: { ring: unknown; leaving: boolean; test: ((id: Buffer, policy: number) => boolean) | undefined } | undefined;

  /**
   * Blobs entering or leaving what this node holds (LocalStore.watchIds): one it does not own
   * calls for a count at the next pass. A settled cluster (every copy on an owner, the ring
   * unchanged) then counts nothing: the scan of the whole index ran every 30 s on every node.
   */
  readonly watcher: HeldIdWatcher = (id, policy, _key, set) => {
    if (set !== 'blob' || this.changed) return;
    const leaving = this.leaving();
    if (this.owns?.ring !== this.cluster.ring || this.owns.leaving !== leaving) this.owns = { ring: this.cluster.ring, leaving, test: this.ownership() };
    if (this.owns.test && !this.owns.test(id, policy)) this.changed = true;
  };

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly sender: BlobSender,
    private readonly log: Logger,
    private readonly options: HandoffOptions,
    /** Shard columns of EC blobs this node does not own go the same way. */
    private readonly columns?: ColumnHandoff,
    /** Manifests of streamed EC blobs follow the owners of their ids. */
    private readonly manifests?: ManifestHandoff,
  ) {
    this.loop = new BackgroundLoop({
      step: () => this.pass(), everyMs: options.intervalMs,
      onError: (err) => this.log.error({ err }, `handoff: ${err.message}`),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** A pass soon (the ring changed, or this node started leaving). */
  kick(): void {
    this.loop.kick();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  private leaving(): boolean {
    return this.cluster.membership.selfStatus() === 'leaving';
  }

  /**
   * Blobs held here and not owned, from `after` on, at most `limit` (with `limit` 0: none kept,
   * only counted). The walk is by id, so a pass holds one page of metadata at a time.
   */
  private notOwned(after: Buffer | undefined, limit: number): BlobMeta[] {
    const owns = this.ownership();
    const page: BlobMeta[] = [];
    if (owns === undefined) return page;
    this.store.scan(after, (id, policy) => {
      if (after && id.equals(after)) return true;
      if (owns(id, policy)) return true;
      const meta = this.store.stat(Buffer.from(id));
      if (meta) page.push(meta);
      return page.length < limit && !this.stopped;
    });
    return page;
  }

  /** Blobs held here and not owned, and their bytes: the whole index, a slice per turn of the event loop. */
  private async countNotOwned(): Promise<{ blobs: number; bytes: number }> {
    const owns = this.ownership();
    let blobs = 0;
    let bytes = 0;
    if (owns === undefined) return { blobs, bytes };
    await scanInSlices<[number, number]>((start, visit) => this.store.scan(start, visit), (id, policy, size) => {
      if (owns(id, policy)) return true;
      blobs++;
      bytes += size;
      return !this.stopped;
    });
    return { blobs, bytes };
  }

  /** Blobs held here and not owned: none when the last count found none and nothing changed since, else a count. */
  private async count(leaving: boolean): Promise<{ blobs: number; bytes: number }> {
    const ringVersion = this.cluster.membership.ringVersion;
    const last = this.counted;
    const settled = last !== undefined && last.blobs === 0 && !this.changed && last.ringVersion === ringVersion && last.leaving === leaving
      && Date.now() - last.atMs < this.options.rescanMs;
    if (settled) return { blobs: 0, bytes: 0 };
    // What comes in during the count calls for the next one.
    this.changed = false;
    const counted = await this.countNotOwned();
    this.counted = { ringVersion, leaving, blobs: counted.blobs, atMs: Date.now() };
    return counted;
  }

  /** Whether this node keeps a blob's copy, on the current ring (undefined: no ring yet). */
  private ownership(): ((id: Buffer, policy: number) => boolean) | undefined {
    const ring = this.cluster.ring;
    const self = this.cluster.nodeId;
    if (ring.size === 0) return undefined;
    // NONE's one copy may stay on the node that took it (Ring.holders), until that node leaves.
    const leaving = this.leaving();
    return (id, policy) => {
      const count = replicaCount(policy);
      return count === 0 || (leaving ? ring.owners(id, count) : ring.holders(id, policy, self)).includes(self);
    };
  }

  private async pass(): Promise<void> {
    const leaving = this.leaving();
    if (this.cluster.membership.selfStatus() !== 'active' && !leaving) return;
    const blobs = await this.count(leaving);
    const columns = (await this.columns?.countMisplaced()) ?? { columns: 0, bytes: 0 };
    const total = { blobs: blobs.blobs + columns.columns, bytes: blobs.bytes + columns.bytes };
    const p = this.progress;
    Object.assign(p, { active: true, blobsTotal: total.blobs, bytesTotal: total.bytes, blobsLeft: total.blobs, bytesLeft: total.bytes, startedAtMs: Date.now(), bytesPerSecond: 0 });
    if (total.blobs > 0) this.log.info({ blobs: p.blobsTotal, bytes: p.bytesTotal, leaving }, 'handoff: handing copies this node does not own to their owners');
    let stuck = 0;
    let after: Buffer | undefined;
    // Each page is a walk of the index from where the last one ended: none when nothing was counted.
    while (!this.stopped && blobs.blobs > 0) {
      const page = this.notOwned(after, BATCH);
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      stuck += await this.handBatch(page, leaving);
      this.report();
    }
    if (this.columns && columns.columns > 0) {
      stuck += await this.columns.pass(leaving, this.options.bucket, (bytes) => {
        p.blobsLeft--;
        p.bytesLeft -= bytes;
        this.report();
      }, () => this.stopped);
    }
    if (this.manifests?.due(leaving)) stuck += await this.manifests.pass(() => this.stopped, leaving);
    p.active = false;
    if (total.blobs > 0) this.log.info({ blobs: p.blobsTotal - p.blobsLeft, bytes: p.bytesTotal - p.bytesLeft, left: p.blobsLeft }, 'handoff: pass done');
    if (leaving && stuck === 0 && !this.stopped && this.leaving()) {
      this.log.info('handoff: every blob is with its owners: leaving the cluster');
      await this.cluster.finishLeaving();
    }
  }

  /** Hands one batch over; returns how many blobs could not be placed (an owner unreachable). */
  private async handBatch(metas: BlobMeta[], leaving: boolean): Promise<number> {
    const ring = this.cluster.ring;
    // owner -> blobs it should hold
    const byOwner = new Map<string, BlobMeta[]>();
    for (const meta of metas) {
      for (const owner of ring.owners(meta.id, replicaCount(meta.policy))) {
        const list = byOwner.get(owner) ?? [];
        list.push(meta);
        byOwner.set(owner, list);
      }
    }
    const placed = new Map<string, number>(); // id hex -> owners that have it
    const need = new Map<string, number>();
    for (const meta of metas) need.set(meta.id.toString('hex'), ring.owners(meta.id, replicaCount(meta.policy)).length);
    for (const [owner, list] of byOwner) {
      const member = this.cluster.member(owner);
      if (!member || member.grpcAddress === '' || !this.cluster.online(owner)) continue;
      try {
        const answer = await this.transport.call<{ have?: Buffer }>(member, 'HaveBlobs', { ids: list.map((m) => m.id) });
        const have = answer.have ?? Buffer.alloc(0);
        const lacking = list.filter((_, i) => ((have[i >> 3] ?? 0) & (1 << (i & 7))) === 0);
        if (lacking.length > 0) {
          await this.options.bucket.take(lacking.reduce((n, m) => n + m.size, 0));
          await this.sender.send(member, lacking, true);
        }
        for (const meta of list) placed.set(meta.id.toString('hex'), (placed.get(meta.id.toString('hex')) ?? 0) + 1);
      } catch (err) {
        if (!(err instanceof PeerCallError || err instanceof PeerPutError)) throw err;
        this.log.warn({ owner, err: err.message }, 'handoff: an owner could not take its copies; next pass');
      }
    }
    let stuck = 0;
    for (const meta of metas) {
      const key = meta.id.toString('hex');
      if ((placed.get(key) ?? 0) < need.get(key)!) {
        stuck++;
        continue;
      }
      this.progress.blobsLeft--;
      this.progress.bytesLeft -= meta.size;
      // Every owner has it: the copy here is surplus (a leaving node keeps its files).
      if (!leaving) await this.store.delete(meta.id, true);
    }
    const elapsed = (Date.now() - this.progress.startedAtMs) / 1000;
    if (elapsed > 0) this.progress.bytesPerSecond = Math.round((this.progress.bytesTotal - this.progress.bytesLeft) / elapsed);
    return stuck;
  }

  private report(): void {
    const now = Date.now();
    if (now - this.lastLogMs < 5000) return;
    this.lastLogMs = now;
    const p = this.progress;
    this.log.info({ blobsLeft: p.blobsLeft, bytesLeft: p.bytesLeft, bytesPerSecond: p.bytesPerSecond }, 'handoff: progress');
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
