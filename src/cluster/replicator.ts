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
 */
import { Backoffs } from '../util/backoff.js';
import { BackgroundLoop } from '../util/background-loop.js';
import type { Logger } from '../log/logger.js';
import type { ClusterMetrics } from '../metrics/cluster-metrics.js';
import type { BlobMeta } from '../blob/meta.js';
import type { QueueEntry } from '../index/blob-index.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import type { BlobSender, SendTarget } from './blob-sender.js';

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

export class Replicator {
  /**
   * Ids stored since the last pass (hex): handled first, without a walk of the queue; with a
   * small blob's bytes while they fit in freshBytesMax, so its copies need not read it back.
   */
  private fresh = new Map<string, Buffer | undefined>();
  private freshBytes = 0;
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

  /** A store was committed with a queue entry: copy it soon (`data`: its bytes, if small). */
  stored(id: Buffer, data?: Buffer): void {
    const key = id.toString('hex');
    if (this.fresh.get(key) !== undefined) return this.kick();
    const keep = data !== undefined && this.freshBytes + data.length <= this.options.freshBytesMax;
    if (keep) this.freshBytes += data.length;
    this.fresh.set(key, keep ? data : undefined);
    this.kick();
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
    const known = this.fresh;
    const fresh = [...known.keys()].map((h) => Buffer.from(h, 'hex'));
    this.fresh = new Map();
    this.freshBytes = 0;
    this.lastPassBlobs = fresh.length;
    if (fresh.length > 0) {
      await this.handle(fresh, known);
      return;
    }
    let after: Buffer | undefined;
    let oldest = Infinity;
    for (;;) {
      const page = this.store.replication.page(this.options.pageSize, after);
      if (page.length === 0) break;
      for (const { entry } of page) oldest = Math.min(oldest, entry.queuedAtMs);
      const now = Date.now();
      const due = page.map((p) => p.id).filter((id) => this.backoff.due(id.toString('hex'), now));
      if (due.length > 0) await this.handle(due);
      after = page[page.length - 1]!.id;
      if (page.length < this.options.pageSize || this.loop.stopped) break;
    }
    this.oldestMs = oldest === Infinity ? 0 : oldest;
  }

  /** Copies each id to the owners that lack it, peers in parallel (`known`: bytes already in memory, by hex id). */
  private async handle(ids: readonly Buffer[], known?: ReadonlyMap<string, Buffer | undefined>): Promise<void> {
    const perPeer = new Map<string, BlobMeta[]>();
    const queued = new Map<string, { entry: QueueEntry; meta: BlobMeta }>();
    for (const id of ids) {
      const entry = this.store.replication.get(id);
      if (!entry) continue;
      const meta = this.store.stat(id);
      if (!meta) {
        // Deleted since: nothing left to copy.
        await this.dequeue(id);
        continue;
      }
      queued.set(id.toString('hex'), { entry, meta });
      const missing = this.cluster.ring.holders(id, meta.policy, this.cluster.nodeId).filter((o) => o !== this.cluster.nodeId && !entry.done.includes(o));
      if (missing.length === 0) {
        await this.dequeue(id);
        continue;
      }
      for (const owner of missing) {
        if (!this.cluster.online(owner)) continue; // it waits in the queue until the owner is back
        const list = perPeer.get(owner) ?? [];
        list.push(meta);
        perPeer.set(owner, list);
      }
    }
    const results = await this.sendEach(perPeer, known);
    // Each blob's entry is updated once for all its peers (the index writes them with its next
    // transaction).
    const confirmations = new Map<string, string[]>();
    for (const { peer, held } of results) for (const key of held) confirmations.set(key, [...(confirmations.get(key) ?? []), peer]);
    await Promise.all([...confirmations].map(([key, peers]) => this.confirmed(queued.get(key)!, peers)));
  }

  /**
   * Sends every peer its blobs at once (each blob read once for all of them); per peer, the ids
   * (hex) it holds afterwards, none when its calls failed (those blobs back off).
   */
  private async sendEach(perPeer: ReadonlyMap<string, BlobMeta[]>, known?: ReadonlyMap<string, Buffer | undefined>): Promise<{ peer: string; held: Set<string> }[]> {
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
        return { peer: peer.nodeId, held: result };
      }
      for (const meta of metas) {
        this.backoff.failed(meta.id.toString('hex'), now);
      }
      this.log.warn({ peer: peer.nodeId, blobs: metas.length, err: result.message }, 'replication to a peer failed; retrying with back-off');
      return { peer: peer.nodeId, held: new Set<string>() };
    });
  }

  /** `peers` hold the blob now: recorded, and the entry goes once every owner does. */
  private async confirmed({ entry, meta }: { entry: QueueEntry; meta: BlobMeta }, peers: readonly string[]): Promise<void> {
    const id = meta.id;
    for (const peer of peers) if (!entry.done.includes(peer)) entry.done.push(peer);
    const owners = this.cluster.ring.holders(id, meta.policy, this.cluster.nodeId).filter((o) => o !== this.cluster.nodeId);
    this.backoff.clear(id.toString('hex'));
    this.wake(id, entry.done.length);
    if (owners.every((o) => entry.done.includes(o))) await this.dequeue(id);
    else await this.store.replication.update(id, entry);
  }

  private async dequeue(id: Buffer): Promise<void> {
    await this.store.replication.remove(id);
    this.backoff.clear(id.toString('hex'));
    this.wake(id, Infinity);
  }

  private wake(id: Buffer, copies: number): void {
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
  }
}
