/**
 * What every fuzz suite shares: the seed and time budget, the runner around fast-check, the
 * verdict on one answer (status, error shape) and the checks between runs (the node is alive,
 * /healthz answers 200, no upload left a temp file).
 *
 *   FUZZ_SEED     seed of every property (default below); printed with any failure
 *   FUZZ_SECONDS  time budget of all fuzz files together (default 45); each file takes a share
 *   FUZZ_SHRINK   1: shrink a failing case (slow: every shrink step talks to the node)
 *   FUZZ_SUMMARY  a file to append one JSON line per property to (bench/fuzz/run.sh)
 *   FUZZ_KNOWN    comma-separated tags of known bugs to tolerate while looking for others
 *                 (a check that tolerates one asks known(tag)); by default nothing is tolerated
 *   FUZZ_DEBUG    1: log requests that took over 3 s
 */
import { appendFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { NodeProcess } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import type { Answer, Outcome } from './http-client.js';

export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20261123);
export const FUZZ_SECONDS = Number(process.env.FUZZ_SECONDS ?? 45);

/** Appends one JSON line to FUZZ_SUMMARY (bench/fuzz/run.sh collects them), when it is set. */
export function report(line: Record<string, unknown>): void {
  if (process.env.FUZZ_SUMMARY) appendFileSync(process.env.FUZZ_SUMMARY, JSON.stringify(line) + '\n');
}

/** This property's share of the budget, in ms (`share` of FUZZ_SECONDS). */
export function budgetMs(share: number): number {
  return Math.max(1000, Math.round(FUZZ_SECONDS * share * 1000));
}

/** A vitest timeout for a property of `ms`, with room for start-up and the checks after it. */
export const testTimeout = (ms: number): number => ms + 60_000;

export type Variant = 'a' | 'b';

const KNOWN = new Set((process.env.FUZZ_KNOWN ?? '').split(',').filter(Boolean));
/** Whether the known bug `tag` is to be tolerated (FUZZ_KNOWN). */
export const known = (tag: string): boolean => KNOWN.has(tag);

export interface Stats {
  runs: number;
  requests: number;
  statuses: Record<string, number>;
  /** Milliseconds spent per kind of request (where the budget goes). */
  msByKind: Record<string, number>;
}

export const newStats = (): Stats => ({ runs: 0, requests: 0, statuses: {}, msByKind: {} });

export function count(stats: Stats, key: string | number, kind?: string, ms?: number): void {
  stats.requests++;
  stats.statuses[key] = (stats.statuses[key] ?? 0) + 1;
  if (kind !== undefined && ms !== undefined) stats.msByKind[kind] = (stats.msByKind[kind] ?? 0) + ms;
}

/**
 * Runs `property` with the shared seed until its budget is spent (or it fails). A failure throws
 * with the seed, the counterexample and how to replay it.
 */
export async function fuzz<T>(name: string, arb: fc.Arbitrary<T>, property: (value: T) => Promise<void>, ms: number, stats: Stats): Promise<void> {
  const started = Date.now();
  // The run in progress when the budget ends is cut off by fast-check, not finished: it is
  // awaited below, so a request that hangs past the budget still fails the suite.
  let current: Promise<void> = Promise.resolve();
  let lastValue: T | undefined;
  const details = await fc.check(
    fc.asyncProperty(arb, async (value) => {
      stats.runs++;
      lastValue = value;
      current = property(value);
      await current;
    }),
    {
      seed: FUZZ_SEED,
      numRuns: Number.MAX_SAFE_INTEGER,
      interruptAfterTimeLimit: ms,
      markInterruptAsFailure: false,
      endOnFailure: process.env.FUZZ_SHRINK !== '1',
    },
  );
  let problem: string | undefined;
  if (details.failed) {
    const error = details.errorInstance as Error | undefined;
    problem =
      `${name}: failed after ${stats.runs} runs (FUZZ_SEED=${FUZZ_SEED}; fast-check seed ${details.seed} ` +
      `path ${details.counterexamplePath})\n${error?.message ?? String(error)}\n` +
      `counterexample: ${fc.stringify(details.counterexample).slice(0, 1500)}`;
  } else if (details.interrupted) {
    try {
      await current;
    } catch (err) {
      problem =
        `${name}: the run in progress when the budget ended failed (FUZZ_SEED=${FUZZ_SEED})\n${(err as Error).message}\n` +
        `value: ${fc.stringify(lastValue).slice(0, 1500)}`;
    }
  }
  const seconds = (Date.now() - started) / 1000;
  const summary = { suite: name, seed: FUZZ_SEED, seconds, runs: stats.runs, requests: stats.requests, failed: problem !== undefined, statuses: stats.statuses, msByKind: stats.msByKind };
  report(summary);
  if (problem) throw new Error(problem);
  if (stats.runs === 0) throw new Error(`${name}: no run completed within ${ms} ms`);
}

