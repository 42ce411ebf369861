/**
 * Reads from any node: a blob this node lacks is asked of its owners, then of nodes that may hold
 * a copy they do not own (a leaving node, the node that owned the range before a join), online
 * ones first, one at a time, at most three. The bytes stream through in chunks as the owner sends
 * them, never held whole; a whole-blob read is hashed on the way and checked against the id at the
 * end (a mismatch throws, so the caller cuts its answer: never wrong bytes). 404 only when every
 * node asked answered that it lacks it; 503 when one could not be asked.
 *
 *   GET here ── not local ──▶ StatBlob, one candidate after another (≤ 3) ──▶ the bytes from the first that has it
 *                                                                            (the data plane: its API listener)
 *
 *   candidates: owners by the policy (3 when unknown) · leaving nodes · the rest of the ring's first 3
 */
import { TtlCache } from '../util/ttl-cache.js';
import { BlobstoreError, notFound } from '../errors/errors.js';
import { IdCheck } from '../blob/id-check.js';
import type { BlobMeta } from '../blob/meta.js';
import { replicaCount, staysWhereStored } from '../blob/policy.js';
import type { NodeConfig } from '../config/settings.js';
import type { ByteRange, ChunkSink } from '../service/local-store.js';
import type { EcPlacement } from '../service/placement.js';
import type { ClusterNode } from './cluster-node.js';
import { READ_OWNERS, type Ring } from './ring.js';
import { PeerCallError } from './transport/grpc-peers.js';
import type { PeerRef, PeerTransport } from './transport/peer-transport.js';
import { PeerAnswered } from './transport/http-fetcher.js';
import { statOfAnswer } from './wire-meta.js';


/**
 * Owners asked for a blob whose policy this node does not know (a read learns it from the answer),
 * or of NONE (its copy may be on any of these: Ring.holders): READ_OWNERS, as many as REPLICA3
 * keeps, the most whole copies of any policy, so that every owner of a whole copy is among them
 * whatever the policy. For a blob of fewer copies the nodes past its owners still come last: the
 * one that owned the range before a join holds a copy until handoff moves it.
 */
const OWNERS_POLICY_UNKNOWN = READ_OWNERS;

/**
 * Blobs found on peers lately, kept so that repeated reads skip the StatBlob round trip (a grpc-js
 * call costs ~1.3 ms here). Safe because blobs are immutable: an entry can only go stale by a
 * delete on that peer, and then the fetch fails NOT_FOUND and the read asks again.
 */
const FOUND_CACHE_ENTRIES = 4096;
/** A node seen offline is asked with this share of peerCallTimeoutMs (1 s of the default 5 s). */
const OFFLINE_DEADLINE_SHARE = 5;
const FOUND_CACHE_MS = 30_000;

/** A blob found on a peer: a whole copy, or (`ec`) a column of an EC blob. */
export interface RemoteBlob {
  /** `traceparent`: of the request this read serves (Located), passed on to the peer's API listener. */
  meta: BlobMeta & { readonly traceparent?: string };
  peer: string;
  ec?: EcPlacement;
}

/**
 * The nodes a read asks, in order (the first that has the blob answers): the owners its policy
 * names (OWNERS_POLICY_UNKNOWN when `policy` is unknown or EC's, whose columns any of the first
 * owners can describe), then nodes that may hold a copy they do not own: `leaving` ones (they hand
 * theirs over), then the rest of the ring's first OWNERS_POLICY_UNKNOWN. Online ones first (an
 * offline node is still worth a try when nothing else answers); never this node.
 */
export function readCandidates(ring: Ring, self: string, leaving: readonly string[], online: (node: string) => boolean, id: Buffer, policy?: number): string[] {
  const count = (policy === undefined || staysWhereStored(policy) ? 0 : replicaCount(policy)) || OWNERS_POLICY_UNKNOWN;
  const out = [...new Set([...ring.owners(id, count), ...leaving, ...ring.owners(id, OWNERS_POLICY_UNKNOWN)])].filter((n) => n !== self);
  return [...out.filter((n) => online(n)), ...out.filter((n) => !online(n))].slice(0, READ_OWNERS + 1);
}

