/**
 * Strict framing on every listener (src/http/framing.ts, README "Limits"): a request whose body
 * framing a strict HTTP/1.1 parser would refuse is answered 400 and its connection closed before
 * any route runs, and nothing after it on the connection is ever run as a request. Raw sockets,
 * since no ordinary client sends these; on both API variants and on the metrics listener.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Outcome, rawExchange } from './fuzz/http-client.js';
import { expectedId, putRaw } from './helpers/blobs.js';
import { startMetricsNode } from './helpers/metrics.js';
import type { NodeProcess } from './helpers/node-process.js';
import { type OrdersProcess, removeDir, startOrders } from './orders/helpers.js';

/** Well below uWS's 10 s idle timeout: a close within it is the node closing at once. */
const AT_ONCE_MS = 5000;

const head = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;

/** Heads a strict parser refuses (RFC 9112 §6.3), each with the reason the answer gives. */
const AMBIGUOUS: [string, string[], RegExp][] = [
  ['two equal Content-Lengths', ['Content-Length: 0', 'Content-Length: 0'], /more than one Content-Length/],
  ['two different Content-Lengths', ['Content-Length: 0', 'Content-Length: 5'], /more than one Content-Length/],
  ['an empty Content-Length', ['Content-Length:'], /empty Content-Length/],
  ['Content-Length with an empty Transfer-Encoding', ['Content-Length: 0', 'Transfer-Encoding:'], /Content-Length together with Transfer-Encoding/],
  ['Transfer-Encoding gzip', ['Transfer-Encoding: gzip'], /only chunked/],
  ['Transfer-Encoding chunked, gzip', ['Transfer-Encoding: chunked, gzip'], /only chunked/],
  ['Transfer-Encoding identity', ['Transfer-Encoding: identity'], /only chunked/],
  ['two Transfer-Encodings', ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'], /more than one Transfer-Encoding/],
  ['two Hosts', ['Host: other'], /more than one Host/],
];

/** Heads uWS itself refuses before any route: it closes the connection at once, without an answer. */
const CLOSED_BY_UWS: [string, string[]][] = [
  ['a Content-Length of letters', ['Content-Length: abc']],
  ['a Content-Length list', ['Content-Length: 0, 0']],
  ['a signed Content-Length', ['Content-Length: +0']],
  ['Content-Length with Transfer-Encoding chunked', ['Content-Length: 0', 'Transfer-Encoding: chunked']],
];

function expectRefused(out: Outcome, status: number, message: RegExp, shape: 'a' | 'b'): void {
  expect(out.timedOut, 'the connection was held').toBe(false);
  expect(out.answers.map((a) => a.status)).toStrictEqual([status]);
  const answer = out.answers[0]!;
  expect(answer.headers.get('connection')).toBe('close');
  const body = JSON.parse(answer.body.toString()) as Record<string, unknown>;
  if (shape === 'b') expect(body).toStrictEqual({ code: status, error: expect.any(String), message: expect.stringMatching(message) });
  else expect(body).toStrictEqual({ code: 3, message: expect.stringMatching(message) });
  expect(out.closed).toBe(true);
  expect(out.trailing.length).toBe(0);
}

describe.each([
  { variant: 'b' as const, args: [] as string[] },
  { variant: 'a' as const, args: ['--api-variant', 'a'] },
])('variant $variant', ({ variant, args }) => {
  let node: NodeProcess;
  let metricsPort: number;
  beforeAll(async () => {
    ({ node, metricsPort } = await startMetricsNode({ args }));
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
  });

  const listeners = (): [string, number][] => [['the API listener', node.port], ['the metrics listener', metricsPort]];

  describe('an ambiguous head is answered 400 and closed, before any route', () => {
    for (const [what, lines, message] of AMBIGUOUS) {
      it(`${what}`, async () => {
        for (const [, port] of listeners()) {
          const out = await rawExchange(port, Buffer.from(head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', ...lines])), { timeoutMs: AT_ONCE_MS });
          expectRefused(out, 400, message, variant);
        }
      });
    }
  });

  describe('a head llhttp refuses (RFC 9110 5.1, 5.5; RFC 9112 3.2) is answered 400 and closed; the hidden DELETE does not run', () => {
    let id: string;
    const data = Buffer.from(`a blob malformed heads must not reach (${variant})`);
    beforeAll(async () => {
      expect((await putRaw(node.url, data)).ok).toBe(true);
      id = await expectedId(data);
    });
    it.each([
      ['DEL in a field value', (target: string) => [target, 'Host: 127.0.0.1', 'X: a\x7fb'], /control byte/],
      ['DEL in the Host value', (target: string) => [target, 'Host: 127.0.0.1\x7f'], /control byte/],
      ['DEL in the query', (target: string) => [target.replace(' HTTP', '?\x7f HTTP'), 'Host: 127.0.0.1'], /not visible ASCII/],
      ['a byte above 0x7e in the query', (target: string) => [target.replace(' HTTP', '?\xff HTTP'), 'Host: 127.0.0.1'], /not visible ASCII/],
    ])('%s', async (_what, lines, message) => {
      const bytes = Buffer.from(head(lines(`DELETE /v1/blobs/${id} HTTP/1.1`)), 'latin1');
      const out = await rawExchange(node.port, bytes, { timeoutMs: AT_ONCE_MS });
      expectRefused(out, 400, message, variant);
      expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' })).status).toBe(200);
    });

    it('DEL in the path: the id fails its own check (400), the DELETE does not run', async () => {
      const out = await rawExchange(node.port, Buffer.from(head([`DELETE /v1/blobs/${id}\x7f HTTP/1.1`, 'Host: 127.0.0.1']), 'latin1'), { timeoutMs: 1500 });
      expect(out.answers.map((a) => a.status)).toStrictEqual([400]);
      expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' })).status).toBe(200);
    });

    it('every control byte but tab in a field value: 400, or never parsed (uWS); the DELETE never runs', async () => {
      const controls = [...Array.from({ length: 32 }, (_, c) => c).filter((c) => c !== 9), 0x7f];
      const outs = await Promise.all(controls.map((c) =>
        rawExchange(node.port, Buffer.from(head([`DELETE /v1/blobs/${id} HTTP/1.1`, 'Host: 127.0.0.1', `X: a${String.fromCharCode(c)}b`]), 'latin1'), { timeoutMs: 1500 })));
      for (const [k, out] of outs.entries()) {
        expect(out.answers.map((a) => a.status), `byte ${controls[k]}`).toStrictEqual(out.answers.length === 0 ? [] : [400]);
      }
      expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' })).status).toBe(200);
    });
  });

  describe('an ambiguous head uWS refuses itself is closed at once, without an answer', () => {
    for (const [what, lines] of CLOSED_BY_UWS) {
      it(`${what}`, async () => {
        for (const [, port] of listeners()) {
          const out = await rawExchange(port, Buffer.from(head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', ...lines])), { timeoutMs: AT_ONCE_MS });
          expect(out.timedOut).toBe(false);
          expect(out.closed).toBe(true);
          expect(out.answers).toStrictEqual([]);
        }
      });
    }
  });

  describe('nothing after an ambiguous head is run as a request', () => {
    let id: string;
    const data = Buffer.from(`a blob that must survive (${variant})`);
    beforeAll(async () => {
      expect((await putRaw(node.url, data)).ok).toBe(true);
      id = await expectedId(data);
    });

    const survives = async (): Promise<void> => {
      const res = await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' });
      expect(res.status).toBe(200);
    };
    const hidden = (): string => head([`DELETE /v1/blobs/${id} HTTP/1.1`, 'Host: 127.0.0.1']);

    it.each([
      ['two Content-Lengths, framed by the first', (h: string) => head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Content-Length: 0', `Content-Length: ${h.length}`]) + h],
      ['two Content-Lengths, framed by the second', (h: string) => head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', `Content-Length: ${h.length}`, 'Content-Length: 0']) + h],
      ['an empty Content-Length', (h: string) => head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Content-Length:']) + h],
      ['Transfer-Encoding gzip', (h: string) => head(['POST /v1/blobs HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: gzip']) + h],
      ['a chunked GET whose last chunk is followed by two bytes uWS skips', (h: string) => head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked']) + '0\r\nXX' + h],
      ['a chunked store whose chunk data overruns its size', (h: string) => head(['POST /v1/blobs HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked']) + '1\r\nabXX0\r\n\r\n' + h],
      ['a chunked store with a trailer uWS does not parse', (h: string) => head(['POST /v1/blobs HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked']) + '1\r\na\r\n0\r\nXX' + h],
    ])('%s: the hidden DELETE does not run, the blob survives', async (_what, build) => {
      const out = await rawExchange(node.port, Buffer.from(build(hidden())), { timeoutMs: AT_ONCE_MS });
      expect(out.timedOut).toBe(false);
      expect(out.closed).toBe(true);
      // At most the first request's answer, and never the DELETE's.
      expect(out.answers.length).toBeLessThanOrEqual(1);
      for (const a of out.answers) expect(a.body.toString()).not.toContain('deleted');
      await survives();
    });

    it('the hidden request sent after the ambiguous one has been answered does not run either', async () => {
      const bad = head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Content-Length: 0', 'Content-Length: 0']);
      const out = await rawExchange(node.port, Buffer.from(bad + hidden()), {
        timeoutMs: AT_ONCE_MS, pieces: [Buffer.from(bad), Buffer.from(hidden())], pauseMs: 200,
      });
      expect(out.answers.map((a) => a.status)).toStrictEqual([400]);
      await survives();
    });
  });

  describe('a request answered before its body was read closes its connection: what follows the body never runs', () => {
    let id: string;
    const data = Buffer.from(`a blob an early answer must not lose (${variant})`);
    beforeAll(async () => {
      expect((await putRaw(node.url, data)).ok).toBe(true);
      id = await expectedId(data);
    });
    const hidden = (): string => head([`DELETE /v1/blobs/${id} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Length: 0']);
    const store = (lines: string[], body: string): string => head(['POST /v1/blobs HTTP/1.1', 'Host: 127.0.0.1', ...lines, `Content-Length: ${body.length}`]) + body;

    it.each([
      ['415: a Content-Type the store does not take', () => store(['Content-Type: text/evil'], 'zzzzzzzzzz'), 415],
      ['400: a bad X-Blobstore-Policy', () => store(['X-Blobstore-Policy: nine'], 'zzzzzzzzzz'), 400],
      ['400: bad X-Blobstore-Labels', () => store(['X-Blobstore-Labels: {'], 'zzzzzzzzzz'), 400],
      ['412: EC on one node', () => store(['X-Blobstore-Policy: 4'], 'zzzzzzzzzz'), 412],
      ['413: a JSON store over its limit', () => head(['POST /v1/blobs HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', 'Content-Length: 999999999']), 413],
    ])('%s', async (_what, first, status) => {
      // The DELETE comes once the answer is out (a client pipelining behind the body).
      const out = await rawExchange(node.port, Buffer.from(first() + hidden()), {
        timeoutMs: AT_ONCE_MS, pieces: [Buffer.from(first()), Buffer.from(hidden())], pauseMs: 200,
      });
      expect(out.timedOut, 'the connection was held').toBe(false);
      expect(out.answers.map((a) => a.status)).toStrictEqual([status]);
      expect(out.answers[0]!.headers.get('connection')).toBe('close');
      expect(out.closed).toBe(true);
      expect((await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' })).status).toBe(200);
    });
  });

  describe('chunked bodies', () => {
    it('a route that takes a bounded body answers a chunked one 411 once it is in, and closes', async () => {
      const out = await rawExchange(node.port, Buffer.from(head(['POST /v1/cluster/join HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked']) + '2\r\n{}\r\n0\r\n\r\n'), { timeoutMs: AT_ONCE_MS });
      expectRefused(out, 411, /Content-Length/, variant === 'a' ? 'a' : 'b');
    });

    it('a chunked store is stored, answered with Connection: close, and the connection closed', async () => {
      const data = Buffer.from(`chunked ${variant}`);
      const body = `${data.length.toString(16)}\r\n${data.toString()}\r\n0\r\n\r\n`;
      const out = await rawExchange(node.port, Buffer.from(head(['POST /v1/blobs HTTP/1.1', 'Host: 127.0.0.1', 'Transfer-Encoding: chunked']) + body), { timeoutMs: AT_ONCE_MS });
      expect(out.answers.map((a) => a.status)).toStrictEqual([variant === 'b' ? 201 : 200]);
      expect(out.answers[0]!.headers.get('connection')).toBe('close');
      expect(out.closed).toBe(true);
      expect((await fetch(`${node.url}/v1/blobs/${await expectedId(data)}`, { method: 'HEAD' })).status).toBe(200);
    });
  });

  it('well-framed requests on a kept-alive connection are all answered', async () => {
    const get = head(['GET /healthz HTTP/1.1', 'Host: 127.0.0.1']);
    const out = await rawExchange(node.port, Buffer.from(get + get + get), { timeoutMs: AT_ONCE_MS });
    expect(out.answers.map((a) => a.status)).toStrictEqual([200, 200, 200]);
    expect(out.closed).toBe(false);
  });
});

describe('the orders listener', () => {
  let orders: OrdersProcess;
  beforeAll(async () => {
    orders = await startOrders();
  });
  afterAll(async () => {
    expect(await orders.stop()).toBe(0);
    removeDir(orders.dataDir);
  });

  it('answers an ambiguous head 400 in its own error shape and closes; the hidden request does not run', async () => {
    const port = Number(new URL(orders.url).port);
    const create = '{"amount":1,"currency":"EUR"}';
    const hidden = head(['POST /orders HTTP/1.1', 'Host: 127.0.0.1', 'Content-Type: application/json', `Content-Length: ${create.length}`]) + create;
    for (const [, lines] of AMBIGUOUS) {
      const out = await rawExchange(port, Buffer.from(head(['GET /orders HTTP/1.1', 'Host: 127.0.0.1', ...lines])), { timeoutMs: AT_ONCE_MS });
      expect(out.answers.map((a) => a.status)).toStrictEqual([400]);
      expect(JSON.parse(out.answers[0]!.body.toString())).toStrictEqual({ detail: expect.any(String) });
      expect(out.closed).toBe(true);
    }
    const smuggled = await rawExchange(port, Buffer.from(head(['GET /orders HTTP/1.1', 'Host: 127.0.0.1', 'Content-Length: 0', `Content-Length: ${hidden.length}`]) + hidden), { timeoutMs: AT_ONCE_MS });
    expect(smuggled.closed).toBe(true);
    // No order was created: the first one made now gets id 1.
    const made = await fetch(`${orders.url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: create });
    expect(((await made.json()) as { id: number }).id).toBe(1);
  });
});