/** The spec's routes and the methods each answers; a 501 is allowed elsewhere on these paths. */
const ROUTES: { pattern: RegExp; methods: string[]; name: string }[] = [
  { name: 'blobs', pattern: /^\/v1\/blobs$/, methods: ['GET', 'POST', 'PUT'] },
  { name: 'put-stream', pattern: /^\/v1\/blobs\/stream$/, methods: ['POST'] },
  { name: 'get-stream', pattern: /^\/v1\/blobs\/[^/]+\/stream$/, methods: ['GET'] },
  { name: 'stat', pattern: /^\/v1\/blobs\/[^/]+\/stat$/, methods: ['GET'] },
  { name: 'blob', pattern: /^\/v1\/blobs\/[^/]+$/, methods: ['GET', 'HEAD', 'DELETE'] },
];

/**
 * What a node serves, found by asking it once (routes land while this suite is in use): a route
 * whose spec method answers 501 has no handler yet, and any 501 on it is allowed.
 */
export interface Surface {
  variant: Variant;
  unimplemented: Set<string>;
}

export async function probeSurface(url: string, variant: Variant): Promise<Surface> {
  const unimplemented = new Set<string>();
  const id = '00'.repeat(16);
  const probes: [string, string, string][] = [
    ['put-stream', 'POST', '/v1/blobs/stream'],
    ['get-stream', 'GET', `/v1/blobs/${id}/stream`],
    ['stat', 'GET', `/v1/blobs/${id}/stat`],
  ];
  for (const [name, method, path] of probes) {
    const res = await fetch(url + path, { method, body: method === 'POST' ? '' : undefined });
    await res.arrayBuffer();
    if (res.status === 501) unimplemented.add(name);
  }
  return { variant, unimplemented };
}

function pathOf(target: string): string {
  const q = target.indexOf('?');
  return q < 0 ? target : target.slice(0, q);
}

/** Why a 5xx answer to `method target` is allowed by the spec, or undefined when it is a bug. */
function allowed5xx(surface: Surface, method: string, target: string, answer: Answer): string | undefined {
  const path = pathOf(target);
  if (answer.status === 501) {
    if (path.startsWith('/v1/cluster/')) return 'cluster routes have no handler yet';
    const route = ROUTES.find((r) => r.pattern.test(path));
    if (route && !route.methods.includes(method)) return 'known path, method it lacks';
    if (route && surface.unimplemented.has(route.name)) return 'route not implemented yet';
    // `/v1/blobs/stream` with another method falls to the `/v1/blobs/{id}` route.
    if (path === '/v1/blobs/stream' && !['GET', 'HEAD', 'DELETE'].includes(method)) return 'known path, method it lacks';
  }
  if (answer.status === 500 && method === 'POST' && path === '/v1/blobs/stream' && /ended before/.test(answer.body.toString('utf8'))) {
    return 'put stream ended before its final chunk';
  }
  return undefined;
}

function describeAnswer(a: Answer): string {
  return `${a.status} ${[...a.headers].map(([k, v]) => `${k}: ${v}`).join('; ')} | ${a.body.toString('latin1', 0, 300)}`;
}

