/**
 * The access log of a real node at log level debug: one line per request answered, on the API
 * and metrics listeners and over gRPC (grpc-js calls and the direct streams alike), with the
 * method, the route pattern, the status, the body bytes, the duration, the request id and the
 * peer; never a token (the node runs with a token file and every request carries one).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKENS } from '../auth/helpers.js';
import { type AuthNode, expectNoTokenIn, required, startAuthNode } from '../auth/node.js';
import { patternBytes } from '../helpers/blobs.js';
import { type LogLine, logLines } from '../helpers/log.js';
import { type BlobClient, client } from '../grpc/helpers.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);

/** The access lines a node wrote so far. */
const accessLines = (output: string): LogLine[] => logLines(output).filter((l) => l.access !== undefined);

/** Polls the node's output until `done` holds of its access lines (10 s at most). */
async function waitForLines(n: AuthNode, done: (lines: LogLine[]) => boolean, what: string): Promise<LogLine[]> {
  let lines: LogLine[] = [];
  await waitFor(() => done((lines = accessLines(n.node.output()))), {
    what: () => `${what} in the access lines:\n${lines.map((l) => JSON.stringify(l)).join('\n')}`, timeoutMs: 10_000, pollMs: 20,
  });
  return lines;
}

/** The one line with request id `id` (waits for it; fails if there are two). */
async function lineOf(n: AuthNode, id: string): Promise<LogLine> {
  const lines = await waitForLines(n, (ls) => ls.some((l) => l.reqId === id), `the line of ${id}`);
  const mine = lines.filter((l) => l.reqId === id);
  expect(mine, id).toHaveLength(1);
  return mine[0]!;
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** A unary call's outcome with its initial metadata and its status (trailers included). */
function unaryCall(c: BlobClient, method: string, request: unknown, metadata: grpc.Metadata): Promise<{ err: grpc.ServiceError | null; response: any; initial: grpc.Metadata | undefined; status: grpc.StatusObject }> {
  return new Promise((resolve) => {
    let err: grpc.ServiceError | null = null;
    let response: any;
    let initial: grpc.Metadata | undefined;
    let status: grpc.StatusObject | undefined;
    let pending = 2;
    const settle = (): void => {
      if (--pending === 0) resolve({ err, response, initial, status: status! });
    };
    const call = c[method]!(request, metadata, (e: grpc.ServiceError | null, r: unknown) => {
      err = e;
      response = r;
      settle();
    }) as grpc.ClientUnaryCall;
    call.on('metadata', (m: grpc.Metadata) => (initial = m));
    call.on('status', (s: grpc.StatusObject) => {
      status = s;
      settle();
    });
  });
}

function callMetadata(token: string, requestId?: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  if (requestId !== undefined) md.set('x-request-id', requestId);
  return md;
}

describe('a node at log level debug', () => {
  let n: AuthNode;
  let blobs: BlobClient;
  const body = patternBytes(4096, 7);
  let id = '';

  beforeAll(async () => {
    n = await startAuthNode({ metrics: true, grpc: true, args: ['--log-level', 'debug', '--log-format', 'json'] });
    blobs = client('BlobService', `127.0.0.1:${required(n.grpcPort, 'gRPC listener', n.node)}`);
  });
  afterAll(async () => {
    blobs?.close();
    await n?.stop();
  });

  it('logs a store: method, route pattern, status 201, the answer\'s bytes, duration, request id, peer', async () => {
    const res = await fetch(`${n.node.url}/v1/blobs`, {
      method: 'POST', body, headers: { ...bearer(TOKENS.write), 'content-type': 'application/octet-stream', 'x-request-id': 'put-1' },
    });
    const text = await res.text();
    expect(res.status).toBe(201);
    expect(res.headers.get('x-request-id')).toBe('put-1');
    id = (JSON.parse(text) as { id: string }).id;
    const line = await lineOf(n, 'put-1');
    expect(line).toMatchObject({
      level: 'debug', access: 'http', method: 'POST', route: '/v1/blobs', status: 201, bytes: Buffer.byteLength(text), peer: '127.0.0.1',
      msg: `POST /v1/blobs 201 ${Buffer.byteLength(text)} B ${line.ms} ms`,
    });
    expect(line.ms).toBeGreaterThan(0);
    expect(line.ms).toBeLessThan(10_000);
  });

  it('logs GET, HEAD and a 404 under the route pattern, not the URL with its id', async () => {
    const get = await fetch(`${n.node.url}/v1/blobs/${id}`, { headers: { ...bearer(TOKENS.read), 'x-request-id': 'get-1' } });
    expect(Buffer.from(await get.arrayBuffer()).equals(body)).toBe(true);
    expect(await lineOf(n, 'get-1')).toMatchObject({ method: 'GET', route: '/v1/blobs/:id', status: 200, bytes: body.length });
    const head = await fetch(`${n.node.url}/v1/blobs/${id}`, { method: 'HEAD', headers: { ...bearer(TOKENS.read), 'x-request-id': 'head-1' } });
    expect(head.status).toBe(200);
    expect(await lineOf(n, 'head-1')).toMatchObject({ method: 'HEAD', route: '/v1/blobs/:id', status: 200, bytes: 0 });
    const missing = await fetch(`${n.node.url}/v1/blobs/${'0'.repeat(32)}`, { headers: { ...bearer(TOKENS.read), 'x-request-id': 'miss-1' } });
    const text = await missing.text();
    expect(missing.status).toBe(404);
    expect(await lineOf(n, 'miss-1')).toMatchObject({ method: 'GET', route: '/v1/blobs/:id', status: 404, bytes: Buffer.byteLength(text) });
    for (const l of accessLines(n.node.output())) expect(JSON.stringify(l)).not.toContain(id);
  });

  it('logs a refused request (401 without a token) and one with no request id', async () => {
    const before = accessLines(n.node.output()).length;
    const res = await fetch(`${n.node.url}/v1/blobs/${id}/stat`);
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBeNull();
    const lines = await waitForLines(n, (ls) => ls.length > before, 'the 401');
    expect(lines.slice(before)).toHaveLength(1);
    expect(lines[before]).toMatchObject({ method: 'GET', route: '/v1/blobs/:id/stat', status: 401 });
    expect(lines[before]!.reqId).toBeUndefined();
  });

  it('logs curl\'s requests, the chunked upload among them', async () => {
    const auth = `Authorization: Bearer ${TOKENS.write}`;
    const put = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', '-H', auth, '-H', 'Content-Type: application/octet-stream',
      '-H', 'Transfer-Encoding: chunked', '-H', 'X-Request-Id: curl-put', '--data-binary', 'chunked body', `${n.node.url}/v1/blobs`]);
    expect(put.stdout).toBe('201');
    expect(await lineOf(n, 'curl-put')).toMatchObject({ method: 'POST', route: '/v1/blobs', status: 201 });
    const head = await run('curl', ['-sS', '-I', '-H', `Authorization: Bearer ${TOKENS.read}`, '-H', 'X-Request-Id: curl-head', `${n.node.url}/v1/blobs/${id}`]);
    expect(head.stdout).toMatch(/^X-Request-Id: curl-head\r$/m);
    expect(await lineOf(n, 'curl-head')).toMatchObject({ method: 'HEAD', status: 200, bytes: 0 });
  });

  it('logs the metrics listener\'s requests too', async () => {
    const metricsUrl = required(n.metricsUrl, 'metrics listener', n.node);
    const res = await fetch(`${metricsUrl}/metrics`, { headers: { ...bearer(TOKENS.read), 'x-request-id': 'scrape-1' } });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('scrape-1');
    expect(await lineOf(n, 'scrape-1')).toMatchObject({ method: 'GET', route: '/metrics', status: 200, bytes: Buffer.byteLength(text) });
  });

  it('logs a gRPC unary call and echoes its x-request-id in the initial metadata', async () => {
    const put = await unaryCall(blobs, 'Put', { data: patternBytes(1000, 3) }, callMetadata(TOKENS.write, 'grpc-put'));
    expect(put.err).toBeNull();
    expect(put.initial?.get('x-request-id')).toStrictEqual(['grpc-put']);
    const line = await lineOf(n, 'grpc-put');
    expect(line).toMatchObject({ access: 'grpc', method: 'BlobService.Put', status: grpc.status.OK, msg: `gRPC BlobService.Put 0 ${line.bytes} B ${line.ms} ms` });
    expect(line.bytes).toBeGreaterThan(16);
    expect(line.peer).toMatch(/^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]|::ffff:127\.0\.0\.1):\d+$/);
  });

  it('echoes the id of a failed gRPC call in its trailers, and logs its code', async () => {
    const get = await unaryCall(blobs, 'Get', { id: { id: Buffer.alloc(16) } }, callMetadata(TOKENS.read, 'grpc-miss'));
    expect(get.err?.code).toBe(grpc.status.NOT_FOUND);
    expect(get.status.metadata.get('x-request-id')).toStrictEqual(['grpc-miss']);
    expect(await lineOf(n, 'grpc-miss')).toMatchObject({ access: 'grpc', method: 'BlobService.Get', status: grpc.status.NOT_FOUND });
  });

  it('logs a GetStream served on its HTTP/2 stream with the bytes it sent, and echoes its id', async () => {
    const idBytes = Buffer.from(id, 'hex');
    const call = blobs.GetStream!({ id: { id: idBytes } }, callMetadata(TOKENS.read, 'grpc-stream')) as grpc.ClientReadableStream<{ data?: Buffer }>;
    const initial = new Promise<grpc.Metadata>((resolve) => call.on('metadata', resolve));
    let received = 0;
    await new Promise<void>((resolve, reject) => {
      call.on('data', (m) => (received += m.data?.length ?? 0));
      call.on('error', reject);
      call.on('end', resolve);
    });
    expect(received).toBe(body.length);
    expect((await initial).get('x-request-id')).toStrictEqual(['grpc-stream']);
    const line = await lineOf(n, 'grpc-stream');
    expect(line).toMatchObject({ access: 'grpc', method: 'BlobService.GetStream', status: grpc.status.OK });
    expect(line.bytes).toBeGreaterThanOrEqual(body.length);
  });

  it('logs a request with a token where an id goes under its route, not its path', async () => {
    const before = accessLines(n.node.output()).length;
    expect((await fetch(`${n.node.url}/v1/blobs/${TOKENS.read}`, { headers: bearer(TOKENS.read) })).status).toBe(400);
    expect((await fetch(`${n.node.url}/${TOKENS.wrong}`, { headers: bearer(TOKENS.admin) })).status).toBe(404);
    const lines = (await waitForLines(n, (ls) => ls.length >= before + 2, 'the two requests')).slice(before);
    expect(lines).toMatchObject([{ route: '/v1/blobs/:id', status: 400 }, { route: '/*', status: 404 }]);
  });

  it('writes no token, part of one or digest, and one access line per request', async () => {
    const output = n.node.output();
    expectNoTokenIn(output);
    const lines = accessLines(output);
    for (const l of lines) {
      expect(l.level).toBe('debug');
      expect(Object.keys(l)).not.toContain('authorization');
    }
    const ids = lines.flatMap((l) => (typeof l.reqId === 'string' ? [l.reqId] : []));
    expect(new Set(ids).size).toBe(ids.length);
  });
});
