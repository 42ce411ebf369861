/**
 * Anti-entropy between owners (Merkle-style, as Dynamo and Cassandra's repair do): two nodes
 * compare digests of the ids they both own instead of asking blob by blob, and copy what one
 * lacks.
 *
 *   for each peer P:  ids x held here (or deleted here by a user) with me ∈ owners(x) and P ∈ owners(x)
 *                     leaf = first 16 bits of x (65,536 leaves)  ·  leaf digest = XOR of x's first 8 bytes
 *                     top  = first 8 bits (256)                  ·  top digest  = XOR of its 256 leaves
 *
 *   me ──RangeDigest()────────────▶ P: its 256 tops for (P, me)    compare; for the tops that differ:
 *   me ──RangeDigest(tops)────────▶ P: their 256 leaves each       compare; for the leaves that differ:
 *   me ──ListLeaf(leaf)───────────▶ P: the ids it has there        send what P lacks (replica batches and PUTs,
 *                                                                   repair: a user's delete on P holds)
 *
 * Both sides describe the same set when replication is complete, so equal digests mean nothing to
 * do; each side pushes what it has and the other lacks, so a pair converges after both ran.
 * Erasure-coded blobs count among the ids of every node holding one of their columns (owners by
 * the k + m of their policy), marked apart from whole copies (their digest word is flipped, their
 * listed id carries a 17th byte); one the peer lacks is queued for EC repair, which rebuilds a
 * column onto it rather than sending the blob.
 *
 * The trees are kept, not rebuilt per round: one scan of the index builds them for every peer at
 * once (in slices, docs/cluster.md), then every id entering or leaving what this node holds
 * (LocalStore.watchIds) toggles its word in the trees of its owners (XOR is its own inverse), so a
 * round costs no scan however many ids the node holds. A scan runs again when the ring changes
 * (other owners) and every treeMaxAgeMs as a check; ids that change while it runs are counted by
 * the scan if it has not passed them yet, else by their toggle. Leaf id lists are read live.
 * Sends are capped at repairBytesPerSecond.
 *
 * Rounds run every repairIntervalMs, and at once when the ring loses a member (kick): the copies
 * the member held are rebuilt without waiting for the next round. Peers are compared a few at a
 * time, a peer's differing leaves are listed LEAF_CALLS at a time, and what it lacks goes out in
 * batches of up to replicationBatchBytes, so a repair runs at the pace of the disks, not of one
 * round trip per leaf. A peer still on another ring version is asked again shortly.
 */
import { BackgroundLoop } from '../util/background-loop.js';
import type { Logger } from '../log/logger.js';
import type { BlobMeta } from '../blob/meta.js';
import { placementKey } from '../blob/shard.js';
import { replicaCount } from '../blob/policy.js';
import { ecScheme } from '../ec/layout.js';
import type { HeldIdWatcher, LocalStore } from '../service/local-store.js';
import type { IdSet } from '../index/blob-index.js';
import type { Ring } from './ring.js';
import type { ClusterNode } from './cluster-node.js';
import { PeerCallError } from './transport/grpc-peers.js';
import { PeerPutError } from './transport/http-put.js';
import type { PeerTransport } from './transport/peer-transport.js';
import type { BlobSender } from './transfer.js';
import type { TokenBucket } from './token-bucket.js';
import { scanInSlices } from './index-scan.js';

export const TOP_BUCKETS = 256;
export const LEAVES = 65_536;

/** Two 32-bit lanes per digest (XOR needs no BigInt). */
interface Tree {
  ringVersion: number;
  builtAtMs: number;
  leaves: Uint32Array; // LEAVES * 2
  tops: Uint32Array; // TOP_BUCKETS * 2
}

export interface AntiEntropyOptions {
  intervalMs: number;
  /** After a kicked round that found peers on another ring version: how soon to ask again. */
  retryMs: number;
  /** Bytes of blobs a peer lacks sent in one call. */
  batchBytes: number;
  /** The cap on what repair sends (shared with handoff and EC repair). */
  bucket: TokenBucket;
  /** Trees kept up to date as ids change are built again by a scan after this long (a check). */
  treeMaxAgeMs: number;
}

