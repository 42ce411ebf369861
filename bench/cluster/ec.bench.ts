/**
 * Erasure coding's figures (issue: EC across the cluster), ratios within one run:
 *
 *   ec42_1GiB_put / _get   a 1 GiB EC42 blob PUT (curl -T, chunked, X-Blobstore-Size) to and GET from a 6-node cluster
 *                          on this host, against NONE on one node (1.5x the bytes on one shared disk);
 *                          rounds interleave the two. Each round GETs both blobs from the disk (their
 *                          files dropped from the page cache: an EC column is written past it, so
 *                          this is also the first read after an EC store), then again from memory.
 *                          Then degraded: the same GET with the holders of
 *                          two data columns down (the worst case: two of the four inputs of every
 *                          row's rebuild are data columns the read streams anyway), from memory as
 *                          the healthy GETs it is compared with: its first GET, which reads the
 *                          parity columns from the disk (never read before), is reported apart.
 *   ec42_1GiB_get_floor    each round's EC blob's data columns relayed by bare processes over the
 *                          same hops (relay-floor.mjs), no byte checked, next to its GET: what the
 *                          hops alone leave of NONE's GET on this machine, and the GET against that.
 *   *_1GiB_get_cpu_ms      CPU per GiB of those GETs from memory: NONE's node, the EC read's coordinator
 *                          and its holders, the bare relay's processes, and the rest of the machine
 *                          (curl, the kernel's share outside them): what bounds the EC GET on one
 *                          machine of two cores.
 *   ec42_64MiB_put / _get  MiB/s of 64 MiB objects one after another, each node coordinating some,
 *                          once every node has coordinated one (its first is reported apart), and
 *                          against OpenStack Swift's EC 4+2 on this machine in the same run
 *                          (swift-peer.ts), once the cluster is stopped.
 *   ec42_256KiB_first_get  p50 latency of the first GET of each of 300 EC42 blobs of 256 KiB from one
 *                          node of six (no holders known there yet: the columns are read from where
 *                          the ring places them, nobody asked), against a GET of each again (holders
 *                          known from the first).
 *   ec42_256KiB_put,       PUT/s of EC42 blobs of 256 KiB (held in memory, columns in batch POSTs) and
 *   ec42_2MiB_put          of 2 MiB (from the upload's transient file, a column PUT each) to one node of a
 *                          6-node cluster, wrk -c16, against NONE on the same node in alternating rounds;
 *                          with all six nodes' CPU and the TCP connections opened per PUT (the columns
 *                          go on kept connections: a connection each was ~5 per PUT).
 *   scrub                  the scrubber's MiB/s with no cap, and 4 KiB GET/s while it runs at its
 *                          default cap against GET/s with it off.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { GiB, KiB, MiB, REPEATS, blobFile, curlGetSeconds, dropCache, emit, log, median, memoryDir, procStatus, removeDir, resetPeakRss, round, runNonce, runWrk, settle, startNode, tempDir } from '../node/lib.js';
import { startCluster } from './lib.js';
import { cpuUs, machineCpuUs, tcpActiveOpens } from '../node/perf-profile.js';
import { swiftEc } from './swift-peer.js';
import { startRelayFloor } from './relay-floor.js';

const BENCH = 'cluster-ec';
const execFileAsync = promisify(execFile);
const BLOB_BYTES = Number(process.env.BENCH_EC_BYTES ?? GiB);

/** A body file in memory with a fresh nonce in every MiB (no two runs store the same bytes). */
function bodyFile(dir: string, name: string, bytes: number): string {
  const path = join(dir, name);
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(MiB);
  const nonce = runNonce();
  for (let at = 0, i = 0; at < bytes; at += MiB, i++) {
    chunk.fill(i & 0xff);
    chunk.write(`${nonce}:${name}:${i}`, 0);
    writeSync(fd, chunk, 0, Math.min(MiB, bytes - at));
  }
  closeSync(fd);
  return path;
}

/** CPU time summed over the loads run `during` it: each process's, and the rest of the machine's. */
class CpuSplit {
  private readonly spent: number[];
  private rest = 0;

