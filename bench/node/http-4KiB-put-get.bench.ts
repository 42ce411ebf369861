/**
 * 4 KiB durable PUT/s and GET/s at 64 connections against the bare uWS echo ceiling, same wrk,
 * same run. Rounds interleave echo and node so that load from elsewhere hits both alike; each
 * figure is the median of REPEATS runs of RUN_SECONDS. GETs are measured two ways: a hot set
 * (HOT_SET blobs, held by the node's read cache) and every stored blob (at least LARGE_SET,
 * several times readCacheBytes, read in a cycle: every GET misses the cache, a pread + the CRC-32C its index entry carries).
 * Each GET run also reports CPU microseconds per request of the node and of the echo server.
 *
 *   bulk load (LARGE_SET, in-process engine) -> warm-up PUTs -> list ids ->
 *   REPEATS x [echo GET, node GET hot, node GET large, echo POST, node PUT] ->
 *   perf profile of a node started with --perf-basic-prof during a hot and a large GET run and a
 *   PUT run (all threads of the process: the log's fdatasync and LMDB's writes are in the PUT's)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bulkLoad } from './bulk.js';
import {
  CONNECTIONS, KiB, REPEATS, RUN_SECONDS, WRK_THREADS, emit, envInt, listIds, log, median, removeDir, round, runNonce, runWrk,
  settle, startEcho, startNode, tempDir, type RunningProcess, type WrkResult,
} from './lib.js';
import { byKind, perfAvailable, perfRecord, perfSymbols, untilIdle, withCpu, withSyscalls } from './perf-profile.js';

const BENCH = 'http-4KiB';
const SIZE = 4 * KiB;
const HOT_SET = envInt('BENCH_GET_HOT_SET', 4096);
/** 512 MiB of 4 KiB blobs: 8x the default readCacheBytes (64 MiB). */
const LARGE_SET = envInt('BENCH_GET_LARGE_SET', 131_072);
/** The pass over the large set before the rounds: long enough for wrk's threads to read ~all of it. */
const FIRST_READ_SECONDS = envInt('BENCH_GET_FIRST_READ_SECONDS', 15);
const PROFILE_TOP = envInt('BENCH_PROFILE_TOP', 15);
/** Each run counted for its syscalls (perf stat on every syscall tracepoint). */
const SYSCALL_SECONDS = envInt('BENCH_SYSCALL_SECONDS', 5);

type Key = 'echoGet' | 'echoPost' | 'put' | 'get' | 'getLarge';
const METRIC_NAME: Record<Key, string> = { echoGet: 'echo_get', echoPost: 'echo_post', put: 'put', get: 'get', getLarge: 'get_large' };
/** The bare server's figure each of ours is held against. */
const REFERENCE: Record<Key, string> = { echoGet: 'echo_get', echoPost: 'echo_post', put: 'echo_post', get: 'echo_get', getLarge: 'echo_get' };

