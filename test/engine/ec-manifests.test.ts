/**
 * The manifests a node keeps for streamed EC blobs (src/index/ec-manifests.ts): durable across a
 * restart, listed in id order from any id, and a manifest offered again (handoff offers them after
 * every ring change) writes nothing; a different one for the same id replaces it. Whether a user's
 * delete holds against one (src/cluster/ec-manifest.ts) goes by when each was made.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { deleteHolds } from '../../src/cluster/deleted-here.js';
import type { Engine } from '../../src/engine/engine.js';
import type { EcManifest } from '../../src/index/ec-manifests.js';
import { openEngine, testConfig } from '../helpers/engine.js';

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

const idOf = (n: number): Buffer => Buffer.alloc(16, n);
const manifestOf = (n: number, placement = n): EcManifest => ({
  placement: Buffer.alloc(16, placement), policy: 4, size: 3 << 20, shardBytes: 1 << 20,
  checksum: Buffer.alloc(32, n), labels: Buffer.alloc(0), createdAtNs: String(1_700_000_000_000_000_000n + BigInt(n)),
});

describe('a node\'s EC manifests', () => {
  it('are kept across a restart and listed in id order from any id', async () => {
    engine = await openEngine(testConfig());
    for (const n of [7, 3, 9, 5]) expect(await engine.ecManifests.put(idOf(n), manifestOf(n))).toBe(true);
    const dataDir = engine.config.dataDir;
    await engine.close();
    engine = await openEngine(testConfig({ dataDir }));
    const listed = (start?: Buffer, limit = 10): string[] => {
      const ids: string[] = [];
      engine!.ecManifests.scan(start, (id, policy) => {
        expect(policy).toBe(4);
        ids.push(id.toString('hex').slice(0, 2));
        return ids.length < limit;
      });
      return ids;
    };
    expect(listed()).toEqual(['03', '05', '07', '09']);
    expect(listed(idOf(5))).toEqual(['05', '07', '09']);
    expect(listed(idOf(6), 1)).toEqual(['07']);
    expect(engine.ecManifests.get(idOf(9))!.placement.equals(Buffer.alloc(16, 9))).toBe(true);
  });

  it('offered again write nothing (put answers false); a different one for the id replaces it', async () => {
    engine = await openEngine(testConfig());
    expect(await engine.ecManifests.put(idOf(1), manifestOf(1))).toBe(true);
    expect(await engine.ecManifests.put(idOf(1), manifestOf(1))).toBe(false);
    expect(engine.ecManifests.count).toBe(1);
    expect(await engine.ecManifests.put(idOf(1), manifestOf(1, 2))).toBe(false);
    expect(engine.ecManifests.get(idOf(1))!.placement.equals(Buffer.alloc(16, 2))).toBe(true);
  });

  it('a user\'s delete holds against a manifest made before it, not one made after', () => {
    const deletedAtMs = 1_700_000_000_000;
    const store = { deletedAt: (id: Buffer): number | undefined => (id.equals(idOf(1)) ? deletedAtMs : undefined) };
    const at = (ms: number): Pick<EcManifest, 'createdAtNs'> => ({ createdAtNs: String(BigInt(ms) * 1_000_000n) });
    expect(deleteHolds(store, idOf(1), at(deletedAtMs - 1))).toBe(true);
    expect(deleteHolds(store, idOf(1), at(deletedAtMs))).toBe(true);
    expect(deleteHolds(store, idOf(1), at(deletedAtMs + 1))).toBe(false);
    expect(deleteHolds(store, idOf(2), at(deletedAtMs - 1))).toBe(false);
  });
});