export interface RepairStats {
  rounds: number;
  idsScanned: number;
  scanMs: number;
  blobsSent: number;
  bytesSent: number;
  /** Blobs found lacking on a peer and not yet sent, and their bytes. */
  blobsQueued: number;
  bytesQueued: number;
  /** Bytes sent per second in the last round that sent any. */
  bytesPerSecond: number;
}

/** A build under way: its trees, the ring it places ids by, and how far its scans are. */
interface Build {
  readonly ring: Ring;
  readonly trees: Map<string, Tree>;
  /** The id set being scanned (SCANS), and the last id its scan visited before the event loop turned. */
  scanning: number;
  at: Buffer | undefined;
}

/** The scans of a build, in order. */
const SCANS: readonly IdSet[] = ['blob', 'column', 'deleted'];

/** Peers compared at once, and ListLeaf calls in flight to one peer. */
const PEER_CALLS = 4;
const LEAF_CALLS = 16;
/** A kicked round asks peers on another ring version again this many times at most. */
const KICK_RETRIES = 30;

/** Runs `work` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

const leafOf = (id: Uint8Array): number => (id[0]! << 8) | id[1]!;

/** Owners a blob of `policy` has: its replica count, or k + m columns. */
function ownerCount(policy: number): number {
  const scheme = ecScheme(policy);
  return scheme ? scheme.k + scheme.m : replicaCount(policy);
}

/** An EC blob's digest word differs from a whole copy's of the same id (both may exist). */
const EC_MARK = 0x5a5a5a5a;

/** How a leaf lists an id: 16 bytes for a whole copy, 17 (the id and 0xec) for an EC blob. */
const listedKey = (id: Buffer, ec: boolean): string => (ec ? `${id.toString('hex')}ec` : id.toString('hex'));
const hex64 = (t: Uint32Array, i: number): string => (t[2 * i]!.toString(16).padStart(8, '0') + t[2 * i + 1]!.toString(16).padStart(8, '0'));

/**
 * The places where a peer's digests (decimal, as RangeDigest carries them) differ from this
 * node's (`mine(i)`, hex); undefined when it sent another count than `count`, none at all when it
 * keeps no tree for this node (an empty repeated field arrives as no field).
 */
function differing(theirs: readonly string[] | undefined, count: number, mine: (i: number) => string): number[] | undefined {
  if (theirs?.length !== count) return undefined;
  const out: number[] = [];
  for (let i = 0; i < count; i++) if (BigInt(theirs[i]!) !== BigInt(`0x${mine(i)}`)) out.push(i);
  return out;
}

