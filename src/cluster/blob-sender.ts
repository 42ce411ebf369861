/**
 * The sending end of copies between nodes (transfer.ts is the receiving end). Small blobs travel
 * many to one POST of a batch to the peers' API listeners (replica-batch.ts: their buffers written
 * as they are); large ones stream there one PUT each (replica-stream.ts). Every
 * blob is read, and its checksum verified, once for all the peers it goes to:
 *
 *   targets (peer, blobs) ─▶ small: rounds of <= batchBytes, each blob read once ─▶ one batch per peer, peers at once
 *                          └▶ large: one at a time, read once ─▶ streamed to every peer that lacks it
 *
 * A peer whose call fails gets nothing more in this send (its blobs are retried by the caller).
 */
import type { BlobMeta } from '../blob/meta.js';
import { Location } from '../index/entry.js';
import type { LocalStore } from '../service/local-store.js';
import { type BatchReplica, type ReplicaBatchBody, replicaBatchBody } from './replica-batch.js';
import type { PeerRef, PeerTransport } from './transport/peer-transport.js';
import { streamReplica } from './replica-stream.js';

export interface SenderOptions {
  /** Bytes of small blobs packed into one batch. */
  batchBytes: number;
  /** Blobs above this stream to the peers one at a time (at most the receiver's batch body limit, less framing). */
  inlineMaxBytes: number;
  /** Deadline of a batch call; a stream's peer that takes no chunk for this long is dropped. */
  callTimeoutMs: number;
  /** Chunks of a large blob encoded and in flight at once, for all its peers together. */
  streamChunksInFlight: number;
}

/** A peer and the blobs it lacks. */
export interface SendTarget {
  readonly peer: PeerRef;
  readonly metas: readonly BlobMeta[];
}

/**
 * One target's outcome: the blobs (its metas, by identity: no id is spelled out per blob) the
 * peer holds now, or the error that stopped its copies.
 */
export type SendResult = ReadonlySet<BlobMeta> | Error;

/** Small blobs' bytes already in memory (just stored and hashed, not to be read back), by their meta. */
export type KnownBytes = ReadonlyMap<BlobMeta, Buffer>;

export class BlobSender {
  constructor(
    private readonly store: LocalStore,
    private readonly transport: PeerTransport,
    private readonly options: SenderOptions,
  ) {}

  /** Sends one peer its blobs; resolves with those it holds afterwards, throws when a call failed. */
  async send(peer: PeerRef, metas: readonly BlobMeta[], repair: boolean): Promise<ReadonlySet<BlobMeta>> {
    const [result] = await this.sendEach([{ peer, metas }], repair);
    if (result instanceof Error) throw result;
    return result!;
  }

  /**
   * Sends each target its blobs, reading each blob once for every target that lacks it. A blob
   * goes to several targets as one meta object in each list (`known`: bytes already in memory).
   */
  async sendEach(targets: readonly SendTarget[], repair: boolean, known?: KnownBytes): Promise<SendResult[]> {
    const held = targets.map(() => new Set<BlobMeta>());
    const failed: (Error | undefined)[] = targets.map(() => undefined);
    await this.sendSmall(targets, repair, held, failed, known);
    await this.sendLarge(targets, repair, held, failed);
    return targets.map((_, i) => failed[i] ?? held[i]!);
  }

