/**
 * Minimal reproducers of what the fuzz suites found, one test each, so a fix can be checked
 * without a fuzz run (and stays fixed).
 */
import { stopAndClean } from './harness.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, postStream } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { rawExchange } from './http-client.js';

const MiB = 1024 * 1024;

const ndjson = (...chunks: { data: Buffer; final?: boolean }[]): string =>
  chunks.map((c) => JSON.stringify({ data: c.data.toString('base64'), final: c.final ?? false }) + '\n').join('');

describe('fuzz findings, default settings', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  it('a deeply nested JSON policy answers 400, not 500 (JSON.stringify overflowed in the message)', async () => {
    const depth = 100_000;
    const body = `{"data":"aGk=","policy":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const res = await fetch(`${node.url}/v1/blobs`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message.length).toBeLessThan(300);
  });

  it.each(['/v1/blobs', '/v1/cluster/state', '/no/such/path', '/healthz'])('HEAD %s answers without a body (a body breaks the next answer on the connection)', async (path) => {
    // Two requests on one connection: a body after the HEAD answer would be read as the second answer.
    const out = await rawExchange(node.port, Buffer.from(`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`), { timeoutMs: 5000, head: true });
    expect(out.trailing.toString('latin1'), 'bytes that are not an answer').toBe('');
    expect(out.answers.map((a) => a.status)).toEqual([expect.any(Number), 200]);
  });

  it('an NDJSON put stream of a 1 MiB chunk and a 1-byte final chunk stores 1 MiB + 1 byte (was 413 "inline blob over smallBlobMaxBytes")', async () => {
    const a = patternBytes(MiB, 1);
    const b = Buffer.from([7]);
    const res = await fetch(`${node.url}/v1/blobs/stream`, { method: 'POST', body: ndjson({ data: a }, { data: b, final: true }), headers: { 'Content-Type': 'application/x-ndjson' } });
    const text = await res.text();
    expect(res.status, text).toBe(201);
    expect((JSON.parse(text) as { id: string }).id).toBe(await expectedId(Buffer.concat([a, b])));
  });
});

describe('fuzz findings, smallBlobMaxBytes below the 1 MiB chunk', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({ args: ['--small-blob-max-bytes', '16KiB'] });
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  it('a chunked raw upload of 100 KB is stored (was 413 "inline blob over smallBlobMaxBytes")', async () => {
    const data = patternBytes(100_000, 3);
    const res = await postStream(node.url, [data.subarray(0, 50_000), data.subarray(50_000)]);
    const text = await res.text();
    expect(res.status, text).toBe(201);
    expect((JSON.parse(text) as { id: string }).id).toBe(await expectedId(data));
  });

  it('an NDJSON put stream of 100 KB is stored', async () => {
    const data = patternBytes(100_000, 4);
    const res = await fetch(`${node.url}/v1/blobs/stream`, { method: 'POST', body: ndjson({ data, final: true }), headers: { 'Content-Type': 'application/x-ndjson' } });
    expect(res.status, await res.text()).toBe(201);
  });
});
