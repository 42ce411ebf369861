/**
 * Request smuggling, with a strict parser as the oracle: the same bytes go to a node and to
 * Node's own HTTP server (llhttp, strict by default), and the node must never run a request that
 * llhttp did not see as one (src/http/framing.ts). A case is a first request with random framing
 * headers (Content-Length right, wrong, twice, empty or junk; Transfer-Encoding chunked or
 * otherwise; two Hosts), a body of chunks good and bad (extensions, spaces, bare LF, missing CRLF,
 * trailers, skipped bytes) and hidden requests placed inside and after it: `GET /fuzz/<k>` (a 404
 * that names its path) and a DELETE of a stored blob.
 */
import './fc-config.js';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, putRaw } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { rawExchange } from './http-client.js';
import { budgetMs, count, fuzz, newStats, stopAndClean, testTimeout } from './harness.js';

const SHARE = 0.1;
/** Cases sent at once. */
const PARALLEL = 16;

const VICTIM = Buffer.from('the blob a hidden DELETE would remove');

const hidden = (k: number, victim: string): string =>
  k === 0 ? `DELETE /v1/blobs/${victim} HTTP/1.1\r\nHost: x\r\n\r\n` : `GET /fuzz/${k} HTTP/1.1\r\nHost: x\r\n\r\n`;

/** One piece of a body: a chunk or a hidden request, written well or badly. */
const pieceArb: fc.Arbitrary<(victim: string) => string> = fc.oneof(
  fc.constantFrom(
    () => '5\r\nhello\r\n', () => '5;ext=1\r\nhello\r\n', () => '5 \r\nhello\r\n', () => ' 5\r\nhello\r\n', () => '5\nhello\n',
    () => '5\r\nhelloXX', () => 'A\r\n0123456789\r\n', () => 'a\r\n0123456789\r\n', () => '0x5\r\nhello\r\n', () => '0\r\n\r\n',
    () => '0\r\nX-Trailer: y\r\n\r\n', () => '0\r\nXX', () => '0\r\n', () => '\r\n', () => 'XX', () => '1\r\n',
  ),
  fc.integer({ min: 0, max: 3 }).map((k) => (victim: string) => hidden(k, victim)),
);

const headerArb = fc.constantFrom(
  'Content-Length: 0', 'Content-Length: 5', 'Content-Length: 17', 'Content-Length: 40', 'Content-Length:', 'Content-Length: 5, 5', 'Content-Length: +5',
  'Transfer-Encoding: chunked', 'Transfer-Encoding: Chunked', 'Transfer-Encoding: chunked, gzip', 'Transfer-Encoding: gzip', 'Transfer-Encoding:',
  'Host: y', 'Connection: keep-alive', 'Content-Type: application/octet-stream', 'X-Fold: a\r\n b', 'Content-Length: 5\r\n\tx',
);

interface Case {
  line: string;
  headers: string[];
  body: ((victim: string) => string)[];
  tail: number;
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  line: fc.constantFrom('GET /fuzz/9 HTTP/1.1', 'POST /v1/blobs HTTP/1.1', 'PUT /v1/blobs HTTP/1.1', 'POST /v1/blobs/stream HTTP/1.1', 'DELETE /fuzz/9 HTTP/1.1', 'POST /v1/cluster/join HTTP/1.1'),
  headers: fc.array(headerArb, { maxLength: 3 }),
  body: fc.array(pieceArb, { maxLength: 5 }),
  tail: fc.integer({ min: 0, max: 3 }),
});

function bytesOf(c: Case, victim: string): Buffer {
  return Buffer.from(`${c.line}\r\nHost: x\r\n${c.headers.map((h) => `${h}\r\n`).join('')}\r\n${c.body.map((p) => p(victim)).join('')}${hidden(c.tail, victim)}`, 'latin1');
}

/** The requests llhttp parses from `bytes` (method and path), in order. */
function strictlySeen(oracle: Server, port: number, bytes: Buffer): Promise<string[]> {
  return new Promise((resolve) => {
    const seen: string[] = [];
    // The server's end of this connection is the one whose peer port is this socket's own.
    const onRequest = (req: { method?: string; url?: string; socket: { remotePort?: number } }): void => {
      if (req.socket.remotePort === socket.localPort) seen.push(`${req.method} ${req.url}`);
    };
    oracle.on('request', onRequest);
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    const done = (): void => {
      oracle.off('request', onRequest);
      socket.destroy();
      resolve(seen);
    };
    socket.on('close', done);
    setTimeout(done, 2000);
  });
}

describe('request smuggling against a strict parser', () => {
  let node: NodeProcess;
  let oracle: Server;
  let oraclePort: number;
  let victim: string;

  beforeAll(async () => {
    node = await startNode();
    victim = await expectedId(VICTIM);
    oracle = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
      req.on('error', () => undefined);
    });
    oracle.on('clientError', (_err, socket) => socket.destroy());
    await new Promise<void>((resolve) => oracle.listen(0, '127.0.0.1', resolve));
    oraclePort = (oracle.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => oracle.close(resolve));
    expect(await stopAndClean(node)).toBe(0);
  });

  it(
    'the node runs only requests that llhttp sees as requests; a hidden DELETE never removes the blob',
    async () => {
      const stats = newStats();
      await fuzz(
        'smuggling',
        fc.array(caseArb, { minLength: PARALLEL, maxLength: PARALLEL }),
        async (cases) => {
          expect((await putRaw(node.url, VICTIM)).ok).toBe(true);
          const runs = await Promise.all(cases.map(async (c) => {
            const bytes = bytesOf(c, victim);
            const [seen, out] = await Promise.all([
              strictlySeen(oracle, oraclePort, bytes),
              rawExchange(node.port, bytes, { timeoutMs: 800, settleMs: 150 }),
            ]);
            return { c, bytes, seen, out };
          }));
          const deleted = (await fetch(`${node.url}/v1/blobs/${victim}`, { method: 'HEAD' })).status === 404;
          let deletesSeen = 0;
          for (const { bytes, seen, out } of runs) {
            count(stats, out.answers[0]?.status ?? 'none');
            const ran = out.answers.flatMap((a) => /no route for (\/fuzz\/\d+)/.exec(a.body.toString())?.[1] ?? []);
            for (const path of ran) {
              if (!seen.includes(`GET ${path}`) && !seen.includes(`DELETE ${path}`)) {
                throw new Error(`the node ran ${path}, which llhttp did not see as a request (it saw ${JSON.stringify(seen)})\nbytes: ${JSON.stringify(bytes.toString('latin1'))}`);
              }
            }
            deletesSeen += seen.filter((s) => s === `DELETE /v1/blobs/${victim}`).length;
          }
          if (deleted && deletesSeen === 0) {
            throw new Error(`a hidden DELETE removed the blob, and llhttp saw none:\n${runs.map((r) => JSON.stringify(r.bytes.toString('latin1'))).join('\n')}`);
          }
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`smuggling: ${stats.runs} runs, ${stats.requests} cases, first answers ${JSON.stringify(stats.statuses)}`);
    },
    testTimeout(budgetMs(SHARE)),
  );
});
