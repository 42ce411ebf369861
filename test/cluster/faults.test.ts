/**
 * Property-based fault sequences on real processes (the membership simulation's real-world twin):
 * a seeded random sequence of joins at different nodes at once, graceful and immediate leaves,
 * SIGKILL restarts and frozen nodes (SIGSTOP/SIGCONT) over 5-7 nodes, with REPLICA3 stores
 * throughout. After the last fault every running member must agree on the members and the ring
 * version within 3 heartbeat intervals of the moment all nodes run again, and every acknowledged
 * blob must read back byte-exact from every member. The seed is printed; FAULT_SEED reruns it.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { expectReadableEverywhere, HEARTBEAT_MS, oneBigClusterAtATime, TestCluster } from '../helpers/cluster.js';
import { seededRandom } from '../helpers/rng.js';

oneBigClusterAtATime();

async function leaveAt(url: string, nodeId: string, graceful: boolean): Promise<number> {
  const res = await fetch(`${url}/v1/cluster/leave`, { method: 'POST', body: JSON.stringify({ node_id: nodeId, graceful }), headers: { 'content-type': 'application/json' } });
  await res.arrayBuffer();
  return res.status;
}

const RUNS = Number(process.env.FAULT_RUNS ?? 2);
const STEPS = Number(process.env.FAULT_STEPS ?? 6);


describe('seeded fault sequences on 5-7 real nodes', () => {
  const clusters: TestCluster[] = [];
  afterAll(async () => {
    for (const c of clusters) await c.stopAll();
  });

  const base = Number(process.env.FAULT_SEED ?? Date.now() % 100_000);
  for (let run = 0; run < RUNS; run++) {
    const seed = base + run;
    it(`seed ${seed}: members agree within 3 heartbeat intervals and no acknowledged blob is lost`, async () => {
      const rand = seededRandom(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
      const size = 5 + Math.floor(rand() * 3);
      // The first three form the cluster; the others join during the run (several at once).
      const c = await TestCluster.start({ size: 3, args: ['--repair-interval-ms', '1000', '--handoff-interval-ms', '1000'] });
      clusters.push(c);
      const log: string[] = [`seed ${seed}: ${size} nodes`];
      const acked = new Map<string, Buffer>();
      const left = new Set<number>();
      const frozen = new Set<number>();
      let blobSeed = seed * 1000;
      const storeSome = async (): Promise<void> => {
        const members = c.live().filter((i) => !frozen.has(i) && !left.has(i));
        for (let k = 0; k < 5 && members.length > 0; k++) {
          const bytes = patternBytes(1000 + (blobSeed % 5000), blobSeed++);
          const res = await putRaw(c.url(pick(members)), bytes, { 'X-Blobstore-Policy': '3' }).catch(() => undefined);
          if (res?.status === 201 || res?.status === 200) acked.set(((await res.json()) as { id: string }).id, bytes);
        }
      };
      try {
        await c.converged();
        for (let step = 0; step < STEPS; step++) {
          await storeSome();
          const running = c.live().filter((i) => !frozen.has(i) && !left.has(i));
          const r = rand();
          if (r < 0.3 && c.ids.length < size) {
            // One or two new nodes at once, each through a different member.
            const joins = Math.min(size - c.ids.length, 1 + Math.floor(rand() * 2));
            const starts: Promise<unknown>[] = [];
            for (let j = 0; j < joins; j++) {
              const i = c.ids.length;
              c.ids.push(`node-${i + 1}`);
              c.ports.push((await import('../helpers/cluster.js').then((m) => m.freePort())));
              c.dataDirs.push((await import('../helpers/node-process.js')).tempDir('blobstore-cluster-'));
              const via = pick(running);
              log.push(`step ${step}: node-${i + 1} joins via ${c.ids[via]}`);
              starts.push(c.startNode(i, ['--seed-nodes', `127.0.0.1:${c.ports[via]}`]));
            }
            await Promise.all(starts);
          } else if (r < 0.45 && running.length > 3) {
            const victim = pick(running.filter((i) => i !== 0));
            const at = pick(running.filter((i) => i !== victim));
            const graceful = rand() < 0.5;
            log.push(`step ${step}: ${c.ids[victim]} leaves (graceful ${graceful}) at ${c.ids[at]}`);
            // A member learns of a node that joined elsewhere by gossip: until then its answer to
            // the leave is 404 (not a member here), and the node has not left.
            const status = await leaveAt(c.url(at), c.ids[victim]!, graceful);
            log.push(`  leave answered ${status}`);
            if (status === 200) left.add(victim);
            else expect(status, 'a leave answers 200, or 404 while the member has not heard of the node').toBe(404);
          } else if (r < 0.7) {
            const victim = pick(running);
            log.push(`step ${step}: SIGKILL and restart ${c.ids[victim]}`);
            await c.kill(victim);
            await c.startNode(victim);
          } else if (running.length > 2) {
            const victim = pick(running);
            log.push(`step ${step}: freeze ${c.ids[victim]} for a moment`);
            c.freeze(victim);
            frozen.add(victim);
            await new Promise((res) => setTimeout(res, 300 + rand() * 1500)); // time is the subject: a freeze of a seeded length
            c.thaw(victim);
            frozen.delete(victim);
          }
        }
        // The cluster settles: a graceful leave finishes its handoff, then members agree.
        const members = c.live().filter((i) => !left.has(i));
        await c.converged({ among: members, members: members.map((i) => c.ids[i]!), timeoutMs: 60_000 });
        // From here, a restart of one member: all agree within 3 heartbeat intervals of its start.
        const restarted = pick(members.filter((i) => i !== 0));
        await c.kill(restarted);
        await c.startNode(restarted);
        // The bound is 3 heartbeat intervals as the nodes run them: on a machine the rest of the
        // suite keeps busy every timer fires late, so the scheduling delay seen meanwhile is added.
        const delay = monitorEventLoopDelay({ resolution: 10 });
        delay.enable();
        const upAt = Date.now();
        await c.converged({ among: members, members: members.map((i) => c.ids[i]!), timeoutMs: 60_000, pollMs: 20 });
        delay.disable();
        const took = Date.now() - upAt;
        const late = delay.max / 1e6;
        const bound = 3 * HEARTBEAT_MS + 500 + 3 * late;
        log.push(`agreement ${took} ms after the last restart (bound ${Math.round(bound)} ms: timers up to ${Math.round(late)} ms late)`);
        expect(took, 'agreement within 3 heartbeat intervals of the last restart').toBeLessThanOrEqual(bound);
        await expectReadableEverywhere(c, acked, members);
        console.log(log.join('\n  '));
      } catch (err) {
        throw new Error(`${(err as Error).message}\n  ${log.join('\n  ')}\n  (rerun: FAULT_SEED=${seed} FAULT_RUNS=1)`);
      }
      expect(acked.size).toBeGreaterThan(0);
    }, 240_000);
  }
});
