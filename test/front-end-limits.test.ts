/**
 * What the front end (this uWebSockets.js build) does with request heads and chunked bodies at and
 * past its limits, and what the node answers where it gets the chance (README, "Limits of the
 * front end"). Raw sockets, since no ordinary client sends these.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Outcome, rawExchange } from './fuzz/http-client.js';
import { expectedId } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';

/** uWS's fixed 10 s idle timeout plus its 4 s timer granularity, with a margin. */
const UWS_IDLE_CLOSE_MS = 16_000;
/** Well below that timeout: a close within it is uWS (or the node) closing at once. */
const AT_ONCE_MS = 5000;
/** The most header fields (Host included) uWS parses; one more and it never sees the head end. */
const UWS_MAX_HEADER_FIELDS = 48;
/** Head bytes uWS keeps while waiting for the rest of a head that arrives in more than one read. */
const UWS_MAX_BUFFERED_HEAD_BYTES = 4096;

/** A request head with `fields` header fields, Host first; `Accept` lines fill it up, as a browser's would. */
function headWithFields(method: string, path: string, fields: number): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (let i = 1; i < fields; i++) lines.push(`Accept: text/x-type-${i}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function closedWithoutAnswer(out: Outcome): void {
  expect(out.timedOut, 'still held').toBe(false);
  expect(out.closed).toBe(true);
  expect(out.answers).toStrictEqual([]);
}

describe('request heads', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
    rmSync(node.dataDir, { recursive: true, force: true });
  });

  it.each(['GET', 'HEAD'])(`%s with ${UWS_MAX_HEADER_FIELDS} header fields is answered`, async (method) => {
    const out = await rawExchange(node.port, Buffer.from(headWithFields(method, '/healthz', UWS_MAX_HEADER_FIELDS)), { timeoutMs: AT_ONCE_MS, head: method === 'HEAD' });
    expect(out.answers.map((a) => a.status)).toStrictEqual([200]);
  });

  it(`a head of ${UWS_MAX_HEADER_FIELDS + 1} header fields gets no answer: uWS closes the connection at its idle timeout`, async () => {
    const out = await rawExchange(node.port, Buffer.from(headWithFields('GET', '/healthz', UWS_MAX_HEADER_FIELDS + 1)), { timeoutMs: UWS_IDLE_CLOSE_MS });
    closedWithoutAnswer(out);
  });

  it(`a head of more than ${UWS_MAX_BUFFERED_HEAD_BYTES} bytes that arrives in two reads is closed at once without an answer`, async () => {
    const head = Buffer.from(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${'p'.repeat(UWS_MAX_BUFFERED_HEAD_BYTES)}\r\n\r\n`);
    const out = await rawExchange(node.port, head, { timeoutMs: AT_ONCE_MS, pieces: [head.subarray(0, 100), head.subarray(100)], pauseMs: 100 });
    closedWithoutAnswer(out);
  });

  it('the node keeps serving afterwards', async () => {
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
  });
});

describe.each([
  { variant: 'b', args: [] as string[] },
  { variant: 'a', args: ['--api-variant', 'a'] },
])('chunked bodies with a malformed chunk size, variant $variant', ({ variant, args }) => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({ args });
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
    rmSync(node.dataDir, { recursive: true, force: true });
  });

  const send = (path: string, body: string): Promise<Outcome> =>
    rawExchange(node.port, Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n${body}`), { timeoutMs: AT_ONCE_MS });

  describe.each(['/v1/blobs', '/v1/blobs/stream'])('POST %s', (path) => {
    it.each([
      ['a space before the size', ' 5\r\nhello\r\n0\r\n\r\n'],
      ['an empty size line', '\r\n5\r\nhello\r\n0\r\n\r\n'],
      ['no chunk at all', '0\r\n\r\n'],
    ])('%s (uWS reads an empty body): 400 in the error shape, Connection: close, closed, nothing stored', async (_what, body) => {
      const out = await send(path, body);
      expect(out.answers.length).toBe(1);
      const answer = out.answers[0]!;
      expect(answer.status).toBe(400);
      expect(answer.headers.get('connection')).toBe('close');
      const error = JSON.parse(answer.body.toString()) as Record<string, unknown>;
      expect(error).toStrictEqual(variant === 'b'
        ? { code: 400, error: 'Bad Request', message: expect.stringMatching(/^chunked body ended before any data/) }
        : { code: 3, message: expect.stringMatching(/^chunked body ended before any data/) });
      expect(out.closed).toBe(true);
      expect(out.trailing.length).toBe(0);
      for (const data of ['', 'hello']) expect((await fetch(`${node.url}/v1/blobs/${await expectedId(Buffer.from(data))}`, { method: 'HEAD' })).status).toBe(404);
    });

    it.each([
      ['letters', 'zz\r\nhello\r\n0\r\n\r\n'],
      ['a 0x prefix', '0x5\r\nhello\r\n0\r\n\r\n'],
      ['a minus sign', '-5\r\nhello\r\n0\r\n\r\n'],
      ['a chunk extension', '5;name=value\r\nhello\r\n0\r\n\r\n'],
      ['more digits than 64 bits hold', 'fffffffffffffffffff\r\nhello\r\n'],
    ])('%s: uWS closes the connection at once, before the node can answer (no 5xx, no hang)', async (_what, body) => {
      closedWithoutAnswer(await send(path, body));
    });
  });

  it('an empty blob is stored with Content-Length: 0', async () => {
    const out = await rawExchange(node.port, Buffer.from('POST /v1/blobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n'), { timeoutMs: AT_ONCE_MS });
    expect(out.answers.map((a) => a.status)).toStrictEqual([variant === 'b' ? 201 : 200]);
  });
});