export class AntiEntropy {
  private trees = new Map<string, Tree>();
  /** The build under way: a peer asking meanwhile waits for it rather than starting another. */
  private building: Promise<void> | undefined;
  private build: Build | undefined;
  /** Ids entering or leaving what this node holds (LocalStore.watchIds): toggled in the trees kept and in a build's. */
  readonly watcher: HeldIdWatcher = (id, policy, key, set) => {
    if (this.someTree?.ringVersion === this.cluster.membership.ringVersion) this.toggle(this.trees, this.cluster.ring, id, policy, key, true);
    const build = this.build;
    if (build && this.scanned(build, set, id)) this.toggle(build.trees, build.ring, id, policy, key, false);
  };
  private readonly loop: BackgroundLoop;
  readonly stats: RepairStats = { rounds: 0, idsScanned: 0, scanMs: 0, blobsSent: 0, bytesSent: 0, blobsQueued: 0, bytesQueued: 0, bytesPerSecond: 0 };
  private kickTimer: NodeJS.Timeout | undefined;
  private kicksLeft = 0;

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly sender: BlobSender,
    private readonly log: Logger,
    private readonly options: AntiEntropyOptions,
    /** An owner of an EC blob holds none of its columns: EC repair takes it. */
    private readonly lackingColumns: (id: Buffer, policy: number) => void = () => undefined,
  ) {
    // A tick while a round runs adds none: the round under way is as good.
    this.loop = new BackgroundLoop({
      step: () => this.step(), everyMs: options.intervalMs, tick: 'when-idle',
      onError: (err) => this.log.error({ err }, `anti-entropy: ${err.message}`),
    });
  }

  /** Runs rounds; the trees follow the index only once `watcher` is told its changes (Cluster.start). */
  start(): void {
    this.loop.start();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /** The ring lost a member: a round now (after the one running), and again while peers catch up with the ring. */
  kick(): void {
    if (this.stopped) return;
    this.kicksLeft = KICK_RETRIES;
    clearTimeout(this.kickTimer);
    this.loop.kick();
  }

  private async step(): Promise<void> {
    this.again(await this.round());
  }

  private again(skewed: boolean): void {
    if (!skewed || this.kicksLeft <= 0 || this.stopped) return;
    this.kicksLeft--;
    clearTimeout(this.kickTimer);
    this.kickTimer = setTimeout(() => this.loop.kick(), this.options.retryMs);
    this.kickTimer.unref();
  }

  private peersToCompare(): string[] {
    return this.cluster.ring.nodeIds.filter((n) => n !== this.cluster.nodeId && this.cluster.online(n));
  }

  /** Trees built afresh (once, for every caller meanwhile). */
  buildTrees(): Promise<void> {
    this.building ??= this.scanTrees().finally(() => {
      this.building = undefined;
      this.build = undefined;
    });
    return this.building;
  }

  /**
   * One scan of the index, in slices: a tree per peer over the ids both own. Ids a user deleted
   * here count as held (under the policy they had), so their copies elsewhere do not show as a
   * difference.
   */
  private async scanTrees(): Promise<void> {
    const start = performance.now();
    const ring = this.cluster.ring;
    const self = this.cluster.nodeId;
    const trees = new Map<string, Tree>();
    const version = this.cluster.membership.ringVersion;
    for (const peer of ring.nodeIds) {
      if (peer !== self) trees.set(peer, { ringVersion: version, builtAtMs: Date.now(), leaves: new Uint32Array(LEAVES * 2), tops: new Uint32Array(TOP_BUCKETS * 2) });
    }
    const build: Build = { ring, trees, scanning: 0, at: undefined };
    this.build = build;
    let scanned = 0;
    const paused = (at: Buffer): void => void (build.at = at);
    const add = (id: Buffer, policy: number, key: Buffer = id): boolean => {
      scanned++;
      this.toggle(trees, ring, id, policy, key, false);
      return true;
    };
    await scanInSlices<[number, number]>((start, visit) => this.store.scan(start, visit), (id, policy) => add(id, policy), paused);
    // A blob with several columns here counts once.
    [build.scanning, build.at] = [1, undefined];
    let last = Buffer.alloc(16);
    await scanInSlices<[number, number, number]>((start, visit) => this.store.scanShards(start, visit), (id, _index, policy) => {
      if (id.equals(last)) return;
      last = Buffer.from(id);
      add(last, policy, this.placementOf(last));
    }, paused);
    [build.scanning, build.at] = [2, undefined];
    await scanInSlices<[number]>((start, visit) => this.store.scanDeleted(start, visit), (id, policy) => add(id, policy), paused);
    for (const tree of trees.values()) {
      for (let leaf = 0; leaf < LEAVES; leaf++) {
        const top = leaf >> 8;
        tree.tops[2 * top]! ^= tree.leaves[2 * leaf]!;
        tree.tops[2 * top + 1]! ^= tree.leaves[2 * leaf + 1]!;
      }
    }
    this.trees = trees;
    this.stats.idsScanned = scanned;
    this.stats.scanMs = performance.now() - start;
  }

  /** Whether `build`'s scans went past `id` of `set` (its change is then the toggle's to count, not the scan's). */
  private scanned(build: Build, set: IdSet, id: Buffer): boolean {
    const scan = SCANS.indexOf(set);
    if (scan !== build.scanning) return scan < build.scanning;
    return build.at !== undefined && Buffer.compare(id, build.at) <= 0;
  }

  /** Flips id's word in the trees of the peers that own it with this node (`tops` too, for trees in use). */
  private toggle(trees: Map<string, Tree>, ring: Ring, id: Buffer, policy: number, key: Buffer, tops: boolean): void {
    const self = this.cluster.nodeId;
    const owners = ring.owners(key, ownerCount(policy));
    if (!owners.includes(self)) return;
    const leaf = leafOf(id);
    const hi = (id.readUInt32BE(0) ^ (ecScheme(policy) ? EC_MARK : 0)) >>> 0;
    const lo = id.readUInt32BE(4);
    for (const owner of owners) {
      const tree = owner === self ? undefined : trees.get(owner);
      if (!tree) continue;
      tree.leaves[2 * leaf]! ^= hi;
      tree.leaves[2 * leaf + 1]! ^= lo;
      if (!tops) continue;
      tree.tops[2 * (leaf >> 8)]! ^= hi;
      tree.tops[2 * (leaf >> 8) + 1]! ^= lo;
    }
  }

  /** The key a blob's columns held here are placed by (its id, unless it was stored as it streamed in). */
  private placementOf(id: Buffer): Buffer {
    return placementKey(id, this.store.shardsOf(id)[0]?.shard);
  }

  /** One of the trees kept (all are of one ring version and one build). */
  private get someTree(): Tree | undefined {
    return this.trees.values().next().value as Tree | undefined;
  }

  /** The trees are of the ring in use, and their last check is recent enough. */
  private get treesCurrent(): boolean {
    const tree = this.someTree;
    return tree !== undefined && tree.ringVersion === this.cluster.membership.ringVersion && Date.now() - tree.builtAtMs <= this.options.treeMaxAgeMs;
  }

  private async treeFor(peer: string): Promise<Tree | undefined> {
    if (!this.treesCurrent) await this.buildTrees();
    return this.trees.get(peer);
  }

  /** RangeDigest: the 256 tops for (this node, peer), or the leaves under each top asked for. */
  async digests(peer: string, tops: readonly number[]): Promise<{ ring_version: number; digests: string[] }> {
    const tree = await this.treeFor(peer);
    const version = this.cluster.membership.ringVersion;
    if (!tree) return { ring_version: version, digests: [] };
    const out: string[] = [];
    if (tops.length === 0) for (let t = 0; t < TOP_BUCKETS; t++) out.push(hex64(tree.tops, t));
    else for (const t of tops) for (let leaf = t << 8; leaf < (t + 1) << 8; leaf++) out.push(hex64(tree.leaves, leaf));
    return { ring_version: version, digests: out.map((h) => BigInt(`0x${h}`).toString()) };
  }

  /** ListLeaf: the ids in a leaf that both this node and `peer` own, read live (EC blobs with a 17th byte). */
  leafIds(peer: string, leaf: number): Buffer[] {
    return this.leafMembers(peer, leaf).map((x) => (x.ec ? Buffer.concat([x.id, Buffer.from([0xec])]) : x.id));
  }

  private leafMembers(peer: string, leaf: number): { id: Buffer; held: boolean; ec: boolean; policy: number }[] {
    const ring = this.cluster.ring;
    const self = this.cluster.nodeId;
    const start = Buffer.alloc(16);
    start.writeUInt16BE(leaf, 0);
    const out: { id: Buffer; held: boolean; ec: boolean; policy: number }[] = [];
    let last: Buffer | undefined;
    const visit = (held: boolean, column = false) => (id: Buffer, policy: number): boolean => {
      if (leafOf(id) !== leaf) return false;
      const ec = ecScheme(policy) !== undefined;
      // Several columns of one blob: listed once.
      if (ec && held && last?.equals(id)) return true;
      if (ec && held) last = Buffer.from(id);
      const owners = ring.owners(column ? this.placementOf(Buffer.from(id)) : id, ownerCount(policy));
      if (owners.includes(self) && owners.includes(peer)) out.push({ id: Buffer.from(id), held, ec, policy });
      return true;
    };
    this.store.scan(start, visit(true));
    this.store.scanShards(start, (id, _index, policy) => visit(true, true)(id, policy));
    this.store.scanDeleted(start, visit(false));
    return out;
  }

  /** One round; true when a peer was on another ring version (its comparison waits). */
  private async round(): Promise<boolean> {
    if (!this.treesCurrent) await this.buildTrees();
    this.stats.rounds++;
    let skewed = false;
    const started = performance.now();
    const sentBefore = this.stats.bytesSent;
    await eachLimited(this.peersToCompare(), PEER_CALLS, async (peer) => {
      if (this.stopped) return;
      try {
        if (!(await this.compareWith(peer))) skewed = true;
      } catch (err) {
        if (!(err instanceof PeerCallError || err instanceof PeerPutError)) throw err;
        this.log.warn({ peer, err: err.message }, 'anti-entropy: comparison with a peer failed; next round');
      }
    });
    const sent = this.stats.bytesSent - sentBefore;
    if (sent > 0) this.stats.bytesPerSecond = sent / Math.max(0.001, (performance.now() - started) / 1000);
    return skewed;
  }

  /** Compares with one peer and sends it what it lacks; false when the peer is on another ring version. */
  private async compareWith(peer: string): Promise<boolean> {
    const member = this.cluster.member(peer);
    const mine = this.trees.get(peer);
    if (!member || member.grpcAddress === '' || !mine) return true;
    const ask = (top: number[]): Promise<{ ring_version: string | number; digests?: string[] }> =>
      this.transport.call(member, 'RangeDigest', { peer: this.cluster.nodeId, ring_version: mine.ringVersion, top });
    const theirs = await ask([]);
    // A peer on another ring version computes other owners: wait for the ring to settle. So for
    // a peer that keeps no tree for this node (no digests: it sees no ranges shared with it).
    if (Number(theirs.ring_version) !== mine.ringVersion) return false;
    const differingTops = differing(theirs.digests, TOP_BUCKETS, (t) => hex64(mine.tops, t));
    if (differingTops === undefined) return false;
    if (differingTops.length === 0) return true;
    const leaves = differing((await ask(differingTops)).digests, differingTops.length * 256, (k) => hex64(mine.leaves, (differingTops[k >> 8]! << 8) | (k & 255)));
    if (leaves === undefined) return false;
    const differingLeaves = leaves.map((k) => (differingTops[k >> 8]! << 8) | (k & 255));
    const target = member;
    let batch: BlobMeta[] = [];
    let batchBytes = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const [blobs, bytes] = [batch, batchBytes];
      batch = [];
      batchBytes = 0;
      await this.options.bucket.take(bytes);
      await this.sender.send(target, blobs, true);
      this.stats.blobsSent += blobs.length;
      this.stats.bytesSent += bytes;
      this.stats.blobsQueued -= blobs.length;
      this.stats.bytesQueued -= bytes;
      this.log.info({ peer, blobs: blobs.length, bytes }, 'anti-entropy: copied blobs a peer lacked');
    };
    try {
      await eachLimited(differingLeaves, LEAF_CALLS, async (leaf) => {
        if (this.stopped) return;
        const listed = await this.transport.call<{ ids?: Buffer[] }>(member, 'ListLeaf', { peer: this.cluster.nodeId, ring_version: mine.ringVersion, leaf });
        const theirIds = new Set((listed.ids ?? []).map((b) => Buffer.from(b).toString('hex')));
        for (const { id, held, ec, policy } of this.leafMembers(peer, leaf)) {
          if (!held || theirIds.has(listedKey(id, ec))) continue;
          if (ec) {
            // The peer holds no column of it: rebuilt onto it by EC repair, not sent whole.
            this.lackingColumns(id, policy);
            continue;
          }
          const meta = this.store.stat(id);
          if (!meta) continue;
          batch.push(meta);
          batchBytes += meta.size;
          this.stats.blobsQueued++;
          this.stats.bytesQueued += meta.size;
          if (batchBytes >= this.options.batchBytes) await flush();
        }
      });
      await flush();
    } finally {
      // What was not sent is found again by the next round.
      this.stats.blobsQueued -= batch.length;
      this.stats.bytesQueued -= batchBytes;
    }
    return true;
  }

  async stop(): Promise<void> {
    clearTimeout(this.kickTimer);
    await this.loop.stop();
  }
}
