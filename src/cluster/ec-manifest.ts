/**
 * The manifest of an erasure-coded blob stored as it streamed in (docs/erasure-coding.md): its
 * columns were placed by a key chosen before the id was known, so the first m + 1 owners of the
 * id keep {id -> placement key, the blob's metadata}. A reader asks the id's owners (StatBlob)
 * and learns where the columns are; the manifest is written after k columns are sealed, so one
 * that is found names a readable blob.
 */
import type { NodeConfig } from '../config/settings.js';
import { invalidArgument } from '../errors/errors.js';
import type { BlobMeta } from '../blob/meta.js';
import type { EcManifest } from '../index/ec-manifests.js';
import type { BlobMetaMessage } from '../proto/messages.js';
import { manifestMeta } from '../service/ec-meta.js';
import type { LocalStore } from '../service/local-store.js';
import type { ClusterNode } from './cluster-node.js';
import type { EcBlob } from './ec-read-state.js';
import type { PeerTransport } from './transport/peer-transport.js';
import { incomingMeta } from './transfer.js';
import { messageOfMeta, placementOf } from './wire-meta.js';
import { ecScheme } from '../ec/layout.js';

/** The blob a manifest held here describes, as a read needs it. */
export function manifestBlob(id: Buffer, m: EcManifest): EcBlob {
  return { meta: manifestMeta(id, m), shardBytes: m.shardBytes, placement: m.placement };
}

export function manifestOf(meta: Pick<BlobMeta, 'policy' | 'size' | 'checksum' | 'labels' | 'createdAtNs'>, placement: Buffer, shardBytes: number): EcManifest {
  return {
    placement, policy: meta.policy, size: meta.size, shardBytes, checksum: meta.checksum, labels: meta.labels, createdAtNs: meta.createdAtNs.toString(),
  };
}

export interface StoreManifestMessage {
  id?: { id?: Buffer };
  placement?: Buffer;
  shard_size?: number;
  meta?: Partial<BlobMetaMessage>;
}

/** A StoreManifest request as it arrived: checked (the checksum names the id, the key is 16 bytes). */
export function incomingManifest(msg: StoreManifestMessage, config: NodeConfig): { id: Buffer; manifest: EcManifest } {
  const m = incomingMeta(msg.id, msg.meta, config);
  const placement = placementOf(msg.placement);
  const shardBytes = Number(msg.shard_size ?? 0);
  if (!placement || !Number.isSafeInteger(shardBytes) || shardBytes < 1) throw invalidArgument('manifest without a placement key or shard size');
  return {
    id: m.id,
    manifest: { placement, policy: m.policy, size: m.size, shardBytes, checksum: m.checksum, labels: m.labels, createdAtNs: m.createdAtNs.toString() },
  };
}

/** The StoreManifest request that hands `manifest` to a peer. */
export function manifestMessage(id: Buffer, manifest: EcManifest): StoreManifestMessage {
  return {
    id: { id }, placement: manifest.placement, shard_size: manifest.shardBytes,
    meta: messageOfMeta({ size: manifest.size, checksum: manifest.checksum, createdAtNs: BigInt(manifest.createdAtNs), policy: manifest.policy, labels: manifest.labels }),
  };
}

/** Owners that keep the manifest of a blob of `policy`: the first m + 1 of its id (0: not an EC policy). */
export function manifestCopies(policy: number): number {
  const scheme = ecScheme(policy);
  return scheme ? scheme.m + 1 : 0;
}

/**
 * Writes the manifest on the first `copies` owners of the id (this node's own store when it is
 * one); resolves with how many hold it durably, and the failures. Owners in `hung` (they hung
 * during the store) count as failed without being asked: each would cost the call's deadline.
 */
export async function writeManifest(
  store: LocalStore, cluster: ClusterNode, transport: PeerTransport, id: Buffer, manifest: EcManifest, copies: number, timeoutMs: number, hung: ReadonlySet<string> = new Set(),
): Promise<{ held: number; failures: { node: string; err: Error }[] }> {
  const owners = cluster.ring.owners(id, copies);
  const message = manifestMessage(id, manifest);
  const failures: { node: string; err: Error }[] = [];
  let held = 0;
  await Promise.all(owners.map(async (node) => {
    try {
      if (node === cluster.nodeId) await store.ecManifests.put(id, manifest);
      else {
        const member = cluster.member(node);
        if (!member || member.grpcAddress === '' || !cluster.online(node)) throw new Error(`node ${node} is offline`);
        if (hung.has(node)) throw new Error(`node ${node} hung during the store`);
        await transport.call(member, 'StoreManifest', message, timeoutMs);
      }
      held++;
    } catch (err) {
      failures.push({ node, err: err as Error });
    }
  }));
  return { held, failures };
}