const failedChecksum = (blob: RemoteBlob): BlobstoreError =>
  new BlobstoreError('corruption', `blob ${blob.meta.id.toString('hex')} from ${blob.peer} failed its checksum`);

export class RemoteReader {
  private readonly found = new TtlCache<RemoteBlob>(FOUND_CACHE_ENTRIES, FOUND_CACHE_MS);

  constructor(
    private readonly cluster: ClusterNode,
    private readonly transport: PeerTransport,
    private readonly config: NodeConfig,
  ) {}

  /**
   * The blob's metadata from the first node that has it; undefined when none has it. `policy`:
   * the blob's, where the caller knows it (a corrupt local copy); else that of a blob found lately.
   */
  async stat(id: Buffer, policy?: number): Promise<RemoteBlob | undefined> {
    const key = id.toString('hex');
    const cached = this.found.get(key);
    if (cached && this.cluster.online(cached.peer)) return cached;
    const leaving = this.cluster.membership.records().filter((r) => r.status === 'leaving').map((r) => r.nodeId);
    const candidates = readCandidates(this.cluster.ring, this.cluster.nodeId, leaving, (n) => this.cluster.online(n), id, policy ?? cached?.meta.policy);
    const blob = (await this.ask(id, candidates)) ?? (await this.askTheRest(id, candidates));
    if (blob) this.found.set(key, blob);
    return blob;
  }

  /** A peer no longer has the blob it was found on: the next read asks again. */
  forget(id: Buffer): void {
    this.found.delete(id.toString('hex'));
  }

  private async ask(id: Buffer, candidates: readonly string[]): Promise<RemoteBlob | undefined> {
    let lastFailure: PeerCallError | undefined;
    let asked = 0;
    let failed = 0;
    for (const peer of candidates) {
      if (asked === READ_OWNERS) break;
      const member = this.cluster.member(peer);
      if (!member) continue;
      asked++;
      // A node seen offline is still asked (it may be back), but not given the whole call
      // deadline: on a host cut off from its peers, every candidate is offline, and the read's
      // 503 would otherwise wait for each in turn.
      const timeoutMs = this.cluster.online(peer) ? this.config.peerCallTimeoutMs : Math.ceil(this.config.peerCallTimeoutMs / OFFLINE_DEADLINE_SHARE);
      try {
        const found = await this.statOn(member, peer, id, timeoutMs);
        if (found) return found;
      } catch (err) {
        if (!(err instanceof PeerCallError)) throw err;
        lastFailure = err;
        failed++;
      }
    }
    // An owner that could not be asked may hold the only copy (a NONE blob, or copies not yet
    // sent): not "not found" but "unreachable", which the client retries.
    if (failed > 0) {
      const which = failed === asked ? 'its owners are unreachable' : `${failed} of the ${asked} nodes that may hold it ${failed === 1 ? 'is' : 'are'} unreachable`;
      throw new BlobstoreError('unavailable', `blob ${id.toString('hex')} is not on this node and ${which}`, {
        cause: lastFailure, headers: { 'Retry-After': '1' }, peer: true,
      });
    }
    return undefined;
  }

  /**
   * Every other member online, at once, once the owners said they lack the blob: a node that took
   * a store of it but owns none of it holds the only copy until its copies are out (they gather
   * for replicationBatchDelayMs, and wait while an owner is down), and a 404 then would contradict
   * the 2xx the client just had. A miss costs a call to each member; a hit on an owner, none. A
   * member that cannot be asked does not turn the owners' answer into a 503: a node down would
   * then make every miss a 503 until it is seen offline.
   */
  private async askTheRest(id: Buffer, asked: readonly string[]): Promise<RemoteBlob | undefined> {
    const skip = new Set([...asked, this.cluster.nodeId]);
    const rest = this.cluster.membership.records().map((r) => r.nodeId).filter((n) => !skip.has(n) && this.cluster.online(n));
    const answers = await Promise.all(rest.map(async (peer) => {
      const member = this.cluster.member(peer);
      if (!member) return undefined;
      try {
        return await this.statOn(member, peer, id, this.config.peerCallTimeoutMs);
      } catch (err) {
        if (!(err instanceof PeerCallError)) throw err;
        return undefined;
      }
    }));
    return answers.find((a) => a !== undefined);
  }

