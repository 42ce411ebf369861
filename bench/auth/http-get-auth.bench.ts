/**
 * 4 KiB verified GET/s at 64 connections with authentication off and on (a token file of
 * BENCH_AUTH_TOKENS hashed entries, default 10; the token that passes is the last), same wrk, same run; rounds interleave the
 * two nodes so that load from elsewhere hits both alike. Each figure is the median of REPEATS
 * runs of RUN_SECONDS; a 401 would count as an error.
 *
 *   node dist/bench/auth/http-get-auth.bench.js   (BENCH_RUN_SECONDS=2 BENCH_REPEATS=1 for a smoke run)
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONNECTIONS, KiB, REPEATS, RUN_SECONDS, WRK_THREADS, emit, envInt, log, median, removeDir, round, runWrk, startNode, tempDir, type WrkResult } from '../node/lib.js';

const BENCH = 'http-4KiB-get-auth';
const SIZE = 4 * KiB;
const BLOBS = 20_000;
const TOKENS = envInt('BENCH_AUTH_TOKENS', 10);
/** wrk's scripts live in bench/node/lua; ours is one folder over. */
const SCRIPT = 'get-ids.lua';

/** Stores BLOBS random 4 KiB blobs, 32 at a time; returns their ids. */
async function populate(port: number, headers: Record<string, string>): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < BLOBS) {
      next++;
      const res = await fetch(`http://127.0.0.1:${port}/v1/blobs`, {
        method: 'POST', body: randomBytes(SIZE), headers: { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '1', ...headers },
      });
      if (res.status !== 201 && res.status !== 200) throw new Error(`store answered ${res.status}: ${await res.text()}`);
      ids.push(((await res.json()) as { id: string }).id);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return ids;
}

async function main(): Promise<void> {
  const dir = tempDir('auth');
  const token = randomBytes(32).toString('base64url');
  const tokensFile = join(dir, 'tokens.json');
  const entries = Array.from({ length: TOKENS }, (_, i) => ({
    name: `t${i}`, sha256: createHash('sha256').update(i === TOKENS - 1 ? token : randomBytes(32).toString('base64url')).digest('hex'), scopes: ['read', 'write'],
  }));
  writeFileSync(tokensFile, JSON.stringify({ tokens: entries }), { mode: 0o600 });
  const open = await startNode(join(dir, 'open'));
  const authed = await startNode(join(dir, 'auth'), ['--auth-tokens-file', tokensFile]);
  try {
    log(`${BENCH}: storing ${BLOBS} blobs of ${SIZE} bytes on each node`);
    const openIds = join(dir, 'open-ids.txt');
    const authIds = join(dir, 'auth-ids.txt');
    writeFileSync(openIds, (await populate(open.port, {})).join('\n') + '\n');
    writeFileSync(authIds, (await populate(authed.port, { authorization: `Bearer ${token}` })).join('\n') + '\n');
    const runs: Record<'open' | 'auth', WrkResult[]> = { open: [], auth: [] };
    for (let i = 0; i < REPEATS; i++) {
      runs.open.push(await runWrk({ url: `http://127.0.0.1:${open.port}`, script: SCRIPT, args: [openIds] }));
      runs.auth.push(await runWrk({ url: `http://127.0.0.1:${authed.port}`, script: SCRIPT, args: [authIds, token] }));
      log(`${BENCH} round ${i + 1}/${REPEATS}: open ${runs.open[i]!.rps.toFixed(0)} req/s (errors ${runs.open[i]!.errors}), ` +
        `auth ${runs.auth[i]!.rps.toFixed(0)} req/s (errors ${runs.auth[i]!.errors})`);
    }
    const common = { connections: CONNECTIONS, wrk_threads: WRK_THREADS, seconds: RUN_SECONDS, repeats: REPEATS, body_bytes: SIZE, tokens: TOKENS };
    const report = (metric: string, rs: WrkResult[]): number => {
      const rps = median(rs.map((r) => r.rps));
      emit({
        bench: BENCH, metric, value: round(rps, 0), unit: 'req/s', ...common, runs: rs.map((r) => round(r.rps, 0)),
        p50_ms: round(median(rs.map((r) => r.p50Ms))), p99_ms: round(median(rs.map((r) => r.p99Ms))), errors: rs.reduce((a, r) => a + r.errors, 0),
      });
      return rps;
    };
    const openRps = report('open_get_rps', runs.open);
    const authRps = report('auth_get_rps', runs.auth);
    const ratios = runs.auth.map((r, i) => r.rps / runs.open[i]!.rps);
    emit({ bench: BENCH, metric: 'auth_vs_open_ratio', value: round(median(ratios), 3), unit: 'ratio', runs: ratios.map((r) => round(r, 3)), open_rps: round(openRps, 0), auth_rps: round(authRps, 0) });
  } finally {
    await Promise.all([open.stop(), authed.stop()]);
    removeDir(dir);
  }
}

await main();