  constructor(private readonly pids: readonly number[]) {
    this.spent = pids.map(() => 0);
  }

  async during<T>(load: () => Promise<T>): Promise<T> {
    const before = this.pids.map(cpuUs);
    const machine = machineCpuUs();
    const result = await load();
    const after = this.pids.map(cpuUs);
    let ours = 0;
    after.forEach((us, i) => {
      this.spent[i]! += us - before[i]!;
      ours += us - before[i]!;
    });
    this.rest += machineCpuUs().busy - machine.busy - ours;
    return result;
  }

  /** Milliseconds per GiB moved: each process's, and the rest's. */
  perGiB(gib: number): [number[], number] {
    return [this.spent.map((us) => us / 1000 / gib), this.rest / 1000 / gib];
  }
}

/**
 * PUT a file (chunked, as bodies of 1e9 bytes and more must be, with its length in X-Blobstore-Size
 * as blobstore-client sends it); the seconds until the answer, and the id.
 */
async function putFile(url: string, path: string, policy: number): Promise<{ seconds: number; id: string }> {
  const t0 = performance.now();
  const { stdout } = await execFileAsync('curl', ['-sS', '--max-time', '600', '-X', 'POST', '-T', path, '-H', 'Transfer-Encoding: chunked', '-H', `X-Blobstore-Size: ${statSync(path).size}`,
    '-H', 'Content-Type: application/octet-stream', '-H', `X-Blobstore-Policy: ${policy}`, `${url}/v1/blobs`]);
  const seconds = (performance.now() - t0) / 1000;
  const answer = JSON.parse(stdout) as { id?: string; message?: string };
  if (!answer.id) throw new Error(`PUT ${path}: ${stdout}`);
  return { seconds, id: answer.id };
}

