/**
 * HEAD on every GET route but the spec's two metrics endpoints (GET only: 405) answers exactly as
 * GET does without the body (RFC 9110 §9.3.2): the same status, the same headers (Content-Length
 * included), nothing after the head. Both variants
 * and both listener layouts: variant B with the metrics listener on its own port, variant A with
 * the operations routes on the API port (`--metrics-addr same`).
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Answer, rawExchange } from './fuzz/http-client.js';
import { patternBytes, putRaw } from './helpers/blobs.js';
import { type MetricsNode, startMetricsNode } from './helpers/metrics.js';

/** Routes whose body changes from one request to the next (counters, uptime, process figures). */
const LIVE = new Set(['/metrics', '/api/v1/metrics', '/api/v1/metrics/detail']);

/** One request on its own connection (`Connection: close`): the answer and any bytes after it. */
async function request(port: number, method: 'GET' | 'HEAD', path: string): Promise<{ answer: Answer; trailing: Buffer }> {
  const text = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`;
  // The server closes after the answer; settling waits for that close, so a body sent after a HEAD
  // answer would be there as trailing bytes.
  const out = await rawExchange(port, Buffer.from(text), { timeoutMs: 10_000, settleMs: 5000, head: method === 'HEAD' });
  expect(out.timedOut, `${method} ${path}`).toBe(false);
  expect(out.answers.length, `${method} ${path}: ${out.trailing.toString('latin1', 0, 200)}`).toBe(1);
  return { answer: out.answers[0]!, trailing: out.trailing };
}

/** GET and HEAD of `path` agree; returns the GET status. */
async function expectHeadLikeGet(port: number, path: string): Promise<number> {
  const get = await request(port, 'GET', path);
  const head = await request(port, 'HEAD', path);
  const where = `HEAD ${path}`;
  expect(head.answer.status, where).toBe(get.answer.status);
  expect(head.trailing.length, `${where}: bytes after the head`).toBe(0);
  const names = (a: Answer): string[] => [...a.headers.keys()].filter((k) => k !== 'date').sort();
  expect(names(head.answer), where).toStrictEqual(names(get.answer));
  for (const name of names(get.answer)) {
    if (name === 'content-length' || name === 'x-request-id') continue;
    expect(head.answer.headers.get(name), `${where}: ${name}`).toBe(get.answer.headers.get(name));
  }
  const length = get.answer.headers.get('content-length');
  if (length !== undefined) {
    expect(Number(length), `GET ${path}: Content-Length`).toBe(get.answer.body.length);
    const headLength = Number(head.answer.headers.get('content-length'));
    if (LIVE.has(path)) expect(Math.abs(headLength - get.answer.body.length), where).toBeLessThan(get.answer.body.length / 10);
    else expect(headLength, `${where}: Content-Length`).toBe(get.answer.body.length);
  }
  return get.answer.status;
}

describe.each([
  // With gRPC, a node has its cluster endpoints (GET /v1/cluster/state 200); without, they are 501.
  { variant: 'b', metricsAddr: '127.0.0.1:0', args: ['--grpc-addr', '127.0.0.1:0'] },
  // A JSON body limit below the large blob: variant A's GET of it is a 413, and so is its HEAD.
  { variant: 'a', metricsAddr: 'same', args: ['--api-variant', 'a', '--max-json-body-bytes', '1MiB'] },
])('variant $variant, metrics listener $metricsAddr', ({ variant, metricsAddr, args }) => {
  let m: MetricsNode;
  let id: string;
  /** A blob of more than one 1 MiB chunk: its get stream is chunked. */
  let largeId: string;

  const store = async (size: number, seed: number): Promise<string> => {
    const body = (await (await putRaw(m.node.url, patternBytes(size, seed))).json()) as { id: string | { id: string } };
    return typeof body.id === 'string' ? body.id : Buffer.from(body.id.id, 'base64').toString('hex');
  };

  beforeAll(async () => {
    m = await startMetricsNode({ metricsAddr, args });
    id = await store(2000, 17);
    largeId = await store(1536 * 1024, 18);
  });
  afterAll(async () => {
    expect(await m.node.stop()).toBe(0);
    rmSync(m.node.dataDir, { recursive: true, force: true });
  });

  it.each([
    ['/v1/blobs', 200],
    ['/v1/blobs?limit=1&prefix=0', 200],
    ['/v1/blobs?limit=x', 400],
    ['/healthz', 200],
    ['/openapi.json', 200],
    ['/ui/', 200],
    ['/ui', 200],
  ])('API port: HEAD %s answers %i like GET, without the body', async (path, status) => {
    expect(await expectHeadLikeGet(m.node.port, path)).toBe(status);
  });

  it('API port: HEAD /v1/cluster/state answers like GET (200 with the cluster, 501 without)', async () => {
    expect(await expectHeadLikeGet(m.node.port, '/v1/cluster/state')).toBe(variant === 'b' ? 200 : 501);
  });

  it('API port: HEAD of a blob\'s /stat (found, missing, invalid id) and /stream (one chunk, chunked, missing) answers like GET', async () => {
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${id}/stat`)).toBe(200);
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${'0'.repeat(32)}/stat`)).toBe(200);
    expect(await expectHeadLikeGet(m.node.port, '/v1/blobs/nope/stat')).toBe(400);
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${id}/stream`)).toBe(200);
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${largeId}/stream`)).toBe(200);
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${'0'.repeat(32)}/stream`)).toBe(404);
  });

  it('API port: HEAD of a blob in variant A answers like its GET (JSON, ETag; 413 past the JSON body limit); variant B\'s is the metadata answer', async () => {
    if (variant === 'b') {
      const res = await fetch(`${m.node.url}/v1/blobs/${id}`, { method: 'HEAD' });
      expect(res.headers.get('x-blobstore-blob-size')).toBe('2000');
      return;
    }
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${id}`)).toBe(200);
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${largeId}`)).toBe(413);
    expect(await expectHeadLikeGet(m.node.port, `/v1/blobs/${'0'.repeat(32)}`)).toBe(404);
    expect(await expectHeadLikeGet(m.node.port, '/v1/blobs/nope')).toBe(400);
  });

  // The spec's two metrics endpoints take GET only ("any other method gives 405"), HEAD included.
  it.each(['/metrics', '/api/v1/metrics'])('metrics routes: HEAD %s answers 405 with Allow: GET, without a body', async (path) => {
    const get = await request(m.metricsPort, 'GET', path);
    const head = await request(m.metricsPort, 'HEAD', path);
    expect(get.answer.status).toBe(200);
    expect(head.answer.status).toBe(405);
    expect(head.answer.headers.get('allow')).toBe('GET');
    expect(head.trailing.length, 'bytes after the head').toBe(0);
  });

  it.each([
    ['/api/v1/metrics/detail', 200],
    ['/health', 200],
    ['/', 200],
    ['/nowhere', 404],
  ])('metrics routes: HEAD %s answers %i like GET, without the body', async (path, status) => {
    expect(await expectHeadLikeGet(m.metricsPort, path)).toBe(status);
  });
});
