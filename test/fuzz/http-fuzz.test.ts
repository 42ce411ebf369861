/**
 * Hostile HTTP requests against one real node per API variant: random methods, paths and ids,
 * queries, headers, JSON and raw bodies, honest and broken framing, a few at a time in parallel.
 * Every request gets an answer in time, 2xx-4xx or a spec-allowed 5xx, errors in the variant's
 * shape; after each batch the node is up, /healthz answers 200 and no upload left a temp file.
 * FUZZ_SEED and FUZZ_SECONDS (harness.ts) set the seed and the budget.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { failure, FUZZ_NODE_ARGS, hexIdOf, judge, send, servesVariantA } from './exchange.js';
import { describeRequest, knownIds, requestArb } from './generators.js';
import { budgetMs, checkNode, count, fuzz, newStats, probeSurface, type Surface, testTimeout, type Variant } from './harness.js';

const SHARE = 0.25;

describe.each([
  { variant: 'b' as Variant, args: [] as string[] },
  { variant: 'a' as Variant, args: ['--api-variant', 'a'] },
])('HTTP API variant $variant under random hostile requests', ({ variant, args }) => {
  let node: NodeProcess;
  let surface: Surface;
  let served = true;

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
  });

  afterAll(async () => {
    expect(await node.stop()).toBe(0);
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
          const outcomes = await Promise.all(reqs.map((r) => send(node, r)));
          stats.msByKind.batches = (stats.msByKind.batches ?? 0) + Date.now() - sent;
          for (const [i, out] of outcomes.entries()) {
            count(stats, out.answers[0]?.status ?? (out.timedOut ? 'timeout' : 'closed'), reqs[i]!.framing, out.ms);
            if (process.env.FUZZ_DEBUG && out.ms > 3000) console.log(`slow (${out.ms} ms, ${out.answers[0]?.status ?? 'no answer'}): ${describeRequest(reqs[i]!).slice(0, 500)}`);
            const problem = judge(surface, reqs[i]!, out);
            if (problem) throw failure(problem, reqs[i]!, `http-${variant}`);
          }
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
});
