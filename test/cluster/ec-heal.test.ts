/**
 * Erasure-coded blobs that heal, on real clusters: the receiving node killed right after its
 * answers; a node that missed writes while it was down, and one that lost its disk, get their
 * columns rebuilt; a flipped byte in a column on disk is read around, found by the scrubber
 * (errors_total{type="corruption"} moves) and rebuilt; a node that leaves hands its columns over.
 * Every scenario ends with every acknowledged blob read back byte-exact from every node.
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flipByte, patternBytes } from '../helpers/blobs.js';
import { expectReadableEverywhere, oneBigClusterAtATime, putWithNodesUp, TestCluster } from '../helpers/cluster.js';
import { waitFor } from '../helpers/wait.js';
import { blake3 } from '../../src/hash/blake3.js';
import { columnBytes, columnFiles, columnHeaders, columnHolders, dropColumn, expectColumnChecksums, internalStat, listed } from '../helpers/columns.js';

oneBigClusterAtATime();

const KiB = 1024;
const ARGS = [
  '--ec-shard-bytes', String(64 * KiB), '--small-blob-max-bytes', String(128 * KiB), '--metrics-addr', 'same',
  '--repair-interval-ms', '1000', '--handoff-interval-ms', '1000', '--replication-retry-max-ms', '1000',
  // Killed nodes fail a fetch at once; the fetch timeout only rules out a node slow under load.
  '--ec-fetch-timeout-ms', '5000',
  '--scrub-interval-ms', '1000', '--scrub-bytes-per-second', String(256 * 1024 * KiB),
];

const CORRUPTION = 'blobstore_errors_total\\{type="corruption",node="[^"]*"\\}';

/** Stores `bytes` at node `at` (past a 412 while a node's heartbeats lag: putWithNodesUp). */
async function store(c: TestCluster, at: number, bytes: Buffer, acked: Map<string, Buffer>): Promise<string> {
  const res = await putWithNodesUp(c, at, bytes, { 'X-Blobstore-Policy': '4' });
  expect(res.status, await res.clone().text()).toBeOneOf([200, 201]);
  const { id } = (await res.json()) as { id: string };
  acked.set(id, bytes);
  return id;
}

/** Node `leaving` leaves gracefully (asked through node 0) and is gone from the state within `timeoutMs`; then it is stopped. */
async function leaveGracefully(c: TestCluster, leaving: number, timeoutMs: number): Promise<void> {
  const res = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ node_id: c.ids[leaving], graceful: true }) });
  expect(await res.json()).toEqual({ acknowledged: true });
  await waitFor(async () => (await c.state(0)).nodes.every((n) => n.node_id !== c.ids[leaving]), { what: 'the node left', timeoutMs }).catch((err: Error) => {
    throw new Error(`${err.message}\n${c.node(leaving).output().split('\n').filter((l) => /handoff|EC/.test(l)).slice(-20).join('\n')}`);
  });
  await c.stop(leaving);
}

