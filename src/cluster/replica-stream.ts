/**
 * One large blob copied to one or more peers, read from the disk once. Each verified chunk is
 * copied once, with one memcpy into a buffer of a small ring, encoded there as a ReplicateChunk,
 * and written to every peer: the data part of it straight to a peer's socket when the peer takes
 * replicas on its API listener (http-replica.ts), the whole message to its ReplicateStream call
 * otherwise. A ring buffer is reused once every peer has taken it (the kernel has the bytes, or
 * grpc-js has framed them), so the chunks in flight per blob are bounded by the ring and nothing
 * is allocated per chunk on this side.
 *
 *   disk ─read + verify (once)─▶ ring[i] ─data─────▶ peer A's socket (PUT /internal/v1/replicas) ─┐ ring[i] free once
 *                                        └message─▶ peer B's ReplicateStream call ───────────────┘ A and B took it
 *
 * Before this, each peer read and verified the blob on its own, and each chunk was copied out of
 * the pooled buffer (a SharedArrayBuffer: V8 copies those ~7x slower than plain memory), then
 * encoded by protobufjs into a fresh buffer: four 1 MiB allocations and copies per chunk for two
 * peers, whose garbage collection took as much CPU as the copies (perf, 1 GiB to two peers).
 *
 * A peer whose call fails, or takes no chunk within the call timeout, drops out; the others go on.
 */
import type * as grpc from '@grpc/grpc-js';
import type { BlobMeta } from '../blob/meta.js';
import type { LocalStore } from '../service/local-store.js';
import { metaMessage } from '../service/meta.js';
import { HttpReplicaLeg, replicaHead } from './http-replica.js';
import { encodeInternalRequest, PeerCallError, type PeerClients } from './peers.js';

export interface PeerAddress {
  readonly nodeId: string;
  readonly grpcAddress: string;
  /** The peer's API listener (host:port): large replicas go there when it is known. */
  readonly address?: string;
}

/** ReplicateChunk field 3 (data), wire type 2 (length-delimited). */
const DATA_TAG = 0x1a;
/** ReplicateChunk {final: true}: field 4, varint 1. */
const FINAL = Buffer.from([0x20, 0x01]);
const VARINT_MAX_BYTES = 10;

/** One peer's way in: an HTTP PUT or a ReplicateStream call. */
interface Leg {
  readonly peer: { readonly nodeId: string };
  readonly failure: Error | undefined;
  readonly done: Promise<void>;
  /** Writes one encoded chunk (its data from `dataAt`); `taken` once the buffer may be reused. */
  write(message: Buffer, dataAt: number, taken: () => void): void;
  /** After the last chunk. */
  finish(): void;
  cancel(err: Error): void;
}

/** A ring buffer and the legs that have not framed its message yet. */
interface Slot {
  buffer: Buffer;
  readonly waiting: Set<Leg>;
  freed: (() => void) | undefined;
}

export interface ReplicaStreamOptions {
  /** Encoded chunks in flight (ring buffers of ~1 MiB each). */
  chunksInFlight: number;
  /** A peer that takes no chunk for this long is dropped (its call cancelled). */
  callTimeoutMs: number;
  /** Over the peers' API listeners where their address is known (else, or false: gRPC). */
  http: boolean;
}

/**
 * Streams `meta`'s blob to every peer in `targets` at once; per target, in order: undefined when
 * the peer holds the copy (its answer came after its durable commit), else the error.
 */