  /** Small blobs in rounds of at most batchBytes: each blob read once, then one batch call per peer. */
  private async sendSmall(
    targets: readonly SendTarget[], repair: boolean, held: Set<BlobMeta>[], failed: (Error | undefined)[], known?: KnownBytes,
  ): Promise<void> {
    const all = wantedBy(targets, (meta) => meta.size <= this.options.inlineMaxBytes);
    for (let at = 0; at < all.length;) {
      let end = at;
      let bytes = 0;
      while (end < all.length && (end === at || bytes + all[end]!.meta.size <= this.options.batchBytes)) bytes += all[end++]!.meta.size;
      const round = all.slice(at, end).filter((w) => w.by.some((i) => !failed[i]));
      at = end;
      if (round.length === 0) continue;
      const datas = await this.bytesOf(round, known);
      const batches = targets.map((): BatchReplica[] => []);
      const sent = targets.map((): BlobMeta[] => []);
      round.forEach((w, k) => {
        const blob = { meta: w.meta, data: datas[k]! };
        for (const i of w.by) {
          if (failed[i]) continue;
          batches[i]!.push(blob);
          sent[i]!.push(w.meta);
        }
      });
      // Peers that take the same blobs (every owner, with REPLICA3 on three nodes) share one body.
      const bodies = new Map<BatchReplica[], ReplicaBatchBody>();
      const bodyOf = (blobs: BatchReplica[]): ReplicaBatchBody => {
        for (const [other, body] of bodies) if (sameBlobs(other, blobs)) return body;
        const body = replicaBatchBody(blobs);
        bodies.set(blobs, body);
        return body;
      };
      await Promise.all(batches.map(async (blobs, i) => {
        if (blobs.length === 0) return;
        const { peer } = targets[i]!;
        try {
          await this.transport.replicaBatch(peer, bodyOf(blobs), blobs.length, repair, this.options.callTimeoutMs);
          for (const meta of sent[i]!) held[i]!.add(meta);
        } catch (err) {
          failed[i] = err as Error;
        }
      }));
    }
  }

  /** Large blobs one at a time, each streamed to every target that lacks it from one read. */
  private async sendLarge(targets: readonly SendTarget[], repair: boolean, held: Set<BlobMeta>[], failed: (Error | undefined)[]): Promise<void> {
    for (const { meta, by } of wantedBy(targets, (m) => m.size > this.options.inlineMaxBytes)) {
      const live = by.filter((i) => !failed[i]);
      if (live.length === 0) continue;
      const errors = await streamReplica(this.store, this.transport, live.map((i) => targets[i]!.peer), meta, repair, {
        chunksInFlight: this.options.streamChunksInFlight, callTimeoutMs: this.options.callTimeoutMs,
      });
      live.forEach((i, k) => {
        if (errors[k]) failed[i] = errors[k];
        else held[i]!.add(meta);
      });
    }
  }

  /**
   * The bytes of each blob of a round: those in memory as they are, the others read concurrently
   * (a file blob's read is a thread-pool round trip; a segment record's is synchronous). A round
   * of fresh stores, all in memory, makes no promise per blob.
   */
  private async bytesOf(round: readonly { meta: BlobMeta }[], known: KnownBytes | undefined): Promise<Buffer[]> {
    const datas: Buffer[] = new Array(round.length);
    let reads: Promise<void>[] | undefined;
    for (let k = 0; k < round.length; k++) {
      const meta = round[k]!.meta;
      const data = known?.get(meta);
      if (data !== undefined) datas[k] = data;
      else (reads ??= []).push(this.readSmall(meta).then((bytes) => void (datas[k] = bytes)));
    }
    if (reads !== undefined) await Promise.all(reads);
    return datas;
  }

  private readSmall(meta: BlobMeta): Promise<Buffer> {
    return meta.location === Location.SEGMENT ? this.store.readInline(meta) : this.readWhole(meta);
  }

  private async readWhole(meta: BlobMeta): Promise<Buffer> {
    const out = Buffer.allocUnsafe(meta.size);
    let at = 0;
    await this.store.read(meta, (chunk) => {
      // fill(): one native memcpy, also from the pool's shared memory (copy() is ~7x slower there).
      if (chunk.length > 0) out.fill(chunk, at, at + chunk.length);
      at += chunk.length;
    });
    return out;
  }
}

/** The blobs of the targets' lists that `pick` takes, each with the targets it goes to (a meta object shared by several lists is one blob). */
function wantedBy(targets: readonly SendTarget[], pick: (meta: BlobMeta) => boolean): { meta: BlobMeta; by: number[] }[] {
  const wanted = new Map<BlobMeta, { meta: BlobMeta; by: number[] }>();
  targets.forEach((t, i) => {
    for (const meta of t.metas) {
      if (!pick(meta)) continue;
      let entry = wanted.get(meta);
      if (entry === undefined) wanted.set(meta, (entry = { meta, by: [] }));
      entry.by.push(i);
    }
  });
  return [...wanted.values()];
}

/** The same messages in the same order (a round builds each blob's message once for all peers). */
function sameBlobs(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