async function main(): Promise<void> {
  const dir = tempDir('4k');
  const dataDir = join(dir, 'data');
  const nonce = runNonce();
  log(`${BENCH}: bulk loading ${LARGE_SET} blobs of ${SIZE} B (the large GET set)`);
  const bulk = await bulkLoad({ dataDir, count: LARGE_SET, sizeBytes: SIZE, nonce: `${nonce}b` });
  log(`${BENCH}: bulk loaded ${bulk.stored} in ${bulk.seconds.toFixed(1)} s`);
  const echo = await startEcho();
  let node: RunningProcess = await startNode(dataDir);
  const hotFile = join(dir, 'ids-hot.txt');
  const largeFile = join(dir, 'ids-all.txt');
  try {
    const echoUrl = `http://127.0.0.1:${echo.port}`;
    const nodeUrl = (): string => `http://127.0.0.1:${node.port}`;
    log(`${BENCH}: warm-up PUTs (5 s)`);
    const warm = await runWrk({ url: nodeUrl(), script: 'post-unique.lua', args: [String(SIZE), `${nonce}w`], seconds: 5 });
    const ids = await listIds(node.port, 10_000_000);
    // Ids are content hashes listed in byte order: the first HOT_SET are a random sample.
    writeFileSync(hotFile, ids.slice(0, HOT_SET).join('\n') + '\n');
    writeFileSync(largeFile, ids.join('\n') + '\n');
    log(`${BENCH}: warm-up stored ${warm.requests} blobs (${warm.errors} errors); GET sets: hot ${Math.min(HOT_SET, ids.length)}, large ${ids.length} ids`);
    await runWrk({ url: `${echoUrl}/4k`, script: 'get-static.lua', seconds: 2 });
    await runWrk({ url: nodeUrl(), script: 'get-ids.lua', args: [hotFile], seconds: 2 });
    // The log is written past the page cache (logWrites direct) and read back into it by the
    // device: one pass over the large set first, reported on its own (what the page cache does
    // not hold comes from the disk); the rounds then measure a set larger than the node's caches.
    const firstRead = await withCpu(node.pid, () => runWrk({ url: nodeUrl(), script: 'get-ids.lua', args: [largeFile], seconds: FIRST_READ_SECONDS }));
    log(`${BENCH}: first read of the large set: ${firstRead.result.rps.toFixed(0)} req/s (errors ${firstRead.result.errors}), CPU ${(firstRead.cpuUs / firstRead.result.requests).toFixed(1)} us per GET`);
    await settle(BENCH);

    const runs: Record<Key, WrkResult[]> = { echoGet: [], echoPost: [], put: [], get: [], getLarge: [] };
    // CPU microseconds per request of the answering process (all its threads), and of it in the kernel.
    const cpu: Record<Key, number[]> = { echoGet: [], echoPost: [], put: [], get: [], getLarge: [] };
    const sys: Record<Key, number[]> = { echoGet: [], echoPost: [], put: [], get: [], getLarge: [] };
    const round1 = async (key: Key, pid: number, load: () => Promise<WrkResult>): Promise<void> => {
      const r = await withCpu(pid, load);
      runs[key].push(r.result);
      cpu[key].push(r.cpuUs / r.result.requests);
      sys[key].push(r.sysUs / r.result.requests);
    };
    for (let i = 0; i < REPEATS; i++) {
      // Each figure right after its reference: a shared machine's rate can drift by a third within a minute.
      await round1('echoGet', echo.pid, () => runWrk({ url: `${echoUrl}/4k`, script: 'get-static.lua' }));
      await round1('get', node.pid, () => runWrk({ url: nodeUrl(), script: 'get-ids.lua', args: [hotFile] }));
      await round1('getLarge', node.pid, () => runWrk({ url: nodeUrl(), script: 'get-ids.lua', args: [largeFile] }));
      await round1('echoPost', echo.pid, () => runWrk({ url: echoUrl, script: 'post-unique.lua', args: [String(SIZE), `${nonce}e${i}`, '/echo'] }));
      await round1('put', node.pid, () => runWrk({ url: nodeUrl(), script: 'post-unique.lua', args: [String(SIZE), `${nonce}p${i}`] }));
      // The PUTs' own work after them (an index merge) is theirs, not the next round's.
      log(`${BENCH} round ${i + 1}/${REPEATS}: the node idle ${(await untilIdle(node.pid) / 1000).toFixed(1)} s after its PUTs`);
      log(`${BENCH} round ${i + 1}/${REPEATS}: echo GET ${runs.echoGet[i]!.rps.toFixed(0)}, echo POST ${runs.echoPost[i]!.rps.toFixed(0)}, ` +
        `node PUT ${runs.put[i]!.rps.toFixed(0)} (errors ${runs.put[i]!.errors}), node GET hot ${runs.get[i]!.rps.toFixed(0)} (errors ${runs.get[i]!.errors}), ` +
        `large ${runs.getLarge[i]!.rps.toFixed(0)} (errors ${runs.getLarge[i]!.errors}) req/s; CPU per request: echo GET ${cpu.echoGet[i]!.toFixed(1)}, ` +
        `hot ${cpu.get[i]!.toFixed(1)}, large ${cpu.getLarge[i]!.toFixed(1)}, echo POST ${cpu.echoPost[i]!.toFixed(1)}, PUT ${cpu.put[i]!.toFixed(1)} us`);
    }
    const sent = warm.requests + runs.put.reduce((a, r) => a + r.requests, 0);
    const listed = (await listIds(node.port, 10_000_000)).length;
    log(`${BENCH}: ${sent} PUTs answered, ${listed} ids stored (${bulk.stored} bulk loaded)`);
    if (listed < sent + bulk.stored) throw new Error(`${BENCH}: ${sent} PUTs answered but only ${listed - bulk.stored} of their ids stored (bodies repeated?)`);
    const common = { connections: CONNECTIONS, wrk_threads: WRK_THREADS, seconds: RUN_SECONDS, repeats: REPEATS, body_bytes: SIZE };
    const report = (metric: string, key: Key, extra: Record<string, unknown> = {}): void => {
      const rs = runs[key];
      emit({
        bench: BENCH, metric, value: round(median(rs.map((r) => r.rps)), 0), unit: 'req/s', ...common, ...extra,
        runs: rs.map((r) => round(r.rps, 0)), p50_ms: round(median(rs.map((r) => r.p50Ms))), p99_ms: round(median(rs.map((r) => r.p99Ms))),
        errors: rs.reduce((a, r) => a + r.errors, 0),
      });
    };
    report('echo_get_rps', 'echoGet');
    report('echo_post_rps', 'echoPost');
    report('put_rps', 'put');
    report('get_rps', 'get', { get_set: Math.min(HOT_SET, ids.length), note: 'hot set: answered from the read cache' });
    emit({
      bench: BENCH, metric: 'get_large_first_read_rps', value: Math.round(firstRead.result.rps), unit: 'req/s', seconds: FIRST_READ_SECONDS,
      cpu_us_per_get: round(firstRead.cpuUs / firstRead.result.requests, 1), errors: firstRead.result.errors,
      note: 'the large set read once before the rounds: what the page cache does not hold comes from the disk',
    });
    report('get_large_rps', 'getLarge', { get_set: ids.length, note: 'every stored blob in a cycle: each GET a cache miss (pread + CRC-32C check)' });
    for (const key of Object.keys(cpu) as Key[]) {
      emit({ bench: BENCH, metric: `cpu_us_per_${METRIC_NAME[key]}`, value: round(median(cpu[key]), 1), unit: 'us', runs: cpu[key].map((c) => round(c, 1)),
        kernel_us: round(median(sys[key]), 1), reference: REFERENCE[key] });
    }
    // Ratios per round (same minute), then their median.
    const putRatio = median(runs.put.map((r, i) => r.rps / runs.echoPost[i]!.rps));
    const getRatio = median(runs.get.map((r, i) => r.rps / runs.echoGet[i]!.rps));
    const largeRatio = median(runs.getLarge.map((r, i) => r.rps / runs.echoGet[i]!.rps));
    emit({ bench: BENCH, metric: 'put_vs_echo_post', value: round(putRatio), unit: 'ratio', target: '>= 0.50', pass: putRatio >= 0.5 });
    emit({ bench: BENCH, metric: 'get_vs_echo_get', value: round(getRatio), unit: 'ratio', target: '>= 0.85', pass: getRatio >= 0.85 });
    emit({ bench: BENCH, metric: 'get_large_vs_echo_get', value: round(largeRatio), unit: 'ratio', target: '>= 0.70', pass: largeRatio >= 0.7 });

    // Where the CPU goes: perf on a node started with --perf-basic-prof (JS frames by name).
    if (!(await perfAvailable())) {
      emit({ bench: BENCH, metric: 'profile', value: null, unit: '', note: 'perf not installed: no CPU profile' });
      return;
    }
    // Kernel entries per request, ours against the bare server's, outside the timed rounds.
    const counted: [Key, number, () => Promise<WrkResult>][] = [
      ['echoGet', echo.pid, () => runWrk({ url: `${echoUrl}/4k`, script: 'get-static.lua', seconds: SYSCALL_SECONDS })],
      ['get', node.pid, () => runWrk({ url: nodeUrl(), script: 'get-ids.lua', args: [hotFile], seconds: SYSCALL_SECONDS })],
      ['getLarge', node.pid, () => runWrk({ url: nodeUrl(), script: 'get-ids.lua', args: [largeFile], seconds: SYSCALL_SECONDS })],
      ['echoPost', echo.pid, () => runWrk({ url: echoUrl, script: 'post-unique.lua', args: [String(SIZE), `${nonce}se`, '/echo'], seconds: SYSCALL_SECONDS })],
      ['put', node.pid, () => runWrk({ url: nodeUrl(), script: 'post-unique.lua', args: [String(SIZE), `${nonce}sp`], seconds: SYSCALL_SECONDS })],
    ];
    for (const [key, pid, load] of counted) {
      const { result, syscalls } = await withSyscalls(pid, load);
      const per = (n: number): number => round(n / result.requests, 2);
      log(`${BENCH}: syscalls per request, ${METRIC_NAME[key]}: ${per(syscalls.total)} (` + syscalls.byName.slice(0, 6).map((c) => `${c.name} ${per(c.count)}`).join(', ') + ')');
      emit({
        bench: BENCH, metric: `syscalls_per_${METRIC_NAME[key]}`, value: per(syscalls.total), unit: 'syscalls/request', reference: REFERENCE[key],
        by_name: Object.fromEntries(syscalls.byName.slice(0, 8).map((c) => [c.name, per(c.count)])),
      });
    }
    await node.stop();
    node = await startNode(dataDir, [], ['--perf-basic-prof']);
    // The PUT last: its profile is of a node that has grown by the rounds' stores, as the rounds' median.
    const profiled: [string, string, string[]][] = [
      ['get_hot', 'get-ids.lua', [hotFile]], ['get_large', 'get-ids.lua', [largeFile]], ['put', 'post-unique.lua', [String(SIZE), `${nonce}prof`]],
    ];
    for (const [name, script, args] of profiled) {
      if (script === 'get-ids.lua') await runWrk({ url: nodeUrl(), script, args, seconds: 3 });
      const data = join(dir, `perf-${name}.data`);
      const run = await perfRecord(node.pid, data, () => runWrk({ url: nodeUrl(), script, args }));
      const symbols = await perfSymbols(data);
      log(`${BENCH}: profile ${name}: ${run.rps.toFixed(0)} req/s under perf; top: ` + symbols.slice(0, 5).map((s) => `${s.symbol.slice(0, 40)} ${s.pct}%`).join(', '));
      for (const k of byKind(symbols)) emit({ bench: BENCH, metric: `profile_${name}_kind`, value: round(k.pct, 2), unit: '%', kind: k.kind });
      symbols.slice(0, PROFILE_TOP).forEach((s, rank) => {
        emit({ bench: BENCH, metric: `profile_${name}_self`, value: s.pct, unit: '%', rank: rank + 1, symbol: s.symbol.slice(0, 120), dso: s.dso, kind: s.kind });
      });
    }
  } finally {
    await node.stop();
    await echo.stop();
    removeDir(dir);
  }
}

await main();
