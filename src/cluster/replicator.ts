/**
 * The replication queue's worker. A client's store in a cluster leaves an entry in the queue, in
 * the same index transaction as the blob (so the intent survives any crash the blob survives);
 * this worker copies the blob to every owner on the current ring that lacks it and then removes
 * the entry.
 *
 *   store committed ──kick(id)──▶ fresh ids ──┐
 *   every retry tick: queue page in LMDB ─────┴─▶ owners(id) − self − done ──▶ per peer: BlobSender
 *                                                     │ ok: done += peer      │ failed: back-off with jitter
 *                                                     ▼ all done: dequeue     ▼ (offline peers wait)
 *
 * Peers are sent to in parallel (each blob read once for all of them), each peer's blobs in
 * batches; what a failed call carried is
 * retried after 250 ms, then twice as long each time up to replicationRetryMaxMs (± 20 %).
 * `replicationAcks` W > 0: a store waits (waitFor) until W owners besides this node hold the blob.
 * Index commits wait (at most indexCommitHoldMs) until a pass has handled the fresh ids given
 * before them (caughtUp): the entries it removes were never written (docs/adr/0030). A fresh
 * store's bytes are a copy in pooled slabs (fresh-copies.ts), given back once its pass is over.
 */
import { Backoffs } from '../util/backoff.js';
import { BackgroundLoop } from '../util/background-loop.js';
import type { Logger } from '../log/logger.js';
import type { ClusterMetrics } from '../metrics/cluster-metrics.js';
import type { BlobMeta } from '../blob/meta.js';
import type { QueueEntry } from '../index/blob-index.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import type { BlobSender, KnownBytes, SendTarget } from './blob-sender.js';
import { FreshCopies } from './fresh-copies.js';

export interface ReplicatorOptions {
  /** Ids handled per pass (a page of the queue). */
  pageSize: number;
  retryMaxMs: number;
  /** How often the persistent queue is walked for retries. */
  retryTickMs: number;
  /** Least time between the starts of two passes while no store waits for its copies. */
  batchDelayMs: number;
  /** Bytes of fresh small blobs held for their copies (beyond, they are read back from disk). */
  freshBytesMax: number;
}

const RETRY_FIRST_MS = 250;
/** A pass with fewer fresh blobs than this means stores come slowly: the next goes without delay. */
const GATHER_MIN_BLOBS = 32;

interface Waiter {
  need: number;
  resolve: () => void;
}

/** A blob of a pass that some owner lacks: its queue entry records the owners that confirmed. */
interface Pending {
  meta: BlobMeta;
  entry: QueueEntry;
  /** Its owners besides this node on the ring the pass began with. */
  owners: string[];
}