/** Checks the error body of a variant; returns a problem or undefined. */
export function errorShapeProblem(variant: Variant, a: Answer): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(a.body.toString('utf8'));
  } catch {
    return 'error body is not JSON';
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'error body is not a JSON object';
  const { code, message, error } = body as Record<string, unknown>;
  if (typeof message !== 'string') return 'error body has no string "message"';
  if (variant === 'b') {
    if (code !== a.status) return `variant B error "code" ${JSON.stringify(code)} is not the HTTP status ${a.status}`;
    if (typeof error !== 'string') return 'variant B error body has no string "error"';
  } else if (typeof code !== 'number' || !Number.isInteger(code) || code < 1 || code > 16) {
    return `variant A error "code" ${JSON.stringify(code)} is not a gRPC code (1-16)`;
  }
  if (!/^application\/json/i.test(a.headers.get('content-type') ?? '')) return 'error answer is not application/json';
  return undefined;
}

/**
 * A hang detector, not a speed test: far longer than any wait a well-formed request may see
 * (body idle timeout 1 s + the 1 s sweep), even on a busy machine.
 */
export const SLOW_MS = 10_000;

export interface Judged {
  method: string;
  target: string;
  /**
   * The request breaks HTTP framing (or uses a method uWS's parser refuses): no answer (a close,
   * or uWS waiting for its idle timeout) is allowed.
   */
  malformed: boolean;
  head?: boolean;
}

/**
 * The verdict on one exchange: undefined when it is acceptable, else what is wrong. Acceptable:
 * an answer in time, 2xx-4xx or a spec-allowed 5xx, error bodies in the variant's shape; a close
 * without an answer only for malformed requests.
 */
export function verdict(surface: Surface, req: Judged, out: Outcome): string | undefined {
  if (out.trailing.length > 0) {
    return `bytes after the last answer${req.head ? ' (a HEAD answer with a body?)' : ''}: ${out.trailing.toString('latin1', 0, 300)}`;
  }
  if (out.answers.length === 0) {
    if (req.malformed) return undefined;
    if (out.timedOut) return `no answer within ${out.ms} ms`;
    if (!out.resetWhileSending) return 'connection closed without an answer';
    return undefined;
  }
  if (!req.malformed && out.ms > SLOW_MS) return `the answer took ${out.ms} ms (more than ${SLOW_MS} ms)`;
  for (const [i, a] of out.answers.entries()) {
    // Later answers belong to bytes after a short Content-Length: their request is unknown.
    const method = i === 0 ? req.method : '?';
    if (a.status >= 500) {
      const why = i === 0 ? allowed5xx(surface, method, req.target, a) : a.status === 501 ? 'pipelined junk' : undefined;
      if (!why) return `answer ${i + 1}: ${describeAnswer(a)}`;
    }
    if (a.status >= 400 && !(i === 0 && req.head)) {
      const problem = errorShapeProblem(surface.variant, a);
      if (problem) return `answer ${i + 1}: ${problem}: ${describeAnswer(a)}`;
    }
    if (i === 0 && req.head && a.body.length > 0) return 'HEAD answer has a body';
  }
  return undefined;
}

export function tmpFiles(node: NodeProcess): string[] {
  return readdirSync(join(node.dataDir, 'tmp'));
}

/** Throws unless the node process runs, answers /healthz 200, and (after a settle time) has no temp files. */
export async function checkNode(node: NodeProcess, settleMs = 5000): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) {
    throw new Error(`node exited (${node.child.exitCode ?? node.child.signalCode}):\n${node.output().slice(-3000)}`);
  }
  const res = await fetch(`${node.url}/healthz`, { signal: AbortSignal.timeout(5000) });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
  await waitFor(() => tmpFiles(node).length === 0, { what: () => `no temp files left in ${node.dataDir}/tmp: ${tmpFiles(node).join(', ')}`, timeoutMs: settleMs });
}

/** Fails when the node wrote a stack trace or an unhandled error to its output. */
export function crashSigns(output: string): string | undefined {
  const m = /(Unhandled|uncaught|TypeError|RangeError|ReferenceError|FATAL|Segmentation|Assertion)[^\n]*/i.exec(output);
  return m ? m[0] : undefined;
}

/** Stops a node (SIGTERM) and removes its data dir; resolves with the exit code. */
export async function stopAndClean(node: { stop(): Promise<number | null>; dataDir: string } | { stop(): Promise<number | null>; node: NodeProcess }): Promise<number | null> {
  const code = await node.stop();
  rmSync('dataDir' in node ? node.dataDir : node.node.dataDir, { recursive: true, force: true });
  return code;
}
