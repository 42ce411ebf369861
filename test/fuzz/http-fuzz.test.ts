/**
 * Hostile HTTP requests against one real node per API variant: random methods, paths and ids,
 * queries, headers, JSON and raw bodies, honest and broken framing, a few at a time in parallel.
 * Every request gets an answer in time, 2xx-4xx or a spec-allowed 5xx, errors in the variant's
 * shape; after each batch the node is up, /healthz answers 200 and no upload left a temp file.
 * The metrics listener (separate for variant B, on the API port for A) gets the same treatment,
 * and afterwards /metrics still passes promtool with no new series (no request value became a
 * label) and the JSON snapshot holds only non-negative integers.
 * FUZZ_SEED and FUZZ_SECONDS (harness.ts) set the seed and the budget.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes } from '../helpers/blobs.js';
import { SPEC_NAMED_GAUGE_FINDINGS, promtoolFindings } from '../helpers/metrics.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { failure, FUZZ_NODE_ARGS, hexIdOf, judge, type Listener, send, servesVariantA } from './exchange.js';
import { describeRequest, type FuzzRequest, knownIds, opsRequestArb, requestArb } from './generators.js';
import { budgetMs, checkNode, count, fuzz, newStats, probeSurface, type Surface, testTimeout, type Variant, stopAndClean } from './harness.js';

const SHARE = 0.225;
const OPS_SHARE = 0.05;

/**
 * Sample lines of the text exposition (series), and promtool's findings beyond the four expected
 * ones of the spec-named gauges, when promtool is installed.
 */
async function exposition(metrics: Listener): Promise<{ series: number; promtool: string[] | undefined }> {
  const res = await fetch(`${metrics.url}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  // The node's own series; the runtime's (process_*, nodejs_*) grow with GC kinds and handle types.
  const series = text.split('\n').filter((l) => l.startsWith('blobstore_')).length;
  const check = await promtoolFindings(text).catch(() => undefined);
  return { series, promtool: check?.findings.filter((f) => !SPEC_NAMED_GAUGE_FINDINGS.includes(f)) };
}

/** Every number in the JSON snapshot is a non-negative integer. */
function badNumbers(value: unknown, path = ''): string[] {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? [] : [`${path} = ${value}`];
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => badNumbers(v, `${path}.${k}`));
  return [];
}

describe.each([
  { variant: 'b' as Variant, args: ['--metrics-addr', '127.0.0.1:0'] },
  { variant: 'a' as Variant, args: ['--api-variant', 'a', '--metrics-addr', 'same'] },
])('HTTP API variant $variant under random hostile requests', ({ variant, args }) => {
  let node: NodeProcess;
  let surface: Surface;
  let served = true;
  let metrics: Listener;
  let seriesBefore = 0;

  beforeAll(async () => {
    node = await startNode({ args: [...FUZZ_NODE_ARGS, ...args] });
    served = variant === 'b' || (await servesVariantA(node.url));
    surface = await probeSurface(node.url, variant);
    // A few stored blobs (one in a segment, one in its own file) so some ids exist.
    for (const data of [Buffer.from('fuzz: small'), patternBytes(40 * 1024, 7)]) {
      const res = await fetch(`${node.url}/v1/blobs`, { method: 'PUT', body: JSON.stringify({ data: data.toString('base64'), policy: 1 }), headers: { 'Content-Type': 'application/json' } });
      expect(res.status).toBeLessThan(300);
      knownIds.push(hexIdOf((await res.json()) as { id?: unknown }));
    }
    const port = Number(/metrics on http:\/\/[^\s]*:(\d+)/.exec(node.output())?.[1] ?? node.port);
    metrics = { url: `http://127.0.0.1:${port}`, port };
    seriesBefore = (await exposition(metrics)).series;
  });

  /** Sends a batch at `target` and throws on the first unacceptable outcome. */
  async function batch(target: Listener, reqs: FuzzRequest[], suite: string, stats: ReturnType<typeof newStats>): Promise<void> {
    const outcomes = await Promise.all(reqs.map((r) => send(target, r)));
    for (const [i, out] of outcomes.entries()) {
      count(stats, out.answers[0]?.status ?? (out.timedOut ? 'timeout' : 'closed'), reqs[i]!.framing, out.ms);
      if (process.env.FUZZ_DEBUG && out.ms > 3000) console.log(`slow (${out.ms} ms, ${out.answers[0]?.status ?? 'no answer'}): ${describeRequest(reqs[i]!).slice(0, 500)}`);
      const problem = judge(surface, reqs[i]!, out);
      if (problem) throw failure(problem, reqs[i]!, suite);
    }
  }

  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  it(
    'answers every request in time with 2xx-4xx or an allowed 5xx in the error shape, stays healthy and leaves no temp file',
    async (ctx) => {
      if (!served) return ctx.skip('variant A is not served yet');
      const stats = newStats();
      await fuzz(
        `http-${variant}`,
        fc.array(requestArb, { minLength: 1, maxLength: 5 }),
        async (reqs) => {
          const sent = Date.now();
          await batch(node, reqs, `http-${variant}`, stats);
          stats.msByKind.batches = (stats.msByKind.batches ?? 0) + Date.now() - sent;
          const checked = Date.now();
          await checkNode(node);
          stats.msByKind.check = (stats.msByKind.check ?? 0) + Date.now() - checked;
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`http-${variant}: ${stats.runs} batches, ${stats.requests} requests, statuses ${JSON.stringify(stats.statuses)}, ms ${JSON.stringify(stats.msByKind)}`);
    },
    testTimeout(budgetMs(SHARE)),
  );

  it.runIf(variant === 'b')(
    'the separate metrics listener answers random requests the same way (405 for other methods, 404 elsewhere)',
    async () => {
      const stats = newStats();
      await fuzz('http-metrics', fc.array(opsRequestArb, { minLength: 1, maxLength: 5 }), (reqs) => batch(metrics, reqs, 'http-metrics', stats), budgetMs(OPS_SHARE), stats);
      console.log(`http-metrics: ${stats.requests} requests, statuses ${JSON.stringify(stats.statuses)}`);
      await checkNode(node);
    },
    testTimeout(budgetMs(OPS_SHARE)),
  );

  it('afterwards the exposition passes promtool with no new series, and the JSON snapshot holds non-negative integers', async (ctx) => {
    if (!served) return ctx.skip('variant A is not served yet');
    const after = await exposition(metrics);
    if (after.promtool !== undefined) expect(after.promtool, 'promtool check metrics').toStrictEqual([]);
    // Peer and stage series may appear once; request paths, ids or headers must never become labels.
    expect(after.series).toBeLessThanOrEqual(seriesBefore + 40);
    const res = await fetch(`${metrics.url}/api/v1/metrics`);
    expect(res.status).toBe(200);
    expect(badNumbers(await res.json())).toEqual([]);
  });
});
