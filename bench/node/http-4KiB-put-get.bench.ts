/**
 * 4 KiB durable PUT/s and GET/s at 64 connections against the bare uWS echo ceiling, same wrk,
 * same run. Rounds interleave echo and node so that load from elsewhere hits both alike; each
 * figure is the median of REPEATS runs of RUN_SECONDS.
 *
 *   warm-up PUTs (pre-populate) -> list ids -> REPEATS x [echo GET, echo POST, node PUT, node GET]
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CONNECTIONS, KiB, REPEATS, RUN_SECONDS, WRK_THREADS, emit, listIds, log, median, removeDir, round, runNonce, runWrk,
  settle, startEcho, startNode, tempDir, type WrkResult,
} from './lib.js';

const BENCH = 'http-4KiB';
const SIZE = 4 * KiB;
const GET_SET = 100_000;

async function main(): Promise<void> {
  const dir = tempDir('4k');
  const nonce = runNonce();
  const echo = await startEcho();
  const node = await startNode(join(dir, 'data'));
  try {
    const echoUrl = `http://127.0.0.1:${echo.port}`;
    const nodeUrl = `http://127.0.0.1:${node.port}`;
    log(`${BENCH}: pre-populating the GET set (5 s of PUTs)`);
    const warm = await runWrk({ url: nodeUrl, script: 'post-unique.lua', args: [String(SIZE), `${nonce}w`], seconds: 5 });
    const ids = await listIds(node.port, GET_SET);
    const idsFile = join(dir, 'ids.txt');
    writeFileSync(idsFile, ids.join('\n') + '\n');
    log(`${BENCH}: warm-up stored ${warm.requests} blobs (${warm.errors} errors); GET set ${ids.length} ids`);
    await runWrk({ url: `${echoUrl}/4k`, script: 'get-static.lua', seconds: 2 });
    await settle(BENCH);

    const runs: Record<'echoGet' | 'echoPost' | 'put' | 'get', WrkResult[]> = { echoGet: [], echoPost: [], put: [], get: [] };
    for (let i = 0; i < REPEATS; i++) {
      runs.echoGet.push(await runWrk({ url: `${echoUrl}/4k`, script: 'get-static.lua' }));
      runs.echoPost.push(await runWrk({ url: echoUrl, script: 'post-unique.lua', args: [String(SIZE), `${nonce}e${i}`, '/echo'] }));
      runs.put.push(await runWrk({ url: nodeUrl, script: 'post-unique.lua', args: [String(SIZE), `${nonce}p${i}`] }));
      runs.get.push(await runWrk({ url: nodeUrl, script: 'get-ids.lua', args: [idsFile] }));
      log(`${BENCH} round ${i + 1}/${REPEATS}: echo GET ${runs.echoGet[i]!.rps.toFixed(0)}, echo POST ${runs.echoPost[i]!.rps.toFixed(0)}, ` +
        `node PUT ${runs.put[i]!.rps.toFixed(0)} (errors ${runs.put[i]!.errors}), node GET ${runs.get[i]!.rps.toFixed(0)} (errors ${runs.get[i]!.errors}) req/s`);
    }
    const sent = warm.requests + runs.put.reduce((a, r) => a + r.requests, 0);
    const listed = (await listIds(node.port, 10 * sent)).length;
    log(`${BENCH}: ${sent} PUTs answered, ${listed} ids stored`);
    if (listed < sent) throw new Error(`${BENCH}: ${sent} PUTs answered but only ${listed} ids stored (bodies repeated?)`);
    const common = { connections: CONNECTIONS, wrk_threads: WRK_THREADS, seconds: RUN_SECONDS, repeats: REPEATS, body_bytes: SIZE };
    const rate = (key: keyof typeof runs): number => median(runs[key].map((r) => r.rps));
    const report = (metric: string, key: keyof typeof runs): void => {
      const rs = runs[key];
      emit({
        bench: BENCH, metric, value: round(rate(key), 0), unit: 'req/s', ...common,
        runs: rs.map((r) => round(r.rps, 0)), p50_ms: round(median(rs.map((r) => r.p50Ms))), p99_ms: round(median(rs.map((r) => r.p99Ms))),
        errors: rs.reduce((a, r) => a + r.errors, 0),
      });
    };
    report('echo_get_rps', 'echoGet');
    report('echo_post_rps', 'echoPost');
    report('put_rps', 'put');
    report('get_rps', 'get');
    // Ratios per round (same minute), then their median.
    const putRatio = median(runs.put.map((r, i) => r.rps / runs.echoPost[i]!.rps));
    const getRatio = median(runs.get.map((r, i) => r.rps / runs.echoGet[i]!.rps));
    emit({ bench: BENCH, metric: 'put_vs_echo_post', value: round(putRatio), unit: 'ratio', target: '>= 0.50', pass: putRatio >= 0.5 });
    emit({ bench: BENCH, metric: 'get_vs_echo_get', value: round(getRatio), unit: 'ratio', target: '>= 0.70', pass: getRatio >= 0.7 });
  } finally {
    await node.stop();
    await echo.stop();
    removeDir(dir);
  }
}

await main();
