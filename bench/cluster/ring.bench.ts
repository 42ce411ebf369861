/**
 * The ring's figures (issue: the cluster): blob balance over 10 nodes (max / mean of blobs per
 * node, over 1M random ids, for one copy and for three), the share of ids whose owner changes
 * when an 11th node joins (ideal 1/11), and owner lookups per second. CPU only, no processes.
 */
import { randomBytes } from 'node:crypto';
import { Ring } from '../../src/cluster/ring.js';
import { emit, log, round } from '../node/lib.js';

const BENCH = 'cluster-ring';
const IDS = Number(process.env.BENCH_RING_IDS ?? 1_000_000);
const members = (n: number) => Array.from({ length: n }, (_, i) => ({ nodeId: `node-${i + 1}`, region: '' }));

const ids = Array.from({ length: IDS }, () => randomBytes(16));
const ten = new Ring(members(10), 128);
for (const copies of [1, 3]) {
  const count = new Map<string, number>();
  for (const id of ids) for (const n of ten.owners(id, copies)) count.set(n, (count.get(n) ?? 0) + 1);
  const values = [...count.values()];
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const maxMean = Math.max(...values) / mean;
  log(`${BENCH}: ${copies} cop${copies === 1 ? 'y' : 'ies'}: max/mean ${maxMean.toFixed(3)}, min/mean ${(Math.min(...values) / mean).toFixed(3)}`);
  emit({ bench: BENCH, metric: `balance_max_over_mean_${copies}_cop${copies === 1 ? 'y' : 'ies'}`, value: round(maxMean, 4), unit: 'ratio', nodes: 10, vnodes: 128, ids: IDS, target: '<= 1.10', pass: maxMean <= 1.1 });
}
const eleven = new Ring(members(11), 128);
let moved = 0;
for (const id of ids) if (ten.owners(id, 1)[0] !== eleven.owners(id, 1)[0]) moved++;
emit({ bench: BENCH, metric: 'moved_share_on_11th_join', value: round(moved / IDS, 4), unit: 'ratio', ideal: round(1 / 11, 4), ids: IDS });
log(`${BENCH}: an 11th node takes ${((100 * moved) / IDS).toFixed(2)}% of the ids (ideal ${(100 / 11).toFixed(2)}%)`);
const t0 = performance.now();
let sink = 0;
for (const id of ids) sink += ten.owners(id, 3).length;
const perSecond = (IDS / (performance.now() - t0)) * 1000;
emit({ bench: BENCH, metric: 'owner_lookups_per_second', value: round(perSecond, 0), unit: 'lookups/s', copies: 3, check: sink });
