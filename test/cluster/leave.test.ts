/**
 * Graceful leave under load, with real processes: the leaving node shows `leaving` with its
 * migration's progress, hands every blob it holds to the new owners while clients keep storing,
 * then leaves the ring and the state lists. Afterwards every acknowledged blob reads back
 * byte-exact from every remaining node and has its copies on the remaining nodes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { copiesOf, expectReadableEverywhere, TestCluster } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait.js';

describe('graceful leave of one of four nodes, under load', () => {
  let c: TestCluster;
  const acked = new Map<string, { bytes: Buffer; policy: number }>();
  beforeAll(async () => {
    c = await TestCluster.start({ size: 4, args: ['--handoff-interval-ms', '500', '--repair-interval-ms', '2000'] });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  async function store(at: number, seed: number, size: number, policy: number): Promise<void> {
    const bytes = patternBytes(size, seed);
    const res = await putRaw(c.url(at), bytes, { 'X-Blobstore-Policy': String(policy) });
    if (res.status !== 200 && res.status !== 201) return;
    acked.set(((await res.json()) as { id: string }).id, { bytes, policy });
  }

  it('hands every blob over, shows its progress while it runs, then leaves the ring', async () => {
    // Enough data that the handoff takes a moment: small blobs and some of several MiB.
    for (let i = 0; i < 240; i++) await store(i % 4, 10_000 + i, i % 40 === 0 ? 3 * 1024 * 1024 : 2048 + i, [1, 2, 3][i % 3]!);
    const leaving = 3;
    const held = [...(await copiesOf(c, [leaving]))].length;
    expect(held).toBeGreaterThan(20);

    let writing = true;
    let seed = 50_000;
    const writer = (async () => {
      while (writing) await store(seed % 3, seed++, 1024 + (seed % 4096), 2);
    })();

    const res = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"node_id":"node-4","graceful":true}' });
    expect(await res.json()).toEqual({ acknowledged: true });
    // It shows as leaving (with its progress while the handoff runs), then disappears.
    let sawLeaving = false;
    let sawProgress = false;
    await waitFor(async () => {
      const state = await c.state(0);
      const n = state.nodes.find((x) => x.node_id === 'node-4') as { state: string; migration?: { blobs_left: number } } | undefined;
      if (n?.state === 'leaving') sawLeaving = true;
      if (n?.migration && n.migration.blobs_left > 0) sawProgress = true;
      return n === undefined;
    }, { what: 'node-4 gone from the state list', timeoutMs: 60_000 });
    writing = false;
    await writer;
    expect(sawLeaving).toBe(true);
    expect(c.node(leaving).output()).toMatch(/handoff: handing copies/);
    if (!sawProgress) expect(c.node(leaving).output()).toMatch(/handoff: pass done/);
    await c.converged({ among: [0, 1, 2], members: ['node-1', 'node-2', 'node-3'] });
    // Anti-entropy ran through the leave: a peer that keeps no tree for a node (the leaving one)
    // answers no digests, which is no cause for an error.
    for (let i = 0; i < 4; i++) expect(c.node(i).output()).not.toMatch(/anti-entropy.*(TypeError|Cannot read)|(TypeError|Cannot read).*anti-entropy/);
  });

  it('every acknowledged blob reads back from every remaining node and has its copies there', async () => {
    const remaining = [0, 1, 2];
    await expectReadableEverywhere(c, new Map([...acked].map(([id, b]) => [id, b.bytes])), remaining);
    await waitFor(async () => {
      const holders = await copiesOf(c, remaining);
      return [...acked].every(([id, b]) => (holders.get(id)?.length ?? 0) >= Math.min(b.policy, 3));
    }, { what: 'every blob with its copies on the remaining nodes', timeoutMs: 30_000 });
  });
});