async function largeBlobs(dir: string, bodies: string): Promise<{ put: number; get: number }> {
  let objects64 = { put: 0, get: 0 };
  const alone = await startNode(join(dir, 'alone'), ['--grpc-addr', '127.0.0.1:0']);
  const c = await startCluster(6, join(dir, 'c6'), ['--metrics-addr', '']);
  const mbps = (s: number): number => BLOB_BYTES / MiB / s;
  try {
    const put: { none: number; ec: number }[] = [];
    /** The receiving node's peak RSS over its RSS before each EC PUT (MiB; -1 where the peak cannot be reset). */
    const rssGrowth: number[] = [];
    const get: { none: number; ec: number }[] = [];
    const getCold: { none: number; ec: number }[] = [];
    /** The bare relay of each round's EC blob's data columns (relay-floor.ts), next to its GET. */
    const floor: number[] = [];
    /** The bare relay's CPU summed over the rounds (ms per GiB moved, each round's added). */
    const floorCpu = { relay: 0, holders: 0, rest: 0 };
    let ecId = '';
    const cpu = { none: new CpuSplit([alone.pid]), ec: new CpuSplit(c.nodes.map((n) => n.pid)) };
    for (let i = 0; i < REPEATS; i++) {
      const noneBody = bodyFile(bodies, `none-${i}`, BLOB_BYTES);
      const none = await putFile(`http://127.0.0.1:${alone.port}`, noneBody, 1);
      removeDir(noneBody);
      await settle(BENCH);
      const ecBody = bodyFile(bodies, `ec-${i}`, BLOB_BYTES);
      const receiver = c.nodes[0]!.pid;
      const reset = resetPeakRss(receiver);
      const rssBefore = procStatus(receiver).VmRSS ?? 0;
      const ec = await putFile(c.url(0), ecBody, 4);
      rssGrowth.push(reset ? ((procStatus(receiver).VmHWM ?? 0) - rssBefore) / 1024 : -1);
      removeDir(ecBody);
      await settle(BENCH);
      ecId = ec.id;
      put.push({ none: none.seconds, ec: ec.seconds });
      const noneUrl = `http://127.0.0.1:${alone.port}/v1/blobs/${none.id}`;
      const ecUrl = `${c.url(0)}/v1/blobs/${ec.id}`;
      await dropCache(await blobFile(join(dir, 'alone'), none.id));
      for (const path of columnFiles(c.dirs, BLOB_BYTES / 8)) await dropCache(path);
      getCold.push({ none: await curlGetSeconds(noneUrl, BLOB_BYTES), ec: await curlGetSeconds(ecUrl, BLOB_BYTES) });
      get.push({ none: await cpu.none.during(() => curlGetSeconds(noneUrl, BLOB_BYTES)), ec: await cpu.ec.during(() => curlGetSeconds(ecUrl, BLOB_BYTES)) });
      const relay = await startRelayFloor(newestColumns(c.dirs, BLOB_BYTES / 8), 4, 0, BLOB_BYTES / 4, MiB);
      try {
        await curlGetSeconds(relay.url, BLOB_BYTES); // its first GET compiles its code
        const split = new CpuSplit(relay.pids);
        floor.push(await split.during(() => curlGetSeconds(relay.url, BLOB_BYTES)));
        const [parts, rest] = split.perGiB(BLOB_BYTES / GiB);
        floorCpu.relay += parts[0]!;
        floorCpu.holders += parts.slice(1).reduce((a, b) => a + b, 0);
        floorCpu.rest += rest;
      } finally {
        await relay.stop();
      }
      log(`${BENCH} round ${i + 1}: PUT NONE ${mbps(none.seconds).toFixed(0)} / EC42 ${mbps(ec.seconds).toFixed(0)} MiB/s; GET from the disk NONE ${mbps(getCold[i]!.none).toFixed(0)} / EC42 ${mbps(getCold[i]!.ec).toFixed(0)}, from memory NONE ${mbps(get[i]!.none).toFixed(0)} / EC42 ${mbps(get[i]!.ec).toFixed(0)} / bare relay ${mbps(floor[i]!).toFixed(0)} MiB/s`);
    }
    const putRatio = median(put.map((r) => r.none / r.ec));
    const getRatio = median(get.map((r) => r.none / r.ec));
    emit({ bench: BENCH, metric: 'none_1GiB_put_mib_s', value: round(median(put.map((r) => mbps(r.none))), 0), unit: 'MiB/s' });
    emit({ bench: BENCH, metric: 'ec42_1GiB_put_mib_s', value: round(median(put.map((r) => mbps(r.ec))), 0), unit: 'MiB/s', nodes: 6 });
    emit({ bench: BENCH, metric: 'ec42_vs_none_1GiB_put', value: round(putRatio), unit: 'ratio', target: '>= 0.60', pass: putRatio >= 0.6 });
    const growth = Math.max(...rssGrowth);
    if (growth >= 0) emit({ bench: BENCH, metric: 'ec42_1GiB_put_rss_growth_mib', value: round(growth, 1), unit: 'MiB', target: '<= 64', pass: growth <= 64 });
    emit({ bench: BENCH, metric: 'none_1GiB_get_mib_s', value: round(median(get.map((r) => mbps(r.none))), 0), unit: 'MiB/s' });
    emit({ bench: BENCH, metric: 'ec42_1GiB_get_mib_s', value: round(median(get.map((r) => mbps(r.ec))), 0), unit: 'MiB/s', nodes: 6 });
    emit({ bench: BENCH, metric: 'ec42_vs_none_1GiB_get', value: round(getRatio), unit: 'ratio', target: '>= 0.70', pass: getRatio >= 0.7 });
    // What the hops alone allow on this machine: the bare relay against NONE, and the EC GET against it.
    const floorRatio = median(get.map((r, i) => r.none / floor[i]!));
    const ecFloorRatio = median(get.map((r, i) => floor[i]! / r.ec));
    emit({ bench: BENCH, metric: 'ec42_1GiB_get_floor_mib_s', value: round(median(floor.map(mbps)), 0), unit: 'MiB/s', note: 'bare processes relaying the data columns over the same hops, no byte checked (relay-floor.mjs)' });
    emit({ bench: BENCH, metric: 'floor_vs_none_1GiB_get', value: round(floorRatio), unit: 'ratio', note: 'what the extra hop leaves of NONE\'s GET on this machine' });
    emit({ bench: BENCH, metric: 'ec42_vs_floor_1GiB_get', value: round(ecFloorRatio), unit: 'ratio' });
    const gib = (REPEATS * BLOB_BYTES) / GiB;
    const [alonePart, noneRest] = cpu.none.perGiB(gib);
    emit({ bench: BENCH, metric: 'none_1GiB_get_cpu_ms', value: round(alonePart[0]! + noneRest, 0), unit: 'ms CPU per GiB', node: round(alonePart[0]!, 0), rest: round(noneRest, 0) });
    const [ecParts, ecRest] = cpu.ec.perGiB(gib);
    const holders = ecParts.slice(1).reduce((a, b) => a + b, 0);
    emit({ bench: BENCH, metric: 'ec42_1GiB_get_cpu_ms', value: round(ecParts[0]! + holders + ecRest, 0), unit: 'ms CPU per GiB', coordinator: round(ecParts[0]!, 0), holders: round(holders, 0), rest: round(ecRest, 0) });
    const perRound = (ms: number): number => round(ms / REPEATS, 0);
    emit({ bench: BENCH, metric: 'ec42_1GiB_get_floor_cpu_ms', value: perRound(floorCpu.relay + floorCpu.holders + floorCpu.rest), unit: 'ms CPU per GiB', relay: perRound(floorCpu.relay), holders: perRound(floorCpu.holders), rest: perRound(floorCpu.rest), note: 'the bare relay (no byte checked): what the extra hop costs on one machine' });
    const coldRatio = median(getCold.map((r) => r.none / r.ec));
    emit({ bench: BENCH, metric: 'none_1GiB_get_cold_mib_s', value: round(median(getCold.map((r) => mbps(r.none))), 0), unit: 'MiB/s' });
    emit({ bench: BENCH, metric: 'ec42_1GiB_get_cold_mib_s', value: round(median(getCold.map((r) => mbps(r.ec))), 0), unit: 'MiB/s', nodes: 6 });
    emit({ bench: BENCH, metric: 'ec42_vs_none_1GiB_get_cold', value: round(coldRatio), unit: 'ratio', target: '>= 0.70', pass: coldRatio >= 0.7 });

    // 64 MiB objects, one after another (the scale of Swift's published EC figures).
    const objects = 8;
    // Each node's first EC store and read as coordinator pay once for its JIT and first-use costs
    // (~1.5x a later one's time): one untimed object through every node first, its figure logged
    // apart. Swift's proxy is warm by then too (its three runs go to the same proxy workers).
    let firstSeconds = 0;
    for (let i = 0; i < 6; i++) {
      const body = bodyFile(bodies, `first-${i}`, 64 * MiB);
      const r = await putFile(c.url(i), body, 4);
      removeDir(body);
      firstSeconds += r.seconds;
      await curlGetSeconds(`${c.url((i + 3) % 6)}/v1/blobs/${r.id}`, 64 * MiB);
    }
    log(`${BENCH}: 64 MiB EC42 PUT, each node's first as coordinator (untimed): ${((6 * 64) / firstSeconds).toFixed(0)} MiB/s`);
    emit({ bench: BENCH, metric: 'ec42_64MiB_first_put_mib_s', value: round((6 * 64) / firstSeconds, 0), unit: 'MiB/s', note: 'each node\'s first EC PUT as coordinator, before the timed objects' });
    let putSeconds = 0;
    const ids: string[] = [];
    for (let i = 0; i < objects; i++) {
      const body = bodyFile(bodies, `obj-${i}`, 64 * MiB);
      const r = await putFile(c.url(i % 6), body, 4);
      removeDir(body);
      putSeconds += r.seconds;
      ids.push(r.id);
    }
    let getSeconds = 0;
    for (const [i, id] of ids.entries()) getSeconds += await curlGetSeconds(`${c.url((i + 3) % 6)}/v1/blobs/${id}`, 64 * MiB);
    objects64 = { put: (objects * 64) / putSeconds, get: (objects * 64) / getSeconds };
    emit({ bench: BENCH, metric: 'ec42_64MiB_put_mib_s', value: round(objects64.put, 0), unit: 'MiB/s', objects });
    emit({ bench: BENCH, metric: 'ec42_64MiB_get_mib_s', value: round(objects64.get, 0), unit: 'MiB/s', objects });

    // Degraded: the holders of two data columns down (not the node asked), the same GET, against the healthy one.
    const healthy: number[] = [];
    for (let i = 0; i < REPEATS; i++) healthy.push(await curlGetSeconds(`${c.url(0)}/v1/blobs/${ecId}`, BLOB_BYTES));
    const down = dataColumnHolders(c.dirs, 4, BLOB_BYTES / 8).filter((n) => n !== 0).slice(0, 2);
    if (down.length < 2) throw new Error(`the data columns of the last 1 GiB EC blob were not found on two nodes besides node 0 (found ${down.join(', ')})`);
    log(`${BENCH}: degraded GET with nodes ${down.join(' and ')} down (each holds a data column)`);
    for (const n of down) await c.nodes[n]!.stop();
    const firstDegraded = await curlGetSeconds(`${c.url(0)}/v1/blobs/${ecId}`, BLOB_BYTES);
    log(`${BENCH}: first degraded GET (parity columns from the disk) ${mbps(firstDegraded).toFixed(0)} MiB/s`);
    emit({ bench: BENCH, metric: 'ec42_degraded_first_1GiB_get_mib_s', value: round(mbps(firstDegraded), 0), unit: 'MiB/s', note: 'the first GET after the holders went down: the parity columns, never read before, from the disk' });
    const degraded: number[] = [];
    for (let i = 0; i < REPEATS; i++) degraded.push(await curlGetSeconds(`${c.url(0)}/v1/blobs/${ecId}`, BLOB_BYTES));
    const degradedRatio = median(healthy) / median(degraded);
    log(`${BENCH}: 1 GiB EC42 GET healthy ${mbps(median(healthy)).toFixed(0)} MiB/s, with 2 of 6 nodes down ${mbps(median(degraded)).toFixed(0)} MiB/s`);
    emit({ bench: BENCH, metric: 'ec42_healthy_1GiB_get_mib_s', value: round(mbps(median(healthy)), 0), unit: 'MiB/s', note: 'the degraded GET\'s reference, measured just before it' });
    emit({ bench: BENCH, metric: 'ec42_degraded_1GiB_get_mib_s', value: round(mbps(median(degraded)), 0), unit: 'MiB/s', nodes_down: 2, down: 'holders of two data columns' });
    emit({ bench: BENCH, metric: 'ec42_degraded_vs_healthy_get', value: round(degradedRatio), unit: 'ratio', target: '>= 0.70', pass: degradedRatio >= 0.7 });
  } finally {
    await c.stop();
    await alone.stop();
  }
  return objects64;
}

