/**
 * X-Request-Id on a node at the default log level: a client's sane id comes back on every answer
 * to its request (success and error, HEAD, streams, a chunked upload), an insane one does not, and
 * a request without one gets none on a success; no access line is written at info unless
 * accessLogEvery asks for one in N.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, postStream, putRaw } from '../helpers/blobs.js';
import { logLines } from '../helpers/log.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';

const run = promisify(execFile);

const accessLines = (output: string) => logLines(output).filter((l) => l.access !== undefined);

const idHeader = (value: string): Record<string, string> => ({ 'x-request-id': value });

describe('X-Request-Id at log level info', () => {
  let node: NodeProcess;
  let id = '';
  const body = patternBytes(5000, 11);

  beforeAll(async () => {
    node = await startNode();
    const res = await putRaw(node.url, body);
    id = ((await res.json()) as { id: string }).id;
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('comes back on a 201 and a 200 store', async () => {
    const created = await putRaw(node.url, patternBytes(100, 12), idHeader('store-201'));
    expect(created.status).toBe(201);
    expect(created.headers.get('x-request-id')).toBe('store-201');
    const again = await putRaw(node.url, body, idHeader('store-200'));
    expect(again.status).toBe(200);
    expect(again.headers.get('x-request-id')).toBe('store-200');
  });

  it('comes back on a GET from the read cache, a HEAD, a stat and a range', async () => {
    for (let i = 0; i < 2; i++) {
      const get = await fetch(`${node.url}/v1/blobs/${id}`, { headers: idHeader(`get-${i}`) });
      expect(Buffer.from(await get.arrayBuffer()).equals(body)).toBe(true);
      expect(get.headers.get('x-request-id')).toBe(`get-${i}`);
    }
    const head = await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD', headers: idHeader('head') });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(body.length));
    expect(head.headers.get('x-request-id')).toBe('head');
    const stat = await fetch(`${node.url}/v1/blobs/${id}/stat`, { headers: idHeader('stat') });
    expect(stat.status).toBe(200);
    expect(stat.headers.get('x-request-id')).toBe('stat');
    const range = await fetch(`${node.url}/v1/blobs/${id}`, { headers: { ...idHeader('range'), range: 'bytes=10-19' } });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer()).equals(body.subarray(10, 20))).toBe(true);
    expect(range.headers.get('x-request-id')).toBe('range');
  });

  it('comes back on errors: a 404, a HEAD 404, a 400, an unknown route', async () => {
    const missing = `${node.url}/v1/blobs/${'0'.repeat(32)}`;
    const get = await fetch(missing, { headers: idHeader('miss') });
    expect(get.status).toBe(404);
    expect(get.headers.get('x-request-id')).toBe('miss');
    const head = await fetch(missing, { method: 'HEAD', headers: idHeader('miss-head') });
    expect(head.status).toBe(404);
    expect(head.headers.get('x-request-id')).toBe('miss-head');
    const bad = await fetch(`${node.url}/v1/blobs/not-an-id`, { headers: idHeader('bad') });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-request-id')).toBe('bad');
    const nowhere = await fetch(`${node.url}/nowhere`, { headers: idHeader('nowhere') });
    expect(nowhere.status).toBe(404);
    expect(nowhere.headers.get('x-request-id')).toBe('nowhere');
  });

  it('comes back on a chunked upload and on an NDJSON stream', async () => {
    const chunked = await postStream(node.url, [Buffer.from('first part '), Buffer.from('second part')], idHeader('chunked'));
    expect(chunked.status).toBe(201);
    expect(chunked.headers.get('x-request-id')).toBe('chunked');
    const stream = await fetch(`${node.url}/v1/blobs/${id}/stream`, { headers: idHeader('ndjson') });
    expect(stream.status).toBe(200);
    await stream.arrayBuffer();
    expect(stream.headers.get('x-request-id')).toBe('ndjson');
  });

  it('is echoed once, in the raw answer curl reads', async () => {
    const { stdout } = await run('curl', ['-sS', '-D', '-', '-o', '/dev/null', '-H', 'X-Request-Id: curl-1', `${node.url}/v1/blobs/${id}`]);
    expect(stdout.match(/^x-request-id: .*$/gim)).toStrictEqual(['X-Request-Id: curl-1']);
  });

  it('is not echoed when it is not sane: too long, with spaces, or empty', async () => {
    for (const value of ['a'.repeat(129), 'has space', '"quoted"', '']) {
      const get = await fetch(`${node.url}/v1/blobs/${id}`, { headers: idHeader(value) });
      expect(get.status).toBe(200);
      expect(get.headers.get('x-request-id'), value).toBeNull();
      const miss = await fetch(`${node.url}/v1/blobs/${'0'.repeat(32)}`, { headers: idHeader(value) });
      expect(miss.status).toBe(404);
      expect(miss.headers.get('x-request-id'), value).toBeNull();
    }
    const longest = 'b'.repeat(128);
    expect((await fetch(`${node.url}/v1/blobs/${id}`, { headers: idHeader(longest) })).headers.get('x-request-id')).toBe(longest);
  });

  it('is not made up for a success without one', async () => {
    const get = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(get.status).toBe(200);
    expect(get.headers.get('x-request-id')).toBeNull();
    const store = await putRaw(node.url, patternBytes(64, 13));
    expect(store.status).toBe(201);
    expect(store.headers.get('x-request-id')).toBeNull();
  });

  it('writes no access line (accessLogEvery 0, the default)', async () => {
    expect(await node.stop()).toBe(0);
    expect(logLines(node.output()).some((l) => l.msg === 'stopped')).toBe(true);
    expect(accessLines(node.output())).toStrictEqual([]);
  });
});

describe('accessLogEvery at log level info', () => {
  it.each([
    [1, 6, 6],
    [3, 7, 2],
  ])('accessLogEvery %i: %i requests write %i info lines', async (every, requests, expected) => {
    const node = await startNode({ args: ['--access-log-every', String(every)] });
    try {
      for (let i = 0; i < requests; i++) {
        const res = await fetch(`${node.url}/v1/blobs/${'0'.repeat(32)}`, { headers: idHeader(`r${i}`) });
        expect(res.status).toBe(404);
      }
    } finally {
      expect(await node.stop()).toBe(0);
    }
    const lines = accessLines(node.output());
    expect(lines).toHaveLength(expected);
    for (const l of lines) expect(l).toMatchObject({ level: 'info', access: 'http', method: 'GET', route: '/v1/blobs/:id', status: 404 });
    // One in N: the N-th, the 2N-th...
    expect(lines.map((l) => l.reqId)).toStrictEqual(Array.from({ length: expected }, (_, k) => `r${(k + 1) * every - 1}`));
  });

  it('BLOBSTORE_ACCESS_LOG_EVERY sets it too', async () => {
    const node = await startNode({ env: { BLOBSTORE_ACCESS_LOG_EVERY: '1' } });
    try {
      expect((await fetch(`${node.url}/healthz`, { headers: idHeader('env-1') })).status).toBe(200);
    } finally {
      expect(await node.stop()).toBe(0);
    }
    expect(accessLines(node.output())).toMatchObject([{ level: 'info', route: '/healthz', status: 200, reqId: 'env-1' }]);
  });
});