export async function streamReplica(
  store: LocalStore, peers: PeerClients, targets: readonly PeerAddress[], meta: BlobMeta, repair: boolean, options: ReplicaStreamOptions,
): Promise<(Error | undefined)[]> {
  const legs: Leg[] = targets.map((peer) => {
    if (!options.http || !peer.address) return grpcLeg(peers, peer, repair);
    const target = { nodeId: peer.nodeId, address: peer.address };
    return httpLeg(new HttpReplicaLeg(target, replicaHead(target, meta, repair, peers.link.secret), options.callTimeoutMs, peers.link));
  });
  const live = (): Leg[] => legs.filter((l) => l.failure === undefined);
  const slots: Slot[] = [];
  let next = 0;
  let head: Buffer | undefined = encodeInternalRequest('ReplicateStream', { id: { id: meta.id }, meta: metaMessage(meta) });
  const drop = (leg: Leg, err: Error): void => {
    if (!leg.failure) leg.cancel(err);
    for (const slot of slots) release(slot, leg);
  };
  // A leg that fails on its own (a peer's early answer, a broken connection) frees its slots.
  for (const leg of legs) void leg.done.then(() => leg.failure && drop(leg, leg.failure));
  try {
    await store.read(meta, async (chunk) => {
      if (live().length === 0) throw legs[0]!.failure!;
      const slot = await freeSlot(slots, next++ % options.chunksInFlight, options.callTimeoutMs, drop);
      const message = encodeChunk(slot, head, chunk);
      const dataAt = message.length - chunk.length;
      head = undefined;
      for (const leg of live()) {
        slot.waiting.add(leg);
        leg.write(message, dataAt, () => release(slot, leg));
      }
    });
    for (const leg of live()) leg.finish();
  } catch (err) {
    for (const leg of live()) drop(leg, err as Error);
  }
  await Promise.all(legs.map((l) => l.done));
  return legs.map((l) => l.failure);
}

function grpcLeg(peers: PeerClients, peer: PeerAddress, repair: boolean): Leg {
  const stub = peers.get(peer.nodeId, peer.grpcAddress).internal;
  const md = peers.metadata();
  if (repair) md.set('x-blobstore-repair', '1');
  let settle!: () => void;
  const done = new Promise<void>((resolve) => (settle = resolve));
  let failure: Error | undefined;
  const call = stub.ReplicateStream!(md, (err: grpc.ServiceError | null) => {
    if (err) failure ??= new PeerCallError(peer.nodeId, 'ReplicateStream', err.code, err.details);
    settle();
  }) as unknown as grpc.ClientWritableStream<Buffer>;
  return {
    peer,
    get failure() {
      return failure;
    },
    done,
    write: (message, _dataAt, taken) => void call.write(message, () => taken()),
    finish: () => {
      call.write(FINAL);
      call.end();
    },
    cancel: (err) => {
      failure ??= err;
      call.cancel();
    },
  };
}

function httpLeg(put: HttpReplicaLeg): Leg {
  return {
    peer: put.peer,
    get failure() {
      return put.failure;
    },
    done: put.done,
    write: (message, dataAt, taken) => put.write(message.subarray(dataAt), taken),
    finish: () => put.end(),
    cancel: (err) => put.cancel(err),
  };
}

/** Slot `i` once every leg has framed its last message (legs that take too long are dropped). */
async function freeSlot(slots: Slot[], i: number, timeoutMs: number, drop: (leg: Leg, err: Error) => void): Promise<Slot> {
  const slot = (slots[i] ??= { buffer: Buffer.alloc(0), waiting: new Set(), freed: undefined });
  if (slot.waiting.size === 0) return slot;
  const timer = setTimeout(() => {
    for (const leg of [...slot.waiting]) drop(leg, new PeerCallError(leg.peer.nodeId, 'ReplicateStream', 4, `no chunk taken within ${timeoutMs} ms`));
  }, timeoutMs);
  await new Promise<void>((resolve) => (slot.freed = resolve));
  clearTimeout(timer);
  return slot;
}

function release(slot: Slot, leg: Leg): void {
  if (!slot.waiting.delete(leg) || slot.waiting.size > 0) return;
  const freed = slot.freed;
  slot.freed = undefined;
  freed?.();
}

/**
 * ReplicateChunk {id, meta (first chunk only), data} into the slot's buffer: the head fields as
 * protobufjs encodes them, then the data field by hand (fields may come in any order). fill()
 * with a source as long as the range is one native memcpy, also from the pool's shared memory.
 */
function encodeChunk(slot: Slot, head: Buffer | undefined, data: Buffer): Buffer {
  const headBytes = head?.length ?? 0;
  const size = headBytes + 1 + VARINT_MAX_BYTES + data.length;
  if (slot.buffer.length < size) slot.buffer = Buffer.allocUnsafeSlow(size);
  const out = slot.buffer;
  let at = 0;
  if (head) at += head.copy(out, 0);
  out[at++] = DATA_TAG;
  for (let v = data.length; ; v = Math.floor(v / 128)) {
    if (v < 0x80) {
      out[at++] = v;
      break;
    }
    out[at++] = (v & 0x7f) | 0x80;
  }
  if (data.length > 0) out.fill(data, at, at + data.length);
  return out.subarray(0, at + data.length);
}