/** Our 64 MiB EC figures against Swift's EC 4+2, measured now on this machine. */
async function againstSwift(ours: { put: number; get: number }): Promise<void> {
  const swift = await swiftEc(64);
  if (swift === undefined) {
    emit({ bench: BENCH, metric: 'ec42_64MiB_vs_swift', value: null, unit: 'ratio', note: 'Swift could not run here (see the log): not measured' });
    return;
  }
  const runs = swift.runs.map((r) => ({ put: round(r.put, 1), get: round(r.get, 1) }));
  emit({ bench: BENCH, metric: 'swift_ec42_64MiB_put_mib_s', value: round(swift.putMiBs, 0), unit: 'MiB/s', ec_type: swift.ecType, runs });
  emit({ bench: BENCH, metric: 'swift_ec42_64MiB_get_mib_s', value: round(swift.getMiBs, 0), unit: 'MiB/s', ec_type: swift.ecType, runs });
  const put = ours.put / swift.putMiBs;
  const get = ours.get / swift.getMiBs;
  emit({ bench: BENCH, metric: 'ec42_64MiB_put_vs_swift', value: round(put, 2), unit: 'ratio', target: '>= 3', pass: put >= 3 });
  emit({ bench: BENCH, metric: 'ec42_64MiB_get_vs_swift', value: round(get, 2), unit: 'ratio', target: '>= 3', pass: get >= 3 });
}

