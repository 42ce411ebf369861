/**
 * Malformed request heads (bad request lines and versions, missing or doubled Host, broken header
 * lines, bare LF or CR, obs-fold, NUL bytes, too many or too long headers, odd Transfer-Encoding,
 * heads that never end), many connections at once. Each is answered (4xx or an allowed 5xx, in
 * the error shape) or closed within uWS's ~10 s timeout; nothing stays open; ordinary requests are
 * served meanwhile and the node stays healthy.
 */
import './fc-config.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putRaw } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { type Held, open, sleep } from '../load/connections.js';
import { FUZZ_NODE_ARGS } from './exchange.js';
import { checkNode, FUZZ_SECONDS, FUZZ_SEED, probeSurface, report, type Surface, verdict, stopAndClean } from './harness.js';
import { waitFor } from '../helpers/wait.js';

/** uWS's fixed 10 s idle timeout plus its 4 s timer granularity, with a margin. */
const UWS_CLOSE_MS = 16_000;
/** Connections per round; `make bench` (FUZZ_SECONDS) runs more rounds. */
const PER_ROUND = 80;
const ROUNDS = Math.max(1, Math.floor(FUZZ_SECONDS / 45));

/** Mostly well-formed parts, so that many heads break in one place only. */
const often = <T>(good: T[], bad: T[]): fc.Arbitrary<T> =>
  fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...good) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });
const token = often(['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS'], ['FOO', 'get', '', 'G ET', 'POST\t']);
const target = often(['/v1/blobs', '/healthz', '/v1/blobs/' + '0'.repeat(32), '/v1/cluster/state'], ['*', 'http://x/v1/blobs', 'x:80', '', '/v1/blobs?x=\u0000', '/a b', '/\u00ff']);
const version = often(['HTTP/1.1'], ['HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'http/1.1', 'HTTP/1.10', 'HTTP/0.9', '', 'HTTP/1.1 ']);

const headerLine: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom('Accept: */*', 'Content-Length: 5', 'Content-Type: application/json', 'Expect: 100-continue', 'Connection: close', 'X-Unicode: \u00fc', 'Host: y'),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom('Host : x', 'Host:', 'No-Colon', ': empty-name', ' folded-continuation', '\tfolded', 'X-Nul: a\u0000b', 'X-Cr: a\rb', 'Content-Length: -1', 'Content-Length: 1e3', 'Transfer-Encoding: chunked, gzip', 'Transfer-Encoding: gzip', 'Transfer-Encoding: Chunked', 'Transfer-Encoding:  chunked', 'Transfer-Encoding: identity', 'Connection: keep-alive, Upgrade', 'Upgrade: websocket'),
  },
  { weight: 1, arbitrary: fc.integer({ min: 4000, max: 70_000 }).map((n) => `X-Huge: ${'h'.repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 45, max: 120 }).map((n) => Array.from({ length: n }, (_, i) => `X-Many-${i}: v`).join('\r\n')) },
);

/** Host first (absent now and then: uWS waits for it), then a few more lines. */
const headerLines: fc.Arbitrary<string[]> = fc
  .tuple(often(['Host: x'], ['']), fc.array(headerLine, { maxLength: 3 }))
  .map(([host, rest]) => (host ? [host, ...rest] : rest));

interface Head {
  line: string;
  headers: string[];
  eol: string;
  end: 'whole' | 'unfinished' | 'body-junk';
}

const headArb: fc.Arbitrary<Head> = fc.record({
  line: fc.tuple(token, target, version).map(([m, t, v]) => `${m} ${t} ${v}`.trimEnd()),
  headers: headerLines,
  eol: often(['\r\n'], ['\n', '\r']),
  end: often<Head['end']>(['whole'], ['unfinished', 'body-junk']),
});

function render(h: Head): Buffer {
  const lines = [h.line, ...h.headers];
  const head = lines.join(h.eol) + h.eol;
  if (h.end === 'unfinished') return Buffer.from(head, 'utf8');
  return Buffer.from(head + h.eol + (h.end === 'body-junk' ? 'zz\r\n\u0000\u00ff' : ''), 'utf8');
}

describe('malformed request heads', () => {
  let node: NodeProcess;
  let surface: Surface;
  beforeAll(async () => {
    node = await startNode({ args: FUZZ_NODE_ARGS });
    surface = await probeSurface(node.url, 'b');
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  it(
    `${PER_ROUND} malformed heads at once (x${ROUNDS}): each answered in the error shape or closed within ~10 s; ordinary requests still served`,
    async () => {
      const heads = fc.sample(headArb, { seed: FUZZ_SEED, numRuns: PER_ROUND * ROUNDS });
      let totalAnswered = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const batch = heads.slice(round * PER_ROUND, (round + 1) * PER_ROUND);
        const conns: Held[] = await Promise.all(batch.map((h) => open(node.port, render(h))));
        // Ordinary requests while the malformed ones are pending: answered alongside them.
        for (let i = 0; i < 5; i++) {
          expect((await putRaw(node.url, Buffer.from(`framing round ${round} probe ${i}`))).status).toBeLessThan(300);
          await sleep(100); // time is the subject: the probes spread over the span the malformed heads are pending
        }
        const pending = conns.filter((c) => !c.closed() && !c.answer()).length;
        try {
          await waitFor(() => conns.every((c) => c.closed() || c.answer() !== undefined), { what: 'every malformed head answered or closed', timeoutMs: UWS_CLOSE_MS });
        } catch (err) {
          const open = batch.filter((_, i) => !conns[i]!.closed() && !conns[i]!.answer());
          throw new Error(`${(err as Error).message}; still open: ${open.map((h) => JSON.stringify(render(h).toString('latin1').slice(0, 120))).join(', ')}`);
        }
        for (const [i, c] of conns.entries()) {
          const a = c.answer();
          if (!a) continue;
          const line = batch[i]!.line.split(' ');
          const problem = verdict(surface, { method: line[0]!, target: line[1] ?? '', malformed: true, head: line[0] === 'HEAD' }, { answers: [a], closed: c.closed(), timedOut: false, trailing: Buffer.alloc(0), ms: 0 });
          if (problem) throw new Error(`${problem}\nhead: ${JSON.stringify(render(batch[i]!).toString('latin1').slice(0, 300))}`);
        }
        for (const c of conns) c.close();
        const answered = conns.filter((c) => c.answer()).length;
        console.log(`framing round ${round + 1}/${ROUNDS}: ${answered} answered, ${conns.length - answered} closed without an answer; ${pending} were pending while ordinary puts were served`);
        totalAnswered += answered;
      }
      report({ suite: 'framing', seed: FUZZ_SEED, rounds: ROUNDS, connections: heads.length, answered: totalAnswered, closedWithoutAnswer: heads.length - totalAnswered });
      await checkNode(node);
    },
    ROUNDS * (UWS_CLOSE_MS + 10_000) + 30_000,
  );
});
