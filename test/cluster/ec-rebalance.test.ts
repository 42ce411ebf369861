/**
 * One column per node again once the ring has a node for each (docs/erasure-coding.md, Handoff):
 * on six nodes started as users start them (SeedNodes = the others), EC42 blobs; a node killed
 * and removed at once; a read at five nodes has repair rebuild its column onto a node that holds
 * one already; a new node joins (SeedNodes = the five). Within a few handoff intervals every blob
 * has one column on each of six distinct nodes, so it reads back byte-exact with any two of
 * them frozen. A node that kept two columns of a blob lost two shards of every stripe with it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { patternBytes } from '../helpers/blobs.js';
import { expectReadableEverywhere, oneBigClusterAtATime, putWithNodesUp, TestCluster } from '../helpers/cluster.js';
import { internalStat } from '../helpers/columns.js';
import { waitFor } from '../helpers/wait.js';

oneBigClusterAtATime();

const MiB = 1024 * 1024;
const SHARDS = 6;
const ARGS = ['--handoff-interval-ms', '2000', '--ec-fetch-timeout-ms', '5000'];

/** Per blob: node index -> the column indices it holds, over `among`. */
async function placement(c: TestCluster, ids: string[], among: number[]): Promise<Map<string, Map<number, number[]>>> {
  const out = new Map<string, Map<number, number[]>>();
  for (const id of ids) {
    const held = new Map<number, number[]>();
    for (const i of among) {
      const indices = (await internalStat(c, i, id)).indices ?? [];
      if (indices.length > 0) held.set(i, indices);
    }
    out.set(id, held);
  }
  return out;
}

const describePlacement = (p: Map<string, Map<number, number[]>>): string =>
  [...p].map(([id, held]) => `${id.slice(0, 8)}: ${[...held].map(([i, cols]) => `n${i + 1}=[${cols.join(',')}]`).join(' ')}`).join('; ');

describe('a node that holds two columns of an EC42 blob hands one on once a sixth node joins', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stopAll();
  });

  it('after a removal, a repair at five nodes and a join, each blob has one column on each of six nodes and survives two frozen', async () => {
    const lost = 5;
    const newcomer = 6;
    // Six nodes name each other; the seventh, started later, names the five left.
    const seeds = (i: number, cl: TestCluster): string[] => {
      const peers = i === newcomer ? [0, 1, 2, 3, 4] : [0, 1, 2, 3, 4, 5].filter((j) => j !== i);
      return peers.map((j) => `${cl.host(j)}:${cl.ports[j]}`);
    };
    c = await TestCluster.start({ size: 7, startNow: 6, together: true, seeds, args: ARGS });
    await c.converged({ members: c.ids.slice(0, 6), timeoutMs: 60_000 });
    // A blob stored whole (1 MiB shards) and one streamed as it arrives (placed by a key of its own).
    const blobs = new Map<string, Buffer>();
    for (const [size, seed] of [[10 * MiB, 71], [20 * MiB + 5, 72]] as const) {
      const bytes = patternBytes(size, seed);
      const res = await putWithNodesUp(c, 0, bytes, { 'X-Blobstore-Policy': '4' });
      expect(res.status, await res.clone().text()).toBe(201);
      blobs.set(((await res.json()) as { id: string }).id, bytes);
    }
    const ids = [...blobs.keys()];

    await c.kill(lost);
    const leave = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', body: JSON.stringify({ node_id: c.ids[lost], graceful: false }) });
    expect(leave.status).toBe(200);
    const five = [0, 1, 2, 3, 4];
    await c.converged({ among: five, members: c.ids.slice(0, 5), timeoutMs: 40_000 });
    // A read finds the lost column missing; repair at five nodes puts it beside another one.
    await expectReadableEverywhere(c, blobs, [0]);
    let last = new Map<string, Map<number, number[]>>();
    await waitFor(async () => {
      last = await placement(c, ids, five);
      return [...last.values()].every((held) => new Set([...held.values()].flat()).size === SHARDS);
    }, { what: () => `every column rebuilt at five nodes: ${describePlacement(last)}`, timeoutMs: 120_000, pollMs: 500 });
    const doubled = new Map([...last].map(([id, held]) => [id, [...held].find(([, cols]) => cols.length > 1)![0]]));

    await c.startNode(newcomer);
    await c.ready(newcomer);
    const six = [...five, newcomer];
    await c.converged({ among: six, members: six.map((i) => c.ids[i]!), timeoutMs: 40_000 });
    await waitFor(async () => {
      last = await placement(c, ids, six);
      return [...last.values()].every((held) => held.size === SHARDS && [...held.values()].every((cols) => cols.length === 1)
        && new Set([...held.values()].flat()).size === SHARDS);
    }, { what: () => `one column of each blob on each of six nodes: ${describePlacement(last)}`, timeoutMs: 90_000, pollMs: 500 });

    // Two nodes out, one of them the node that held two columns of the first blob: every blob reads.
    const doubledFirst = doubled.get(ids[0]!)!;
    const frozen = [doubledFirst, five.find((i) => i !== doubledFirst && i !== 0)!];
    const reader = six.find((i) => !frozen.includes(i))!;
    for (const i of frozen) c.freeze(i);
    try {
      await c.converged({ among: six.filter((i) => !frozen.includes(i)), states: Object.fromEntries(frozen.map((i) => [c.ids[i]!, 'offline'])), timeoutMs: 30_000 });
      await expectReadableEverywhere(c, blobs, [reader]);
    } finally {
      for (const i of frozen) c.thaw(i);
    }
  }, 600_000);
});