/**
 * The columns of the newest blob whose columns are at least `minBytes`: each node's column files
 * (shards/<2 hex>/<placement hex>.<column>), grouped by placement, the group written last; by
 * column index, the node holding it and its file.
 */
function newestColumns(dirs: readonly string[], minBytes: number): Map<number, { node: number; path: string }> {
  const groups = new Map<string, { mtime: number; columns: Map<number, { node: number; path: string }> }>();
  for (const [node, dir] of dirs.entries()) {
    const shards = join(dir, 'shards');
    for (const sub of existsSync(shards) ? readdirSync(shards) : []) {
      for (const name of readdirSync(join(shards, sub))) {
        const m = /^([0-9a-f]+)\.(\d+)$/.exec(name);
        if (!m) continue;
        const path = join(shards, sub, name);
        const st = statSync(path);
        if (st.size < minBytes) continue;
        const g = groups.get(m[1]!) ?? { mtime: 0, columns: new Map<number, { node: number; path: string }>() };
        g.mtime = Math.max(g.mtime, st.mtimeMs);
        g.columns.set(Number(m[2]), { node, path });
        groups.set(m[1]!, g);
      }
    }
  }
  return [...groups.values()].sort((a, b) => b.mtime - a.mtime)[0]?.columns ?? new Map();
}

