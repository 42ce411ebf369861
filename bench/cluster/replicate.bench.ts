/**
 * The cluster's data-path figures, ratios within one run (issue: the cluster):
 *
 *   replica3_4KiB   4 KiB PUT/s (wrk, 64 connections) with REPLICA3 to node 1 of a 3-node cluster,
 *                   against PUT/s to a node alone (one copy); rounds interleave the two. Afterwards:
 *                   how long until every copy landed (the queue drained). The work per PUT beside
 *                   it: CPU (kernel part apart) of all three nodes until the copies landed, and the
 *                   system calls they enter (counted outside the timed rounds), against the node
 *                   alone's.
 *   none_4KiB       the same with policy NONE on the cluster (its copy stays on node 1: on three
 *                   nodes every node is among those a read asks), against NONE on the node alone;
 *                   it starts once the REPLICA3 round's copies have landed.
 *   replica3_1GiB   time until a 1 GiB REPLICA3 blob has three durable copies, against three 1 GiB
 *                   writes with fsync done by the bench on the same disk at once (the physical bound).
 *   remote_get_1MiB 1 MiB GET/s from a node that holds no copy, against GET/s from the owner.
 */
import { closeSync, fsyncSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { GiB, KiB, MiB, REPEATS, emit, envInt, log, median, removeDir, round, runNonce, runWrk, settle, startNode, tempDir } from '../node/lib.js';
import { withCpu, withSyscalls } from '../node/perf-profile.js';
import { type BenchCluster, holders, startCluster } from './lib.js';

const BENCH = 'cluster-replicate';

async function queueDepth(c: BenchCluster): Promise<number> {
  let depth = 0;
  for (const port of c.ports) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    depth += Number(/blobstore_replication_queue_depth\{[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
  }
  return depth;
}

/** Seconds of PUTs each side takes before the rounds. */
const WARM_UP_SECONDS = envInt('BENCH_WARM_UP_SECONDS', 5);
/** Seconds of PUTs whose system calls are counted (enabled tracepoints slow them: not a timed round). */
const SYSCALL_SECONDS = envInt('BENCH_SYSCALL_SECONDS', 5);

async function replica3Small(dir: string): Promise<void> {
  const nonce = runNonce();
  // Both sides with the metrics on (the cluster's queue depth is read from them): the ratios are
  // the cost of the cluster, not of the metrics (bench/metrics measures those).
  const alone = await startNode(join(dir, 'alone'), ['--metrics-addr', 'same']);
  const c = await startCluster(3, join(dir, 'c3'), ['--metrics-addr', 'same']);
  try {
    const aloneRps: number[] = [];
    const clusterRps: number[] = [];
    const noneClusterRps: number[] = [];
    // Both sides warm up alike before the rounds (JIT, connections, the index's first pages): a
    // cold cluster's first round ran a fifth slower than its later ones.
    await runWrk({ url: `http://127.0.0.1:${alone.port}`, script: 'post-unique.lua', args: [String(4 * KiB), `${nonce}aw`, '/v1/blobs', '1'], seconds: WARM_UP_SECONDS });
    await runWrk({ url: c.url(0), script: 'post-unique.lua', args: [String(4 * KiB), `${nonce}cw`], seconds: WARM_UP_SECONDS });
    while ((await queueDepth(c)) > 0) await new Promise((r) => setTimeout(r, 100));
    await settle(BENCH, 5000);
    const pids = c.nodes.map((n) => n.pid);
    /** CPU us per PUT (and its kernel part) per round: the node alone's, and the three nodes' until the round's copies landed. */
    const cpu = { alone: [] as number[], aloneSys: [] as number[], replica3: [] as number[], replica3Sys: [] as number[] };
    let landedSeconds = 0;
    const replica3Round = async (tag: string, seconds?: number) => {
      const wrk = await runWrk({ url: c.url(0), script: 'post-unique.lua', args: [String(4 * KiB), `${nonce}${tag}`], seconds });
      // The round's copies land before anything else starts: the NONE round's figure is NONE's
      // own path, not NONE beside a replication backlog (that backlog is the next line's figure).
      const t0 = performance.now();
      while ((await queueDepth(c)) > 0) await new Promise((r) => setTimeout(r, 100));
      landedSeconds = (performance.now() - t0) / 1000;
      return wrk;
    };
    const aloneRound = (tag: string, seconds?: number) =>
      runWrk({ url: `http://127.0.0.1:${alone.port}`, script: 'post-unique.lua', args: [String(4 * KiB), `${nonce}${tag}`, '/v1/blobs', '1'], seconds });
    for (let i = 0; i < REPEATS; i++) {
      const a = await withCpu(alone.pid, () => aloneRound(`a${i}`));
      aloneRps.push(a.result.rps);
      cpu.alone.push(a.cpuUs / a.result.requests);
      cpu.aloneSys.push(a.sysUs / a.result.requests);
      const r3 = await withCpu(pids, () => replica3Round(`c${i}`));
      clusterRps.push(r3.result.rps);
      cpu.replica3.push(r3.cpuUs / r3.result.requests);
      cpu.replica3Sys.push(r3.sysUs / r3.result.requests);
      log(`${BENCH}: copies of round ${i + 1} all landed ${landedSeconds.toFixed(1)} s after the load ended`);
      await settle(BENCH, 5000);
      noneClusterRps.push((await runWrk({ url: c.url(0), script: 'post-unique.lua', args: [String(4 * KiB), `${nonce}n${i}`, '/v1/blobs', '1'] })).rps);
      log(`${BENCH} round ${i + 1}: NONE alone ${aloneRps[i]!.toFixed(0)}, REPLICA3 on 3 nodes ${clusterRps[i]!.toFixed(0)}, NONE on 3 nodes ${noneClusterRps[i]!.toFixed(0)} PUT/s`);
      await settle(BENCH, 5000);
    }
    emit({ bench: BENCH, metric: 'cpu_us_per_alone_put', value: round(median(cpu.alone), 1), unit: 'us', runs: cpu.alone.map((x) => round(x, 1)), kernel_us: round(median(cpu.aloneSys), 1), reference: 'alone_put' });
    emit({ bench: BENCH, metric: 'cpu_us_per_replica3_put', value: round(median(cpu.replica3), 1), unit: 'us', runs: cpu.replica3.map((x) => round(x, 1)), kernel_us: round(median(cpu.replica3Sys), 1), reference: 'alone_put', nodes: 3 });
    // Kernel entries per PUT, all three nodes' against the node alone's, outside the timed rounds.
    for (const [name, counted, load] of [['alone_put', [alone.pid], () => aloneRound('sa', SYSCALL_SECONDS)], ['replica3_put', pids, () => replica3Round('sc', SYSCALL_SECONDS)]] as const) {
      const { result, syscalls } = await withSyscalls(counted, load);
      const per = (n: number): number => round(n / result.requests, 2);
      log(`${BENCH}: syscalls per PUT, ${name}: ${per(syscalls.total)} (` + syscalls.byName.slice(0, 6).map((x) => `${x.name} ${per(x.count)}`).join(', ') + ')');
      emit({ bench: BENCH, metric: `syscalls_per_${name}`, value: per(syscalls.total), unit: 'syscalls/request', reference: 'alone_put',
        by_name: Object.fromEntries(syscalls.byName.slice(0, 8).map((x) => [x.name, per(x.count)])) });
    }
    const ratio = median(clusterRps.map((r, i) => r / aloneRps[i]!));
    emit({ bench: BENCH, metric: 'replica3_4KiB_put_rps', value: round(median(clusterRps), 0), unit: 'req/s', runs: clusterRps.map((r) => round(r, 0)) });
    emit({ bench: BENCH, metric: 'alone_4KiB_put_rps', value: round(median(aloneRps), 0), unit: 'req/s', runs: aloneRps.map((r) => round(r, 0)) });
    emit({ bench: BENCH, metric: 'replica3_vs_alone_4KiB_put', value: round(ratio), unit: 'ratio', target: '>= 0.45', pass: ratio >= 0.45 });
    const noneRatio = median(noneClusterRps.map((r, i) => r / aloneRps[i]!));
    emit({ bench: BENCH, metric: 'none_cluster_4KiB_put_rps', value: round(median(noneClusterRps), 0), unit: 'req/s', runs: noneClusterRps.map((r) => round(r, 0)) });
    emit({ bench: BENCH, metric: 'none_cluster_vs_alone_4KiB_put', value: round(noneRatio), unit: 'ratio', target: '>= 0.90', pass: noneRatio >= 0.9 });
  } finally {
    await c.stop();
    await alone.stop();
  }
}

/** Three 1 GiB files written and fsynced at once by this process: what one disk allows. */
function threeWrites(dir: string): number {
  const chunk = Buffer.alloc(MiB, 0x5a);
  const t0 = performance.now();
  const fds = [0, 1, 2].map((i) => openSync(join(dir, `raw-${i}`), 'w'));
  for (let at = 0; at < GiB; at += MiB) for (const fd of fds) writeSync(fd, chunk);
  for (const fd of fds) {
    fsyncSync(fd);
    closeSync(fd);
  }
  return (performance.now() - t0) / 1000;
}

async function replica3Large(dir: string): Promise<void> {
  const c = await startCluster(3, join(dir, 'c3big'), ['--metrics-addr', 'same']);
  try {
    const body = join(dir, 'body');
    const chunk = Buffer.alloc(MiB);
    const fd = openSync(body, 'w');
    for (let i = 0; i < 1024; i++) {
      chunk.fill(i & 0xff);
      chunk.write(`${runNonce()}:${i}`, 0);
      writeSync(fd, chunk);
    }
    closeSync(fd);
    const t0 = performance.now();
    const { spawnSync } = await import('node:child_process');
    const put = spawnSync('curl', ['-s', '-X', 'POST', '-T', body, '-H', 'Transfer-Encoding: chunked', '-H', 'Content-Type: application/octet-stream', '-H', 'X-Blobstore-Policy: 3', `${c.url(0)}/v1/blobs`], { encoding: 'utf8' });
    const acked = (performance.now() - t0) / 1000;
    const id = (JSON.parse(put.stdout) as { id: string }).id;
    while ((await holders(c, id)) < 3) await new Promise((r) => setTimeout(r, 50));
    const threeCopies = (performance.now() - t0) / 1000;
    const raw = threeWrites(dir);
    log(`${BENCH}: 1 GiB REPLICA3: 2xx after ${acked.toFixed(2)} s, three durable copies after ${threeCopies.toFixed(2)} s; three 1 GiB writes + fsync by the bench: ${raw.toFixed(2)} s`);
    emit({ bench: BENCH, metric: 'replica3_1GiB_three_copies_s', value: round(threeCopies, 3), unit: 's', acked_s: round(acked, 3) });
    emit({ bench: BENCH, metric: 'three_1GiB_writes_s', value: round(raw, 3), unit: 's' });
    emit({ bench: BENCH, metric: 'replica3_1GiB_vs_three_writes', value: round(raw / threeCopies), unit: 'ratio', target: '>= 0.80', pass: raw / threeCopies >= 0.8 });
  } finally {
    await c.stop();
  }
}

async function remoteGet(dir: string): Promise<void> {
  const c = await startCluster(4, join(dir, 'c4'), ['--handoff-interval-ms', '1000']);
  try {
    // One copy each (NONE), placed on their owners by handoff; then: ids node 1 holds.
    const body = Buffer.alloc(MiB, 7);
    for (let i = 0; i < 400; i++) {
      body.writeUInt32BE(i, 0);
      body.write(runNonce(), 4);
      await fetch(`${c.url(i % 4)}/v1/blobs`, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '1' } });
    }
    await new Promise((r) => setTimeout(r, 5000));
    const page = (await (await fetch(`${c.url(0)}/v1/blobs?limit=10000`)).json()) as { ids: string[] };
    const idsFile = join(dir, 'owned-ids.txt');
    writeFileSync(idsFile, page.ids.join('\n') + '\n');
    log(`${BENCH}: node 1 owns ${page.ids.length} of the 1 MiB blobs`);
    const owner: number[] = [];
    const remote: number[] = [];
    for (let i = 0; i < REPEATS; i++) {
      owner.push((await runWrk({ url: c.url(0), script: 'get-ids.lua', args: [idsFile], connections: 16 })).rps);
      remote.push((await runWrk({ url: c.url(1), script: 'get-ids.lua', args: [idsFile], connections: 16 })).rps);
      log(`${BENCH} round ${i + 1}: 1 MiB GET from the owner ${owner[i]!.toFixed(0)}/s, from a node without a copy ${remote[i]!.toFixed(0)}/s`);
    }
    const ratio = median(remote.map((r, i) => r / owner[i]!));
    emit({ bench: BENCH, metric: 'owner_1MiB_get_rps', value: round(median(owner), 0), unit: 'req/s', connections: 16 });
    emit({ bench: BENCH, metric: 'remote_1MiB_get_rps', value: round(median(remote), 0), unit: 'req/s', connections: 16 });
    emit({ bench: BENCH, metric: 'remote_vs_owner_1MiB_get', value: round(ratio), unit: 'ratio', target: '>= 0.70', pass: ratio >= 0.7 });
  } finally {
    await c.stop();
  }
}

const dir = tempDir('cluster');
try {
  const only = process.env.BENCH_CLUSTER_ONLY ?? 'small,large,remote';
  if (only.includes('small')) await replica3Small(dir);
  if (only.includes('large')) await replica3Large(dir);
  if (only.includes('remote')) await remoteGet(dir);
} finally {
  removeDir(dir);
}
