/**
 * Where the 4 KiB PUT and GET allocate: a node in this process, V8's sampling heap profiler with
 * the objects young and old collections took counted too, while wrk drives it; bytes per request
 * by allocation site (JSON lines), the sites ours or Node's. test/get-alloc.test.ts holds the
 * totals (GET: nothing of ours; PUT: a ceiling); this says what the PUT's are.
 *   node dist/bench/node/alloc-profile.js      (BENCH_RUN_SECONDS: the measured seconds, default 10)
 * BENCH_ALLOC_OPS=put,get,get_large picks the loads; BENCH_ALLOC_CALLERS=1 names each site with its
 * caller too (`caller < site`), to tell the allocations of one function's callees apart.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/log/logger.js';
import { startNode } from '../../src/node.js';
import { emit, freePort, log, removeDir, round, runNonce, runWrk, tempDir } from './lib.js';

const BENCH = 'alloc-profile';
const SECONDS = Number(process.env.BENCH_RUN_SECONDS ?? 10);
/** One sample per this many bytes allocated (V8's default is 32 KiB: too coarse for per-request sites). */
const SAMPLING_BYTES = 256;
const TOP_SITES = 15;
const OPS = (process.env.BENCH_ALLOC_OPS ?? 'put,get,get_large').split(',');
const CALLERS = process.env.BENCH_ALLOC_CALLERS === '1';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Sampled bytes by allocation site (function, file's last two path parts, line). */
function bySite(head: ProfileNode): Map<string, number> {
  const sites = new Map<string, number>();
  const name = (n: ProfileNode): string => {
    const f = n.callFrame;
    return `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
  };
  const walk = (n: ProfileNode, caller: string): void => {
    const own = name(n);
    const site = CALLERS ? `${caller} < ${own}` : own;
    sites.set(site, (sites.get(site) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c, own);
  };
  walk(head, '(root)');
  return sites;
}

async function main(): Promise<void> {
  const dir = tempDir('alloc');
  const port = await freePort();
  const config = loadConfig({
    flags: { dataDir: join(dir, 'data'), nodeId: 'alloc-profile', listen: `127.0.0.1:${port}`, metricsAddr: '', grpcAddr: '' },
    env: {},
    file: '/nonexistent/blobstore-bench.json',
  });
  const node = await startNode(config, silentLogger());
  const session = new Session();
  session.connect();
  const url = `http://127.0.0.1:${port}/v1/blobs`;
  const nonce = runNonce();
  try {
    // PUTs of 4 KiB bodies unlike any before, then GETs of 4096 of the ids they stored (cached
    // after two reads), then GETs of every id in turn (far more than the read cache holds: reads
    // from the segments, each checked against its CRC).
    const idsFile = join(dir, 'ids.txt');
    for (const op of ['put', 'get', 'get_large'] as const) {
      if (!OPS.includes(op)) continue;
      const load = (seconds: number, tag: string) =>
        op === 'put'
          ? runWrk({ url, script: 'post-unique.lua', args: ['4096', `${nonce}${tag}`], seconds, threads: 1, connections: 32 })
          : runWrk({ url: `http://127.0.0.1:${port}`, script: 'get-ids.lua', args: [idsFile], seconds, threads: 1, connections: 32 });
      if (op !== 'put') {
        const want = op === 'get' ? 4096 : Infinity;
        const ids: string[] = [];
        for (let cursor = ''; ids.length < want;) {
          const page = (await (await fetch(`${url}?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)).json()) as { ids: string[]; next_cursor?: string };
          ids.push(...page.ids);
          if (!page.next_cursor) break;
          cursor = page.next_cursor;
        }
        writeFileSync(idsFile, ids.slice(0, want).join('\n') + '\n');
        log(`${BENCH} ${op}: ${Math.min(ids.length, want)} ids`);
      }
      await load(3, 'warm');
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: SAMPLING_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true,
      });
      const run = await load(SECONDS, 'run');
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: ProfileNode } };
      const sites = bySite(profile.head);
      const total = [...sites.values()].reduce((a, b) => a + b, 0);
      log(`${BENCH} ${op}: ${run.requests} requests, ${(total / run.requests).toFixed(0)} sampled bytes per request`);
      emit({ bench: BENCH, metric: op === 'get_large' ? 'get_large_4KiB_bytes_per_request' : `${op}_4KiB_bytes_per_request`, value: round(total / run.requests, 0), unit: 'B', requests: run.requests, sampling_bytes: SAMPLING_BYTES });
      const top = [...sites].sort((a, b) => b[1] - a[1]).slice(0, TOP_SITES);
      for (const [site, bytes] of top) {
        emit({ bench: BENCH, metric: `${op}_site`, value: round(bytes / run.requests, 0), unit: 'B/request', site });
      }
    }
  } finally {
    session.disconnect();
    await node.stop();
    removeDir(dir);
  }
}

await main();
process.exit(0);