/** The nodes (by index) holding data columns 0..k-1 of the newest blob whose columns are at least `minBytes`. */
function dataColumnHolders(dirs: readonly string[], k: number, minBytes: number): number[] {
  const columns = newestColumns(dirs, minBytes);
  return [...Array(k).keys()].map((i) => columns.get(i)?.node).filter((n): n is number => n !== undefined);
}

/** The files of every column of the newest blob whose columns are at least `minBytes`. */
function columnFiles(dirs: readonly string[], minBytes: number): string[] {
  const columns = [...newestColumns(dirs, minBytes).values()];
  if (columns.length === 0) throw new Error(`no column files of at least ${minBytes} bytes under the cluster's data dirs`);
  return columns.map((c) => c.path);
}

async function scrubState(port: number): Promise<{ active: boolean; passes: number; bytes_checked: number }> {
  const s = (await (await fetch(`http://127.0.0.1:${port}/v1/cluster/state`)).json()) as { repair: { scrub: { active: boolean; passes: number; bytes_checked: number } } };
  return s.repair.scrub;
}

async function scrub(dir: string, bodies: string): Promise<void> {
  const data = join(dir, 'scrub');
  // Data to scrub: 2 GiB in 64 MiB blobs, and 20,000 small blobs to read under load.
  let node = await startNode(data, ['--grpc-addr', '127.0.0.1:0', '--scrub-bytes-per-second', '0']);
  for (let i = 0; i < 2 * 16; i++) {
    const body = bodyFile(bodies, `scrub-${i}`, 64 * MiB);
    await putFile(`http://127.0.0.1:${node.port}`, body, 1);
    removeDir(body);
  }
  const small = Buffer.alloc(4 * KiB);
  const ids: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    small.write(`${runNonce()}:${i}`, 0);
    const res = await fetch(`http://127.0.0.1:${node.port}/v1/blobs`, { method: 'POST', body: small, headers: { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '1' } });
    ids.push(((await res.json()) as { id: string }).id);
  }
  const idsFile = join(dir, 'scrub-ids.txt');
  writeFileSync(idsFile, ids.join('\n') + '\n');
  await node.stop();
  await settle(BENCH);
  try {
    // Full speed: no cap, a pass a second; the rate over one whole pass.
    node = await startNode(data, ['--grpc-addr', '127.0.0.1:0', '--scrub-bytes-per-second', '1TiB', '--scrub-interval-ms', '1000']);
    let s = await scrubState(node.port);
    while (!s.active) s = await scrubState(node.port);
    const t0 = performance.now();
    const passes = s.passes;
    let last = s;
    while (s.passes === passes) {
      last = s;
      await new Promise((r) => setTimeout(r, 20));
      s = await scrubState(node.port);
    }
    const seconds = (performance.now() - t0) / 1000;
    const scrubMibS = last.bytes_checked / MiB / seconds;
    log(`${BENCH}: a scrub pass over ${(last.bytes_checked / MiB).toFixed(0)} MiB took ${seconds.toFixed(1)} s (${scrubMibS.toFixed(0)} MiB/s)`);
    emit({ bench: BENCH, metric: 'scrub_full_speed_mib_s', value: round(scrubMibS, 0), unit: 'MiB/s', bytes: last.bytes_checked });
    await node.stop();
    // Foreground 4 KiB GET/s with the scrubber at its default cap, against the scrubber off.
    const on: number[] = [];
    const off: number[] = [];
    for (let i = 0; i < REPEATS; i++) {
      node = await startNode(data, ['--grpc-addr', '127.0.0.1:0', '--scrub-bytes-per-second', '0']);
      off.push((await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'get-ids.lua', args: [idsFile] })).rps);
      await node.stop();
      node = await startNode(data, ['--grpc-addr', '127.0.0.1:0', '--scrub-interval-ms', '500']);
      while (!(await scrubState(node.port)).active) await new Promise((r) => setTimeout(r, 20));
      on.push((await runWrk({ url: `http://127.0.0.1:${node.port}`, script: 'get-ids.lua', args: [idsFile] })).rps);
      await node.stop();
      log(`${BENCH} round ${i + 1}: 4 KiB GET/s scrubber off ${off[i]!.toFixed(0)}, at its default cap ${on[i]!.toFixed(0)}`);
    }
    const ratio = median(on.map((r, i) => r / off[i]!));
    emit({ bench: BENCH, metric: 'get_4KiB_rps_scrub_off', value: round(median(off), 0), unit: 'req/s' });
    emit({ bench: BENCH, metric: 'get_4KiB_rps_scrub_default_cap', value: round(median(on), 0), unit: 'req/s', cap: '8 MiB/s' });
    emit({ bench: BENCH, metric: 'get_4KiB_scrub_on_vs_off', value: round(ratio), unit: 'ratio', target: '>= 0.90', pass: ratio >= 0.9 });
  } finally {
    await node.stop();
  }
}

