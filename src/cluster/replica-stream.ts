/**
 * One large blob copied to one or more peers, read from the disk once. Each verified chunk is
 * copied once, with one memcpy into a buffer of a small ring, and written from there to every
 * peer's socket as the chunked body of its PUT /internal/v1/replicas/{id} (the data plane:
 * transport/http-put.ts). A ring buffer is reused once every peer has taken it (the kernel has the
 * bytes), so the chunks in flight per blob are bounded by the ring and nothing is allocated per
 * chunk on this side.
 *
 *   disk ─read + verify (once)─▶ ring[i] ─▶ peer A's socket ─┐ ring[i] free once
 *                                        └▶ peer B's socket ─┘ A and B took it
 *
 * The copy into the ring is what lets the read go on while the peers take the last chunks: the
 * engine reuses its chunk buffer once the sink returns.
 *
 * A peer whose put fails, or takes no chunk within the call timeout, drops out; the others go on.
 */
import type { BlobMeta } from '../blob/meta.js';
import type { LocalStore } from '../service/local-store.js';
import { type HttpPut, PeerPutError } from './transport/http-put.js';
import type { PeerRef, PeerTransport } from './transport/peer-transport.js';

/** A ring buffer and the puts that have not taken its bytes yet. */
interface Slot {
  buffer: Buffer;
  readonly waiting: Set<HttpPut>;
  freed: (() => void) | undefined;
}

export interface ReplicaStreamOptions {
  /** Chunks in flight (ring buffers of up to 1 MiB each). */
  chunksInFlight: number;
  /** A peer that takes no chunk for this long is dropped (its put cancelled). */
  callTimeoutMs: number;
}

/**
 * Streams `meta`'s blob to every peer in `targets` at once; per target, in order: undefined when
 * the peer holds the copy (its answer came after its durable commit), else the error.
 */
export async function streamReplica(
  store: LocalStore, transport: PeerTransport, targets: readonly PeerRef[], meta: BlobMeta, repair: boolean, options: ReplicaStreamOptions,
): Promise<(Error | undefined)[]> {
  const puts = targets.map((peer) => transport.replica(peer, meta, repair, options.callTimeoutMs));
  const live = (): HttpPut[] => puts.filter((p) => p.failure === undefined);
  const slots: Slot[] = [];
  let next = 0;
  const drop = (put: HttpPut, err: Error): void => {
    if (!put.failure) put.cancel(err);
    for (const slot of slots) release(slot, put);
  };
  // A put that fails on its own (a peer's early answer, a broken connection) frees its slots.
  for (const put of puts) void put.done.then(() => put.failure && drop(put, put.failure));
  try {
    await store.read(meta, async (chunk) => {
      if (live().length === 0) throw puts[0]!.failure!;
      const slot = await freeSlot(slots, next++ % options.chunksInFlight, options.callTimeoutMs, drop);
      if (slot.buffer.length < chunk.length) slot.buffer = Buffer.allocUnsafeSlow(chunk.length);
      // fill() with a source as long as the range: one native memcpy, also from the pool's shared memory.
      const bytes = slot.buffer.subarray(0, chunk.length);
      if (chunk.length > 0) bytes.fill(chunk);
      for (const put of live()) {
        slot.waiting.add(put);
        put.write(bytes, () => release(slot, put));
      }
    });
    for (const put of live()) put.end();
  } catch (err) {
    for (const put of live()) drop(put, err as Error);
  }
  await Promise.all(puts.map((p) => p.done));
  return puts.map((p) => p.failure);
}

/** Slot `i` once every put has taken its bytes (puts that take too long are dropped). */
async function freeSlot(slots: Slot[], i: number, timeoutMs: number, drop: (put: HttpPut, err: Error) => void): Promise<Slot> {
  const slot = (slots[i] ??= { buffer: Buffer.alloc(0), waiting: new Set(), freed: undefined });
  if (slot.waiting.size === 0) return slot;
  const timer = setTimeout(() => {
    for (const put of [...slot.waiting]) drop(put, new PeerPutError(`${put.peer.nodeId}: no chunk taken within ${timeoutMs} ms`));
  }, timeoutMs);
  await new Promise<void>((resolve) => (slot.freed = resolve));
  clearTimeout(timer);
  return slot;
}

function release(slot: Slot, put: HttpPut): void {
  if (!slot.waiting.delete(put) || slot.waiting.size > 0) return;
  const freed = slot.freed;
  slot.freed = undefined;
  freed?.();
}
