/**
 * Nodes started as users start them form exactly one cluster (docs/cluster.md, Bootstrap): real
 * node processes, all started at once, 3 to 7 of them, each with SeedNodes of a random shape (the
 * others; everyone in a random order; itself first; names of their own spelled `localhost`), with
 * HeartbeatInterval 1 s as in the spec's recipe. Seeded: BOOTSTRAP_SEED repeats a run,
 * BOOTSTRAP_RUNS sets how many (`bench/cluster/bootstrap.sh` runs 100 and records the times).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type NodeState, oneBigClusterAtATime, TestCluster } from '../helpers/cluster.js';
import { seededRandom } from '../helpers/rng.js';

oneBigClusterAtATime();

const SEED = Number(process.env.BOOTSTRAP_SEED ?? Date.now() % 1_000_000);
const RUNS = Number(process.env.BOOTSTRAP_RUNS ?? 4);
/** A fixed cluster size and seed shape, where set (the recipe: BOOTSTRAP_SIZE=3 BOOTSTRAP_SHAPE=others). */
const SIZE = process.env.BOOTSTRAP_SIZE === undefined ? undefined : Number(process.env.BOOTSTRAP_SIZE);
const SHAPE = process.env.BOOTSTRAP_SHAPE as Shape | undefined;
const HEARTBEAT_MS = 1000;
/** Generous for a loaded machine: the rule needs about one probe round after the last node is up. */
const FORM_WITHIN_MS = 20 * HEARTBEAT_MS;

type Shape = 'others' | 'everyone' | 'self-first' | 'localhost';

function shapeOf(random: () => number): Shape {
  return (['others', 'everyone', 'self-first', 'localhost'] as const)[Math.floor(random() * 4)]!;
}

function shuffled<T>(list: T[], random: () => number): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

let c: TestCluster | undefined;
afterEach(async () => {
  await c?.stopAll();
  c = undefined;
});

describe(`bootstrap from any seed list (BOOTSTRAP_SEED=${SEED})`, () => {
  for (let run = 0; run < RUNS; run++) {
    it(`run ${run}: nodes started together form one cluster of them all`, async () => {
      const random = seededRandom(SEED * 1000 + run);
      const size = SIZE ?? 3 + Math.floor(random() * 5);
      const shapes = Array.from({ length: size }, () => SHAPE ?? shapeOf(random));
      const keys = Array.from({ length: size }, () => random());
      const seeds = (i: number, cluster: TestCluster): string[] => {
        const others = cluster.ids.flatMap((_, j) => (j === i ? [] : [`127.0.0.1:${cluster.ports[j]}`]));
        const self = `127.0.0.1:${cluster.ports[i]}`;
        switch (shapes[i]!) {
          case 'others': return shuffled(others, () => keys[i]!);
          case 'everyone': return shuffled([...others, self], () => keys[i]!);
          case 'self-first': return [self, ...others];
          case 'localhost': return shuffled([...others, self].map((a) => a.replace('127.0.0.1', 'localhost')), () => keys[i]!);
        }
      };
      const what = `BOOTSTRAP_SEED=${SEED} run ${run}: ${size} nodes, seed shapes ${shapes.join(', ')}`;
      const started = Date.now();
      c = await TestCluster.start({ size, together: true, seeds, args: ['--heartbeat-interval-ms', String(HEARTBEAT_MS), '--offline-after-ms', '15000', '--metrics-addr', ''] });
      const listening = Date.now();
      let formed: NodeState;
      try {
        formed = await c.converged({ members: c.ids, timeoutMs: FORM_WITHIN_MS, states: Object.fromEntries(c.ids.map((id) => [id, 'active'])) });
      } catch (err) {
        throw new Error(`${what}: ${(err as Error).message}`);
      }
      const ms = Date.now() - listening;
      console.log(`${what}: one cluster ${ms} ms after every node listened (${listening - started} ms to start them), ring version ${formed.ring_version}`);
      expect(formed.nodes.map((n) => n.node_id).sort(), what).toStrictEqual([...c.ids].sort());
    });
  }
});