/** First reads of small EC42 blobs against reads of them again (their holders known then), p50 latency. */
async function firstReads(dir: string): Promise<void> {
  const blobs = 300;
  const size = 256 * KiB;
  const c = await startCluster(6, join(dir, 'first'), ['--metrics-addr', '']);
  try {
    const ids: string[] = [];
    const nonce = runNonce();
    for (let i = 0; i < blobs; i++) {
      const body = Buffer.alloc(size, i & 0xff);
      body.write(`${nonce}:first:${i}`, 0);
      const res = await fetch(`${c.url(i % 6)}/v1/blobs`, { method: 'POST', body, headers: { 'X-Blobstore-Policy': '4', 'Content-Type': 'application/octet-stream' } });
      ids.push(((await res.json()) as { id: string }).id);
    }
    const readAll = async (): Promise<number> => {
      const ms: number[] = [];
      for (const id of ids) {
        const t0 = performance.now();
        const res = await fetch(`${c.url(3)}/v1/blobs/${id}`);
        const got = await res.arrayBuffer();
        if (res.status !== 200 || got.byteLength !== size) throw new Error(`GET ${id}: HTTP ${res.status}, ${got.byteLength} bytes`);
        ms.push(performance.now() - t0);
      }
      return median(ms);
    };
    const first = await readAll();
    const again = await readAll();
    log(`${BENCH}: ${blobs} EC42 blobs of 256 KiB from one node of six, GET p50: first ${first.toFixed(2)} ms, again ${again.toFixed(2)} ms`);
    emit({ bench: BENCH, metric: 'ec42_256KiB_first_get_p50_ms', value: round(first, 2), unit: 'ms', blobs });
    emit({ bench: BENCH, metric: 'ec42_256KiB_again_get_p50_ms', value: round(again, 2), unit: 'ms', blobs });
    emit({ bench: BENCH, metric: 'ec42_256KiB_first_vs_again_get', value: round(first / again), unit: 'ratio', target: '<= 1.25', pass: first / again <= 1.25 });
  } finally {
    await c.stop();
  }
}

