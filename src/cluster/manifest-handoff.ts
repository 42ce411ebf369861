/**
 * Handoff of the manifests of erasure-coded blobs stored as they streamed in
 * (docs/erasure-coding.md): a manifest lives on the first m + 1 owners of its blob's id, and those
 * change with the ring. Each manifest held here is offered to the id's owners on the current ring
 * once the ring's placement has changed since the last pass that placed them all, while this node
 * is leaving, and every `rescanMs` as a check (a store that reached fewer than m + 1 owners). A
 * member back with a newer incarnation (restarted, perhaps with an empty disk; the placement is
 * the same) is offered only those it owns, at the next pass. An owner that holds it already
 * writes nothing; one where a user deleted the blob after the manifest was made refuses it, and
 * this node offers none it deleted so.
 *
 *   manifest (id) here ──▶ owners(id, m + 1) on the current ring, this node aside
 *                            ──StoreManifest──▶ each (online) owner
 *
 * Without it a manifest stayed only on the nodes it was first written to: once they had all left
 * a cluster of more than 2 (k + m) nodes, a read found neither the manifest nor a column among
 * the nodes it asks, and the blob was lost though every column was whole. A manifest here whose
 * owners no longer include this node is kept (it is a few hundred bytes).
 */
import type { Logger } from '../log/logger.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import { manifestCopies, manifestMessage } from './ec-manifest.js';
import { deleteHolds } from './deleted-here.js';
import { PeerCallError } from './transport/grpc-peers.js';
import type { PeerTransport } from './transport/peer-transport.js';
import type { Ring } from './ring.js';

/** StoreManifest calls in flight at once, and manifests read from the index per page. */
const CALLS = 16;
const PAGE = 1024;

export class ManifestHandoff {
  /**
   * The last pass that placed every manifest on every owner: the ring it placed them by (a new
   * Ring object is made only when the placement changes), the members' incarnations, and when the
   * last pass over every owner ran.
   */
  private placed: { ring: Ring; incarnations: Map<string, number>; atMs: number } | undefined;

  constructor(
    private readonly store: LocalStore,
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly log: Logger,
    private readonly options: { rescanMs: number; timeoutMs: number },
  ) {}

  /**
   * A pass is due: the placement changed since the last complete one, this node is leaving, it is
   * rescanMs old, or a member came back with a newer incarnation.
   */
  due(leaving: boolean): boolean {
    const last = this.placed;
    return leaving || last === undefined || this.full(last) || this.returned(last).size > 0;
  }

  /** Every manifest goes to every owner: the placement changed since `last`, or the check is due. */
  private full(last: NonNullable<ManifestHandoff['placed']>): boolean {
    return last.ring !== this.cluster.ring || Date.now() - last.atMs >= this.options.rescanMs;
  }

  /** Active members whose incarnation rose since `last`: restarted, perhaps without the manifests they owned. */
  private returned(last: NonNullable<ManifestHandoff['placed']>): Set<string> {
    const back = new Set<string>();
    for (const r of this.cluster.membership.records()) {
      if (r.status === 'active' && r.incarnation > (last.incarnations.get(r.nodeId) ?? r.incarnation)) back.add(r.nodeId);
    }
    return back;
  }

  /**
   * Offers every manifest held here to the owners of its id (only to the members back with a newer
   * incarnation, when nothing else made the pass due); returns how many could not reach every
   * owner (one offline or failing: the next pass tries again).
   */
  async pass(stopped: () => boolean, leaving = false): Promise<number> {
    const ringVersion = this.cluster.membership.ringVersion;
    const incarnations = new Map(this.cluster.membership.records().map((r) => [r.nodeId, r.incarnation]));
    const ring = this.cluster.ring;
    const self = this.cluster.nodeId;
    if (ring.size === 0) return 0;
    const before = this.placed;
    const only = before !== undefined && !leaving && !this.full(before) ? this.returned(before) : undefined;
    const to = only !== undefined && only.size > 0 ? only : undefined;
    const tally = { offered: 0, created: 0, unplaced: new Set<string>() };
    // A page of manifests at a time, each page's offers CALLS at a time.
    let after: Buffer | undefined;
    while (!stopped()) {
      const offers: { id: Buffer; owner: string }[] = [];
      let last: Buffer | undefined;
      let seen = 0;
      this.store.ecManifests.scan(after, (id, policy) => {
        if (after && id.equals(after)) return true;
        last = Buffer.from(id);
        for (const owner of ring.owners(last, manifestCopies(policy))) if (owner !== self && (to === undefined || to.has(owner))) offers.push({ id: last, owner });
        return ++seen < PAGE;
      });
      if (last === undefined) break;
      after = last;
      await this.offer(offers, tally, stopped);
    }
    const { offered, created, unplaced } = tally;
    if (offered > 0 || unplaced.size > 0) {
      this.log.info({ offered, created, unplaced: unplaced.size, ringVersion, to: to && [...to] }, 'handoff: manifests offered to the owners of their ids');
    }
    if (unplaced.size === 0 && !stopped()) this.placed = { ring, incarnations, atMs: to ? before!.atMs : Date.now() };
    return unplaced.size;
  }

  /** StoreManifest to each offer's owner, CALLS at a time: counts the calls and the manifests created, and keeps the ids an owner could not take. */
  private async offer(offers: { id: Buffer; owner: string }[], tally: { offered: number; created: number; unplaced: Set<string> }, stopped: () => boolean): Promise<void> {
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(CALLS, offers.length) }, async () => {
      while (next < offers.length && !stopped()) {
        const { id, owner } = offers[next++]!;
        const manifest = this.store.ecManifests.get(id);
        // Gone meanwhile, or a user deleted the blob here after it was made: not spread again.
        if (!manifest || deleteHolds(this.store, id, manifest)) continue;
        const member = this.cluster.member(owner);
        if (!member || member.grpcAddress === '' || !this.cluster.online(owner)) {
          tally.unplaced.add(id.toString('hex'));
          continue;
        }
        tally.offered++;
        try {
          const answer = await this.transport.call<{ created?: boolean }>(member, 'StoreManifest', manifestMessage(id, manifest), this.options.timeoutMs);
          if (answer.created) tally.created++;
        } catch (err) {
          if (!(err instanceof PeerCallError)) throw err;
          tally.unplaced.add(id.toString('hex'));
        }
      }
    }));
  }
}
