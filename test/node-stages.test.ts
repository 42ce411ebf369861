/**
 * The set-once slots a node's builder hands to the parts made before what they need (src/node/):
 * the metrics before the engine, the listeners and the service before the cluster. Read early, a
 * slot answers as the node always has while starting: nothing, or 503 for the cluster.
 */
import { describe, expect, it } from 'vitest';
import { ClusterApi } from '../src/cluster/cluster-api.js';
import { clusterSlot } from '../src/cluster/cluster-slot.js';
import { BlobstoreError } from '../src/errors/errors.js';
import { LatePlacement } from '../src/service/late-placement.js';
import { type Placement, SINGLE_NODE } from '../src/service/placement.js';
import { AssertionError } from '../src/util/assert.js';
import { Late } from '../src/util/late.js';

function kindOf(fn: () => unknown): { kind: string; status: number; headers: Record<string, string> | undefined } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(BlobstoreError);
    const e = err as BlobstoreError;
    return { kind: e.kind, status: e.status, headers: e.headers };
  }
  throw new Error('expected a throw');
}

describe('a set-once slot', () => {
  it('peek answers undefined until set, then the part', () => {
    const slot = new Late<{ n: number }>('the part');
    expect(slot.peek()).toBeUndefined();
    const part = { n: 1 };
    slot.set(part);
    expect(slot.peek()).toBe(part);
    expect(slot.get()).toBe(part);
  });

  it('get before set throws the error the slot was made with', () => {
    const slot = new Late<number>('the part', () => new BlobstoreError('unavailable', 'not yet'));
    expect(() => slot.get()).toThrow('not yet');
  });

  it('get before set without such an error is a bug (an assertion)', () => {
    expect(() => new Late<number>('the part').get()).toThrow(AssertionError);
  });

  it('a second set is a bug', () => {
    const slot = new Late<number>('the part');
    slot.set(1);
    expect(() => slot.set(2)).toThrow(AssertionError);
    expect(slot.get()).toBe(1);
  });
});

describe('the cluster slot', () => {
  it('answers 503 with Retry-After 1 until the builder sets it', () => {
    const slot = clusterSlot();
    expect(kindOf(() => slot.get())).toEqual({ kind: 'unavailable', status: 503, headers: { 'Retry-After': '1' } });
  });
});

describe('ClusterApi before its cluster', () => {
  it('on a cluster node: 503 while the cluster starts, and no call counts as a peer', () => {
    const api = new ClusterApi(clusterSlot());
    expect(kindOf(() => api.state())).toEqual({ kind: 'unavailable', status: 503, headers: { 'Retry-After': '1' } });
    expect(kindOf(() => api.syncRing({ ring_version: 1 })).status).toBe(503);
    expect(api.fromPeer('a-secret-of-sixteen-chars')).toBe(false);
  });

  it('on a node alone: 501', () => {
    const api = new ClusterApi(undefined);
    expect(kindOf(() => api.state()).status).toBe(501);
    expect(api.fromPeer('a-secret-of-sixteen-chars')).toBe(false);
  });
});

describe('LatePlacement', () => {
  it('is STARTING until the cluster is made: not ready, local blobs only', async () => {
    const placement = new LatePlacement(new Late<Placement>('the cluster'));
    expect(placement.ready()).toBe(false);
    expect(placement.nodesAvailable()).toBe(1);
    expect(placement.replicates({} as never)).toBe(false);
    await expect(placement.find(Buffer.alloc(16))).resolves.toBeUndefined();
  });

  it('then every call goes to the cluster', () => {
    const slot = new Late<Placement>('the cluster');
    const placement = new LatePlacement(slot);
    slot.set({ ...SINGLE_NODE, ready: () => true, nodesAvailable: () => 5, replicates: () => true } satisfies Placement);
    expect(placement.ready()).toBe(true);
    expect(placement.nodesAvailable()).toBe(5);
    expect(placement.replicates({} as never)).toBe(true);
  });
});