async function metric(c: TestCluster, i: number, name: string): Promise<number> {
  const text = await (await fetch(`${c.url(i)}/metrics`)).text();
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

describe('EC42 that heals, on a 7-node cluster', () => {
  let c: TestCluster;
  const acked = new Map<string, Buffer>();
  beforeAll(async () => {
    c = await TestCluster.start({ size: 7, args: ARGS, together: true });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('every blob stays readable from every survivor when the receiving node is killed right after its answers', { timeout: 180_000 }, async () => {
    for (let i = 0; i < 12; i++) await store(c, 0, patternBytes(i % 3 === 0 ? 700 * KiB + i : 3000 + i, 700 + i), acked);
    await c.kill(0);
    await expectReadableEverywhere(c, acked);
    await c.startNode(0);
    await c.converged({ members: c.ids });
  });

  it('a node that was down while blobs were stored gets its columns rebuilt when it is back', { timeout: 180_000 }, async () => {
    const down = 3;
    await c.kill(down);
    // Wait until the others see it offline: with 6 of 7 up, EC42 stores go on.
    await waitFor(async () => (await c.state(1)).nodes.find((n) => n.node_id === c.ids[down])?.state === 'offline', { what: 'node seen offline' });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await store(c, i % 3, patternBytes(i % 4 === 0 ? 600 * KiB : 2000 + i, 3300 + i), acked));
    await c.startNode(down);
    await c.converged({ members: c.ids });
    // Every blob it is an owner of comes back to it (the others' repair queues rebuild its columns).
    const shouldHold = async (): Promise<string[]> => {
      const owners = await Promise.all(ids.map(async (id) => ({ id, held: (await listed(c, down)).has(id) })));
      return owners.filter((o) => !o.held).map((o) => o.id);
    };
    const missingBefore = await shouldHold();
    expect(missingBefore.length).toBeGreaterThan(0);
    await waitFor(async () => {
      // Owners of a blob are 6 of the 7 nodes: the blobs it should hold are those listed by 6 nodes with it among them.
      const counts = await Promise.all(ids.map(async (id) => {
        const lists = await Promise.all(c.live().map((i) => listed(c, i)));
        return lists.filter((l) => l.has(id)).length;
      }));
      return counts.every((n) => n === 6);
    }, { what: 'every blob stored while the node was down has its six columns again', timeoutMs: 30_000 });
    await expectReadableEverywhere(c, acked);
  });

  it('a node that lost its disk gets its columns back (anti-entropy finds them missing)', { timeout: 180_000 }, async () => {
    const lost = 5;
    const before = await listed(c, lost);
    expect(before.size).toBeGreaterThan(0);
    await c.kill(lost);
    rmSync(c.dataDirs[lost]!, { recursive: true, force: true });
    await c.startNode(lost);
    await c.ready(lost); // admitted again: until then it answers 503, as a load balancer sees
    // No read touches the blobs first: anti-entropy alone finds what the node lacks.
    await waitFor(async () => {
      const now = await listed(c, lost);
      return [...before].every((id) => now.has(id));
    }, { what: `node ${c.ids[lost]} holds again a column of every blob it held`, timeoutMs: 40_000 });
    await expectReadableEverywhere(c, acked, [lost]);
  });

  it('a flipped byte in a column on disk: reads stay correct, the scrubber finds it, counts it and rebuilds the column', { timeout: 180_000 }, async () => {
    const node = 2;
    const files = columnFiles(c, node).filter((f) => statSync(f).size > 100 * KiB);
    expect(files.length).toBeGreaterThan(0);
    const corruptBefore = await metric(c, node, CORRUPTION);
    flipByte(files[0]!, 1000);
    await expectReadableEverywhere(c, acked, [node, 4]);
    await waitFor(async () => (await metric(c, node, CORRUPTION)) > corruptBefore, { what: 'the corruption counted' });
    await waitFor(() => c.node(node).output().includes('EC repair: column rebuilt'), { what: 'the column rebuilt', timeoutMs: 30_000 });
    // Scrubbed again, a whole pass after the rebuild: nothing corrupt is left on the node.
    const after = await metric(c, node, CORRUPTION);
    const passes = async (): Promise<number> => ((await (await fetch(`${c.url(node)}/v1/cluster/state`)).json()) as { repair: { scrub: { passes: number } } }).repair.scrub.passes;
    const passesAfter = await passes();
    await waitFor(async () => (await passes()) >= passesAfter + 2, { what: 'two more scrub passes', timeoutMs: 60_000 });
    expect(await metric(c, node, CORRUPTION)).toBe(after);
    await expectReadableEverywhere(c, acked);
  });

  it('repair shows its progress, and an admin call changes its bandwidth cap for a while (the priority knob)', { timeout: 180_000 }, async () => {
    const coordinator = 1;
    const knob = (body: object): Promise<Response> =>
      fetch(`${c.url(coordinator)}/v1/cluster/repair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await knob({ bytes_per_second: -1, seconds: 10 })).status).toBe(400);
    expect((await knob({ bytes_per_second: 1000 })).status).toBe(400);
    // Slow repair right down, so its queue can be watched.
    const slow = (await (await knob({ bytes_per_second: 64 * KiB, seconds: 300 })).json()) as { rate_limit_bytes_per_second: number; boosted_until_ms: number };
    expect(slow.rate_limit_bytes_per_second).toBe(64 * KiB);
    expect(slow.boosted_until_ms).toBeGreaterThan(Date.now());
    const down = 4;
    await c.kill(down);
    await waitFor(async () => (await c.state(coordinator)).nodes.find((n) => n.node_id === c.ids[down])?.state === 'offline', { what: 'node seen offline' });
    for (let i = 0; i < 6; i++) await store(c, coordinator, patternBytes(600 * KiB + i, 5100 + i), acked);
    await c.startNode(down);
    type Repair = { queue_depth: number; bytes_left: number; eta_seconds: number; rate_limit_bytes_per_second: number };
    const repairOf = async (): Promise<Repair> => ((await c.state(coordinator)) as unknown as { repair: Repair }).repair;
    const seen = await repairOf();
    expect(seen.queue_depth).toBeGreaterThan(0);
    expect(seen.bytes_left).toBeGreaterThan(0);
    expect(seen.eta_seconds).toBeGreaterThan(0);
    expect(await metric(c, coordinator, 'blobstore_repair_queue_depth')).toBe(seen.queue_depth);
    expect(await metric(c, coordinator, 'blobstore_repair_rate_limit_bytes_per_second')).toBe(64 * KiB);
    // Raised (no cap) for a minute: the queue drains.
    expect((await (await knob({ bytes_per_second: 0, seconds: 60 })).json()) as Repair).toMatchObject({ rate_limit_bytes_per_second: 0 });
    await waitFor(async () => (await repairOf()).queue_depth === 0, { what: 'the repair queue drained', timeoutMs: 40_000 });
    expect(await metric(c, coordinator, 'blobstore_repair_bytes_total')).toBeGreaterThan(0);
    // A short boost falls back to the setting (256 MiB/s by default) when its time is up.
    await knob({ bytes_per_second: 1, seconds: 1 });
    await waitFor(async () => (await repairOf()).rate_limit_bytes_per_second === 256 * 1024 * KiB, { what: 'back to the setting' });
    await expectReadableEverywhere(c, acked);
  });

  it('a column of many cell rows is rebuilt byte-exact, its sources read in windows a low cap allows', { timeout: 180_000 }, async () => {
    const coordinator = 2;
    const down = 5;
    // 4 MiB/s on every node (any holder that finds the column missing may rebuild it): each window
    // reads one 1 MiB row of each of the k = 4 sources, then waits for the cap.
    const knob = async (body: object): Promise<void> => {
      for (const i of c.live()) {
        const res = await fetch(`${c.url(i)}/v1/cluster/repair`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(res.status).toBe(200);
      }
    };
    await c.kill(down);
    await knob({ bytes_per_second: 4 * 1024 * KiB, seconds: 300 });
    await waitFor(async () => (await c.state(coordinator)).nodes.find((n) => n.node_id === c.ids[down])?.state === 'offline', { what: 'node seen offline' });
    // 10 MiB + 3 bytes: columns of three rows (1 MiB, 1 MiB, the rest). A blob whose owners include
    // the node down (6 of the 7 nodes are a blob's owners): five columns stored, one to rebuild.
    const holders = async (blob: string): Promise<number> => (await Promise.all(c.live().map((i) => listed(c, i)))).filter((l) => l.has(blob)).length;
    let bytes: Buffer = Buffer.alloc(0);
    let id = '';
    for (let seed = 5300; id === '' || (await holders(id)) !== 5; seed++) {
      expect(seed).toBeLessThan(5320);
      bytes = patternBytes(10 * 1024 * KiB + 3, seed);
      id = await store(c, coordinator, bytes, acked);
    }
    await c.startNode(down);
    await waitFor(async () => (await listed(c, down)).has(id), { what: 'the node back holds its column again', timeoutMs: 60_000 });
    await knob({ bytes_per_second: 1, seconds: 1 });
    // The rebuilt column serves: with two other holders down, a read takes it among its four.
    const others = [];
    for (const i of c.live()) if (i !== down && i !== coordinator && (await listed(c, i)).has(id)) others.push(i);
    expect(others.length).toBeGreaterThanOrEqual(2);
    const stopped = others.slice(0, 2);
    for (const i of stopped) await c.kill(i);
    try {
      for (const at of [coordinator, down]) {
        const res = await fetch(`${c.url(at)}/v1/blobs/${id}`);
        expect(res.status).toBe(200);
        expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      }
    } finally {
      for (const i of stopped) await c.startNode(i);
      await c.converged({ members: c.ids });
    }
  });

  it('a column wrong though it matches its own checksum: reads go around it, repair does not rebuild from it, and it is dropped and rebuilt with the bytes its store wrote', { timeout: 180_000 }, async () => {
    const coordinator = 1;
    const down = 4;
    await c.kill(down);
    await waitFor(async () => (await c.state(coordinator)).nodes.find((n) => n.node_id === c.ids[down])?.state === 'offline', { what: 'node seen offline' });
    // A blob whose owners include the node down: five columns stored, one queued for repair.
    let bytes: Buffer = Buffer.alloc(0);
    let id = '';
    let held = new Map<number, number>();
    for (let seed = 5400; id === '' || held.size !== 5; seed++) {
      expect(seed).toBeLessThan(5420);
      bytes = patternBytes(200 * KiB + 7, seed);
      id = await store(c, coordinator, bytes, acked);
      held = await columnHolders(c, id);
    }
    const missing = [0, 1, 2, 3, 4, 5].find((i) => !held.has(i))!;
    // Repair reads the first k columns it finds (data first): the lowest held one is a source.
    const source = Math.min(...held.keys());
    const holder = held.get(source)!;
    const original = await columnBytes(c, holder, id, source);
    const stat = await internalStat(c, holder, id);
    // Every column keeps every column's checksum, each that of the column's bytes.
    for (const [index, at] of held) {
      expect((await internalStat(c, at, id)).column_checksums, `column ${index}`).toBe(stat.column_checksums);
      expect(stat.column_checksums.slice(index * 64, index * 64 + 64)).toBe(blake3(await columnBytes(c, at, id, index)).toString('hex'));
    }
    // The source swapped for other bytes with their own checksum, kept with column checksums that
    // agree with them (the others' but for its own entry): it reads as whole, and is wrong; the
    // others' checksums, which more holders name, say so.
    const wrong = Buffer.from(original);
    wrong[100] ^= 0xff;
    const forged = Buffer.from(stat.column_checksums, 'hex');
    blake3(wrong).copy(forged, source * 32);
    await dropColumn(c, holder, id, source);
    const planted = await fetch(`${c.url(holder)}/internal/v1/shards/${id}/${source}`, {
      method: 'PUT', headers: { ...columnHeaders(stat, 64 * KiB, wrong.length), 'x-blobstore-column-checksums': '6' }, body: Buffer.concat([wrong, blake3(wrong), forged]),
    });
    expect(planted.status, await planted.clone().text()).toBe(200);
    // A read from a node that holds a right column goes around the wrong one: byte-exact (four right columns are left).
    const reader = [...held].find(([index, at]) => index !== source && at !== holder)![1];
    const read = await fetch(`${c.url(reader)}/v1/blobs/${id}`);
    expect(read.status).toBe(200);
    expect(Buffer.from(await read.arrayBuffer()).equals(bytes)).toBe(true);
    expect(c.node(reader).output()).toContain('EC read: a column is not the one its store wrote');
    await c.startNode(down);
    // Repair rebuilds the missing column from the right ones, and has the wrong one dropped and rebuilt.
    const entry = (index: number): string => stat.column_checksums.slice(index * 64, index * 64 + 64);
    const right = async (index: number): Promise<boolean> => {
      const at = (await columnHolders(c, id)).get(index);
      return at !== undefined && blake3(await columnBytes(c, at, id, index)).toString('hex') === entry(index);
    };
    await waitFor(async () => (await right(missing)) && (await right(source)), { what: `columns ${missing} and ${source} held with the bytes their store wrote`, timeoutMs: 60_000 });
    expect(c.live().some((i) => c.node(i).output().includes('its holder dropped it, and it is rebuilt'))).toBe(true);
    expect(await expectColumnChecksums(c, id, 6)).toBe(stat.column_checksums);
    await c.converged({ members: c.ids });
    await expectReadableEverywhere(c, new Map([[id, bytes]]));
  });

  it('a node that leaves hands its columns to the owners: afterwards each column is on one of the others', { timeout: 120_000 }, async () => {
    const leaving = 6;
    await leaveGracefully(c, leaving, 60_000);
    const among = [0, 1, 2, 3, 4, 5];
    await c.converged({ among, members: c.ids.slice(0, 6) });
    // Six nodes left: every blob has a column on each.
    await waitFor(async () => {
      const lists = await Promise.all(among.map((i) => listed(c, i)));
      return [...acked.keys()].every((id) => lists.every((l) => l.has(id)));
    }, { what: 'every blob with a column on each of the six nodes', timeoutMs: 40_000 });
    // Every column of every blob is held by one of them (the node-to-node column route, open without a secret).
    for (const id of acked.keys()) {
      for (let index = 0; index < 6; index++) {
        const held = await Promise.all(among.map(async (i) => (await fetch(`${c.url(i)}/internal/v1/shards/${id}/${index}`, { method: 'HEAD' })).status === 200));
        expect(held.filter(Boolean).length, `column ${index} of ${id}`).toBe(1);
      }
    }
    await expectReadableEverywhere(c, acked, [1]);
  });
});

describe('EC42 reads that check the columns they take, on a 6-node cluster without a scrubber', () => {
  let c: TestCluster;
  beforeAll(async () => {
    // Six nodes for EC42: one seen offline (a heartbeat late on a busy machine) would refuse the store.
    const noScrub = ARGS.map((a, i) => (ARGS[i - 1] === '--scrub-bytes-per-second' ? '0' : a));
    c = await TestCluster.start({ size: 6, args: [...noScrub, '--offline-after-ms', '10000'], together: true });
    await c.converged({ members: c.ids });
  });
  afterAll(async () => {
    await c?.stopAll();
  });

  it('a flipped byte in a data column on disk: a read from a node without it is byte-exact, and the holder drops the column, which is rebuilt', { timeout: 180_000 }, async () => {
    const bytes = patternBytes(700 * KiB + 3, 4242);
    const acked = new Map<string, Buffer>();
    const id = await store(c, 0, bytes, acked);
    // Data column 1's file (three stripes of 64 KiB shards: 175 KiB, kept in a file) and its holder.
    const file = (i: number): string => join(c.dataDirs[i]!, 'shards', id.slice(0, 2), `${id}.1`);
    const holder = [...c.ids.keys()].find((i) => existsSync(file(i)));
    expect(holder, 'a node holds data column 1 in a file').toBeDefined();
    const reader = [...c.ids.keys()].find((i) => i !== holder && !readdirSync(join(c.dataDirs[i]!, 'shards')).some((d) => existsSync(join(c.dataDirs[i]!, 'shards', d, `${id}.1`))))!;
    const corruptBefore = await metric(c, holder!, CORRUPTION);
    flipByte(file(holder!), 70 * KiB); // column 1, stripe 1
    // Every read is byte-exact. One that takes column 1 from its holder finds the chunk corrupt
    // and asks the holder to check it (column-check.test.ts has the reader's check itself; on a
    // busy machine a read may also come by the chunk through a cell its holder checks): with no
    // scrubber, only a read finds the corruption there, counts it, and has the column rebuilt.
    await waitFor(async () => {
      const res = await fetch(`${c.url(reader)}/v1/blobs/${id}`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes), 'the bytes read around the corrupt column').toBe(true);
      return (await metric(c, holder!, CORRUPTION)) > corruptBefore;
    }, { what: 'the corruption counted on its holder', timeoutMs: 30_000 });
    await waitFor(() => c.live().some((i) => c.node(i).output().includes('EC repair: column rebuilt')), { what: 'the column rebuilt', timeoutMs: 30_000 });
    await expectReadableEverywhere(c, acked);
  });

  it('a leave that takes the cluster below six nodes finishes: each of the leaving node\'s columns goes to a node as its second', { timeout: 180_000 }, async () => {
    const acked = new Map<string, Buffer>();
    for (const [size, seed] of [[700 * KiB + 3, 51], [40 * KiB, 52], [2 * 1024 * KiB + 5, 53]] as const) await store(c, 0, patternBytes(size, seed), acked);
    const leaving = 5;
    await leaveGracefully(c, leaving, 90_000);
    const among = [0, 1, 2, 3, 4];
    // Every column of every blob is on one of the five.
    for (const id of acked.keys()) {
      for (let index = 0; index < 6; index++) {
        const held = await Promise.all(among.map(async (i) => (await fetch(`${c.url(i)}/internal/v1/shards/${id}/${index}`, { method: 'HEAD' })).status === 200));
        expect(held.filter(Boolean).length, `column ${index} of ${id}`).toBeGreaterThanOrEqual(1);
      }
    }
    await expectReadableEverywhere(c, acked, among);
  });
});