/** EC42 PUTs of small and mid-size blobs on a 6-node cluster against NONE on the same node, in alternating rounds. */
async function smallStores(dir: string): Promise<void> {
  const connections = 16;
  const c = await startCluster(6, join(dir, 'small'), ['--metrics-addr', '']);
  const pids = c.nodes.map((n) => n.pid);
  const round1 = async (size: number, policy: string): Promise<{ rps: number; p50Ms: number; cpuMs: number; connects: number }> => {
    const cpu0 = pids.map(cpuUs);
    const opens0 = tcpActiveOpens();
    const w = await runWrk({ url: c.url(0), script: 'post-unique.lua', args: [String(size), runNonce(), '/v1/blobs', policy], connections });
    const opens = tcpActiveOpens() - opens0 - connections;
    const cpu = pids.reduce((sum, pid, i) => sum + cpuUs(pid) - cpu0[i]!, 0);
    if (w.errors > 0) throw new Error(`${w.errors} errors in ${w.requests} PUTs of ${size} bytes, policy ${policy}`);
    return { rps: w.rps, p50Ms: w.p50Ms, cpuMs: cpu / 1000 / w.requests, connects: Math.max(0, opens) / w.requests };
  };
  try {
    for (const [size, name] of [[256 * KiB, '256KiB'], [2 * MiB, '2MiB']] as const) {
      for (const policy of ['4', '1']) await runWrk({ url: c.url(0), script: 'post-unique.lua', args: [String(size), runNonce(), '/v1/blobs', policy], seconds: 3, connections });
      const ec: Awaited<ReturnType<typeof round1>>[] = [];
      const none: Awaited<ReturnType<typeof round1>>[] = [];
      for (let i = 0; i < REPEATS; i++) {
        ec.push(await round1(size, '4'));
        none.push(await round1(size, '1'));
        log(`${BENCH} round ${i + 1}: ${name} PUT/s EC42 ${ec[i]!.rps.toFixed(0)} (p50 ${ec[i]!.p50Ms.toFixed(1)} ms, all nodes' CPU ${ec[i]!.cpuMs.toFixed(2)} ms, `
          + `${ec[i]!.connects.toFixed(2)} connections per PUT), NONE ${none[i]!.rps.toFixed(0)} (p50 ${none[i]!.p50Ms.toFixed(1)} ms, CPU ${none[i]!.cpuMs.toFixed(2)} ms)`);
      }
      const ratio = median(ec.map((e, i) => e.rps / none[i]!.rps));
      emit({ bench: BENCH, metric: `ec42_${name}_put_rps`, value: round(median(ec.map((e) => e.rps)), 0), unit: 'req/s', connections });
      emit({ bench: BENCH, metric: `none_cluster_${name}_put_rps`, value: round(median(none.map((e) => e.rps)), 0), unit: 'req/s', connections });
      emit({ bench: BENCH, metric: `ec42_vs_none_${name}_put`, value: round(ratio), unit: 'ratio' });
      emit({ bench: BENCH, metric: `ec42_${name}_put_cpu_ms`, value: round(median(ec.map((e) => e.cpuMs))), unit: 'ms', reference: round(median(none.map((e) => e.cpuMs))), note: 'all six nodes, per PUT; reference: NONE' });
      emit({ bench: BENCH, metric: `ec42_${name}_put_connects`, value: round(median(ec.map((e) => e.connects))), unit: 'connections per PUT' });
    }
  } finally {
    await c.stop();
  }
}

const dir = tempDir('ec');
const bodies = memoryDir('ec');
try {
  const only = process.env.BENCH_EC_ONLY ?? 'large,first,small,scrub';
  if (only.includes('large')) await againstSwift(await largeBlobs(dir, bodies));
  if (only.includes('first')) await firstReads(dir);
  if (only.includes('small')) await smallStores(dir);
  if (only.includes('scrub')) await scrub(dir, bodies);
} finally {
  removeDir(bodies);
  removeDir(dir);
}