export class Replicator {
  /**
   * Ids stored since the last pass: handled first, without a walk of the queue; with a small
   * blob's bytes while they fit in freshBytesMax, so its copies need not read it back. Kept as
   * two arrays, not a map by id: the per-blob work of a pass is what REPLICA3 pays on top of a
   * store (an id stored twice in one pass is sent once more, which its owners answer as held).
   */
  private freshIds: Buffer[] = [];
  private freshData: (Buffer | undefined)[] = [];
  private freshBytes = 0;
  private readonly copies = new FreshCopies();
  /** Fresh ids taken so far, and of those, how many a finished pass handled (caughtUp()). */
  private freshTaken = 0;
  private freshHandled = 0;
  /** caughtUp() callers: each resolves once freshHandled reaches its `upTo`. */
  private catchUps: { upTo: number; resolve: () => void }[] = [];
  /** Back-off per id (hex): when it may be tried again, and how many times it failed. */
  private readonly backoff: Backoffs;
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly loop: BackgroundLoop;
  private lastPassMs = -Infinity;
  /** Fresh ids the last pass handled. */
  private lastPassBlobs = 0;
  /** Oldest queued entry seen by the last full walk (Unix ms), for the lag gauge. */
  private oldestMs = 0;

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly sender: BlobSender,
    private readonly metrics: ClusterMetrics,
    private readonly log: Logger,
    private readonly options: ReplicatorOptions,
  ) {
    this.backoff = new Backoffs(RETRY_FIRST_MS, options.retryMaxMs);
    this.loop = new BackgroundLoop({
      step: () => this.step(), everyMs: options.retryTickMs, delayMs: () => this.gatherMs(),
      onError: (err) => this.log.error({ err }, `replication: ${err.message}`),
    });
  }

  start(): void {
    this.loop.start();
    this.loop.kick();
  }

  /** A copy of a small store's bytes for stored()'s `data` (pooled memory its pass gives back). */
  copy(bytes: Uint8Array | ArrayBuffer): Buffer {
    return this.copies.copy(bytes);
  }

  /** A store was committed with a queue entry: copy it soon (`data`: its bytes, if small). */
  stored(id: Buffer, data?: Buffer): void {
    const keep = data !== undefined && this.freshBytes + data.length <= this.options.freshBytesMax;
    if (keep) this.freshBytes += data.length;
    else if (data !== undefined) this.copies.release(data);
    this.freshIds.push(id);
    this.freshData.push(keep ? data : undefined);
    this.freshTaken++;
    this.kick();
  }

  /**
   * Undefined when every fresh id taken so far went through a pass, else a promise that resolves
   * once they have (index commits wait for it, LocalStore.holdIndexCommits: an entry a pass
   * removes before its record's commit is never written). Undefined too while some copy backs off
   * (a peer that fails would hold every commit until the limit).
   */
  caughtUp(): Promise<void> | undefined {
    const upTo = this.freshTaken;
    if (this.freshHandled >= upTo || this.backoff.size > 0 || this.loop.stopped) return undefined;
    return new Promise((resolve) => this.catchUps.push({ upTo, resolve }));
  }

  private handled(upTo: number): void {
    this.freshHandled = upTo;
    if (this.catchUps.length === 0) return;
    const still = this.catchUps.filter((c) => c.upTo > upTo);
    for (const c of this.catchUps) if (c.upTo <= upTo) c.resolve();
    this.catchUps = still;
  }

  /** Resolves once `need` owners besides this node hold the blob (or the entry is gone). */
  waitFor(id: Buffer, need: number): Promise<void> {
    const key = id.toString('hex');
    if (need <= 0 || !this.store.replication.get(id)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.waiters.get(key) ?? [];
      list.push({ need, resolve });
      this.waiters.set(key, list);
    });
  }

  /** A pass soon; while one runs, one more after it. */
  kick(): void {
    this.loop.kick();
  }

  /**
   * How long the next pass waits. Under load, fresh stores gather for batchDelayMs after the last
   * pass began (unless a store waits for its copies): fewer, larger batches, so fewer group
   * commits and syncs on the owners (REPLICA3 4 KiB bench: 6.0k instead of 5.3k PUT/s at 25 ms).
   * Stores that come slowly are copied at once.
   */
  private gatherMs(): number {
    const wait = this.lastPassMs + this.options.batchDelayMs - performance.now();
    return wait > 0 && this.lastPassBlobs >= GATHER_MIN_BLOBS && this.waiters.size === 0 ? wait : 0;
  }

  private async step(): Promise<void> {
    this.lastPassMs = performance.now();
    try {
      await this.pass();
    } finally {
      this.refreshMetrics();
    }
  }

  /** Fresh ids first; then, on the timer's passes, the whole queue page by page. */
  private async pass(): Promise<void> {
    const ids = this.freshIds;
    const datas = this.freshData;
    const upTo = this.freshTaken;
    this.freshIds = [];
    this.freshData = [];
    this.freshBytes = 0;
    this.lastPassBlobs = ids.length;
    if (ids.length > 0) {
      try {
        await this.handle(ids, datas);
      } finally {
        this.handled(upTo);
        for (const data of datas) if (data !== undefined) this.copies.release(data);
      }
      return;
    }
    let after: Buffer | undefined;
    let oldest = Infinity;
    for (;;) {
      const page = this.store.replication.page(this.options.pageSize, after);
      if (page.length === 0) break;
      for (const { entry } of page) oldest = Math.min(oldest, entry.queuedAtMs);
      const now = Date.now();
      const due = page.map((p) => p.id).filter((id) => this.backoff.size === 0 || this.backoff.due(id.toString('hex'), now));
      if (due.length > 0) await this.handle(due);
      after = page[page.length - 1]!.id;
      if (page.length < this.options.pageSize || this.loop.stopped) break;
    }
    this.oldestMs = oldest === Infinity ? 0 : oldest;
  }

  /** Copies each id to the owners that lack it, peers in parallel (`datas[i]`: the bytes of `ids[i]`, if in memory). */
  private async handle(ids: readonly Buffer[], datas?: readonly (Buffer | undefined)[]): Promise<void> {
    const perPeer = new Map<string, BlobMeta[]>();
    const pending: Pending[] = [];
    const known = new Map<BlobMeta, Buffer>();
    const ring = this.cluster.ring;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const entry = this.store.replication.get(id);
      if (!entry) continue;
      const meta = this.store.stat(id);
      if (!meta) {
        // Deleted since: nothing left to copy.
        this.dequeue(id);
        continue;
      }
      const owners = this.peerOwners(meta);
      let missing = 0;
      for (const owner of owners) {
        if (entry.done.includes(owner)) continue;
        missing++;
        if (!this.cluster.online(owner)) continue; // it waits in the queue until the owner is back
        let list = perPeer.get(owner);
        if (list === undefined) perPeer.set(owner, (list = []));
        list.push(meta);
      }
      if (missing === 0) {
        this.dequeue(id);
        continue;
      }
      pending.push({ meta, entry, owners });
      const data = datas?.[i];
      if (data !== undefined) known.set(meta, data);
    }
    const held = perPeer.size === 0 ? [] : await this.sendEach(perPeer, known);
    // Each blob's entry is updated once for all its peers (the index writes it with its next transaction).
    for (const p of pending) {
      let gained = false;
      for (const { peer, blobs } of held) {
        if (!blobs.has(p.meta) || p.entry.done.includes(peer)) continue;
        p.entry.done.push(peer);
        gained = true;
      }
      // A ring that changed meanwhile may name other owners.
      if (gained) this.confirmed(p, this.cluster.ring === ring ? p.owners : this.peerOwners(p.meta));
    }
  }

  /** The owners of a blob besides this node, on the current ring. */
  private peerOwners(meta: BlobMeta): string[] {
    const self = this.cluster.nodeId;
    return this.cluster.ring.holders(meta.id, meta.policy, self).filter((o) => o !== self);
  }

  /**
   * Sends every peer its blobs at once (each blob read once for all of them); per peer, the blobs
   * it holds afterwards, none when its calls failed (those blobs back off).
   */
  private async sendEach(perPeer: ReadonlyMap<string, BlobMeta[]>, known: KnownBytes): Promise<{ peer: string; blobs: ReadonlySet<BlobMeta> }[]> {
    const targets: SendTarget[] = [];
    for (const [peerId, metas] of perPeer) {
      const member = this.cluster.member(peerId);
      if (member && member.grpcAddress !== '') targets.push({ peer: member, metas });
    }
    const start = performance.now();
    const results = await this.sender.sendEach(targets, false, known);
    const now = Date.now();
    return targets.map(({ peer, metas }, i) => {
      const result = results[i]!;
      if (!(result instanceof Error)) {
        this.metrics.observe('replicate', start);
        return { peer: peer.nodeId, blobs: result };
      }
      for (const meta of metas) this.backoff.failed(meta.id.toString('hex'), now);
      this.log.warn({ peer: peer.nodeId, blobs: metas.length, err: result.message }, 'replication to a peer failed; retrying with back-off');
      return { peer: peer.nodeId, blobs: new Set<BlobMeta>() };
    });
  }

  /**
   * More owners hold the blob now (recorded in its entry): the entry goes once every owner does.
   * The queue takes both changes at once (they ride along in its next index transaction): nothing
   * to wait for per blob.
   */
  private confirmed({ entry, meta }: Pending, owners: readonly string[]): void {
    const id = meta.id;
    this.forgetFailures(id);
    this.wake(id, entry.done.length);
    if (owners.every((o) => entry.done.includes(o))) this.dequeue(id);
    else void this.store.replication.update(id, entry);
  }

  private dequeue(id: Buffer): void {
    void this.store.replication.remove(id);
    this.forgetFailures(id);
    this.wake(id, Infinity);
  }

  private forgetFailures(id: Buffer): void {
    if (this.backoff.size > 0) this.backoff.clear(id.toString('hex'));
  }

  private wake(id: Buffer, copies: number): void {
    if (this.waiters.size === 0) return;
    const key = id.toString('hex');
    const list = this.waiters.get(key);
    if (!list) return;
    const still = list.filter((w) => {
      if (copies < w.need) return true;
      w.resolve();
      return false;
    });
    if (still.length > 0) this.waiters.set(key, still);
    else this.waiters.delete(key);
  }

  refreshMetrics(): void {
    const depth = this.store.replication.depth;
    this.metrics.setReplication(depth, depth > 0 && this.oldestMs > 0 ? Math.max(0, (Date.now() - this.oldestMs) / 1000) : 0);
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    for (const list of this.waiters.values()) for (const w of list) w.resolve();
    this.waiters.clear();
    this.handled(Infinity);
  }
}