  /** What `peer` holds of the blob: a whole copy, a column (`ec`), or nothing. */
  private async statOn(member: PeerRef, peer: string, id: Buffer, timeoutMs: number): Promise<RemoteBlob | undefined> {
    const { meta, ec } = statOfAnswer(id, await this.transport.stat(member, id, timeoutMs), this.config);
    if (!meta) return undefined;
    return ec ? { meta, peer, ec } : { meta, peer };
  }

  /**
   * Streams `range` (default: all) of a blob held by `peer` to `sink` in chunks of at most 1 MiB,
   * from the peer's API listener. A whole-blob read is checked against the id before its last chunk goes.
   * A peer that no longer holds it (deleted or handed on since it was found there) sends the read
   * to wherever it is now, asked afresh; 404 when no node has it.
   */
  fetch(blob: RemoteBlob, sink: ChunkSink, range?: ByteRange): Promise<void> {
    return this.fetchFrom(blob, sink, range, true);
  }

  /** `fetch`; `moved`: a 404 from the peer sends the read on to where the blob is now. */
  private async fetchFrom(blob: RemoteBlob, sink: ChunkSink, range: ByteRange | undefined, moved: boolean): Promise<void> {
    const member = this.cluster.member(blob.peer);
    if (!member) throw new BlobstoreError('unavailable', `node ${blob.peer} is not a member any more`, { peer: true });
    const whole = range === undefined || (range.start === 0 && range.end === blob.meta.size);
    const check = whole ? new IdCheck(blob.meta.id, blob.meta.size) : undefined;
    const expected = range ? range.end - range.start : blob.meta.size;
    let index = 0;
    let received = 0;
    const take = (chunk: Buffer): Promise<void> | void => {
      received += chunk.length;
      if (check && !check.add(chunk)) throw failedChecksum(blob);
      return sink(chunk, index++);
    };
    if (expected > 0) {
      try {
        await this.transport.readBlob(member, blob.meta.id, whole ? undefined : range, take, blob.meta.traceparent);
      } catch (err) {
        if (err instanceof BlobstoreError && err.kind === 'corruption') throw err;
        if (err instanceof PeerAnswered && err.status === 404 && received === 0 && moved) return this.fetchMoved(blob, sink, range);
        throw new BlobstoreError('unavailable', `blob ${blob.meta.id.toString('hex')} from ${blob.peer}: ${(err as Error).message}`, {
          cause: err, headers: { 'Retry-After': '1' }, peer: true,
        });
      }
    }
    if (received !== expected) throw new BlobstoreError('corruption', `blob ${blob.meta.id.toString('hex')} from ${blob.peer}: ${received} bytes, expected ${expected}`);
    if (check && !check.done && !check.matches()) throw failedChecksum(blob);
  }

  /** The read of a blob its node no longer holds: from where it is now (asked again, once), or 404. */
  private async fetchMoved(gone: RemoteBlob, sink: ChunkSink, range: ByteRange | undefined): Promise<void> {
    const id = gone.meta.id;
    this.forget(id);
    const now = await this.stat(id, gone.meta.policy);
    if (!now) throw notFound(`blob ${id.toString('hex')} is not on this node and not retrievable from any other node`);
    if (now.ec) {
      throw new BlobstoreError('unavailable', `blob ${id.toString('hex')} moved from ${gone.peer} as it was read; retry`, { headers: { 'Retry-After': '1' } });
    }
    return this.fetchFrom(now, sink, range, false);
  }
}
