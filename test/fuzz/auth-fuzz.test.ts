/**
 * Hostile requests with hostile credentials against a node with a token file (metrics on the API
 * port). Whatever the request, a protected route never answers 2xx without a bearer token that
 * has the route's scope (admin grants all): no valid token is 401, a token without the scope is
 * 403, and a token with it is never refused as such. Plus the usual: answers in time, error
 * shape, no 5xx.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { failure, FUZZ_NODE_ARGS, judge, send } from './exchange.js';
import { chunkedRefused, type FuzzRequest, MALFORMED_FRAMINGS, malformedField, malformedTarget, requestArb } from './generators.js';
import { budgetMs, checkNode, count, fuzz, newStats, probeSurface, type Surface, testTimeout, stopAndClean } from './harness.js';

const SHARE = 0.05;
type Scope = 'read' | 'write' | 'admin';

const TOKENS: Record<string, Scope[]> = {
  'fuzz-read-9f8a7b6c5d4e3f2a1b0c': ['read'],
  'fuzz-write-1a2b3c4d5e6f7a8b9c0d': ['write'],
  'fuzz-admin-0d9c8b7a6f5e4d3c2b1a': ['admin'],
  'fuzz-rw-5e4d3c2b1a0f9e8d7c6b': ['read', 'write'],
};
const NAMES = Object.keys(TOKENS);

/** The scope a request needs, or undefined where the oracle does not apply. */
function neededScope(method: string, target: string): Scope | undefined {
  const path = target.split('?', 1)[0]!;
  if (/^\/v1\/cluster\/./.test(path)) return 'admin';
  if (path === '/v1/blobs') return method === 'GET' ? 'read' : method === 'POST' || method === 'PUT' ? 'write' : undefined;
  if (path === '/v1/blobs/stream' && method === 'POST') return 'write';
  if (/^\/v1\/blobs\/[^/]+\/(stat|stream)$/.test(path)) return method === 'GET' ? 'read' : undefined;
  if (/^\/v1\/blobs\/[^/]+$/.test(path)) return method === 'GET' || method === 'HEAD' ? 'read' : method === 'DELETE' ? 'write' : undefined;
  if (path === '/metrics' || path === '/api/v1/metrics') return method === 'GET' ? 'read' : undefined;
  return undefined;
}

/** RFC 6750: scheme case-insensitive, spaces, exactly one visible-ASCII token. */
const tokenOf = (header: string): string | undefined => /^[ \t]*bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(header)?.[1];

const authArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...NAMES), fc.constantFrom('Bearer ', 'bearer ', 'BEARER  ', ' Bearer\t', 'Bearer')).map(([t, p]) => `${p}${t}`) },
  {
    weight: 3,
    arbitrary: fc.tuple(fc.constantFrom(...NAMES), fc.nat()).map(([t, n]) =>
      [`Bearer ${t}x`, `Bearer ${t.slice(0, -1)}`, `Bearer ${t} ${t}`, `Basic ${t}`, `Bearer ${t.toUpperCase()}`, `Bearer "${t}"`, `Token ${t}`, `${t}`, `Bearer ${t},`][n % 9]!,
    ),
  },
  { weight: 2, arbitrary: fc.oneof(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }), fc.constantFrom('', 'Bearer', 'Bearer ', 'x'.repeat(8000), `Bearer ${'a'.repeat(8000)}`)) },
);

describe('bearer authentication under hostile requests and credentials', () => {
  let node: NodeProcess;
  let surface: Surface;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'blobstore-fuzz-auth-'));
    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify({ tokens: Object.entries(TOKENS).map(([token, scopes], i) => ({ name: `t${i}`, token, scopes })) }), { mode: 0o600 });
    node = await startNode({ args: [...FUZZ_NODE_ARGS, '--auth-tokens-file', file, '--metrics-addr', 'same'] });
    surface = await probeSurface(node.url, 'b');
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'no 2xx on a protected route without a token that has its scope: 401 without one, 403 without the scope',
    async () => {
      const stats = newStats();
      await fuzz(
        'auth',
        fc.array(fc.tuple(requestArb, authArb), { minLength: 1, maxLength: 5 }),
        async (pairs) => {
          const reqs: FuzzRequest[] = pairs.map(([r, auth]) => ({
            ...r,
            headers: [...r.headers.filter(([k]) => k.toLowerCase() !== 'authorization'), ...(auth === undefined ? [] : ([['Authorization', auth]] as [string, string][]))],
          }));
          const outcomes = await Promise.all(reqs.map((r) => send(node, r)));
          for (const [i, out] of outcomes.entries()) {
            const req = reqs[i]!;
            const auth = pairs[i]![1];
            const a = out.answers[0];
            count(stats, a?.status ?? 'none');
            const problem = judge(surface, req, out);
            if (problem) throw failure(problem, req, 'auth');
            const scope = neededScope(req.method, req.target);
            if (!a || scope === undefined || MALFORMED_FRAMINGS.has(req.framing) || chunkedRefused(req) || malformedTarget(req.target) || malformedField(req)) continue;
            const token = auth === undefined ? undefined : tokenOf(auth);
            const scopes = token === undefined ? undefined : TOKENS[token];
            // src/auth: admin grants every scope.
            const want = scopes === undefined ? 401 : scopes.includes(scope) || scopes.includes('admin') ? 'allowed' : 403;
            const wrong = want === 'allowed' ? a.status === 401 || a.status === 403 : a.status !== want;
            if (wrong) throw failure(`${req.method} needs ${scope}; Authorization ${JSON.stringify(auth?.slice(0, 80))}: expected ${want}, got ${a.status}`, req, 'auth');
          }
          await checkNode(node);
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`auth: ${stats.requests} requests, statuses ${JSON.stringify(stats.statuses)}`);
    },
    testTimeout(budgetMs(SHARE)),
  );
});
