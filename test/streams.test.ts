/**
 * The HTTP streams (grpc-gateway framing): POST /v1/blobs/stream takes newline-delimited PutChunk
 * messages and writes each chunk as it arrives; GET /v1/blobs/{id}/stream answers newline-delimited
 * {"result": {data, final}} objects of at most 1 MB (the spec: 10^6 bytes) each. Broken streams leave nothing behind.
 */
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, flipByte, patternBytes, putRaw } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';
import { waitFor } from './helpers/wait.js';

const MiB = 1024 * 1024;
/** The spec's bound on a server-stream chunk: "up to 1 MB". */
const SPEC_MB = 1_000_000;
let node: NodeProcess;
let url: string;

beforeAll(async () => {
  node = await startNode();
  url = node.url;
});
afterAll(async () => {
  expect(await node.stop()).toBe(0);
});

/** NDJSON PutChunk lines for `data` cut into `chunkBytes` pieces; `final` on the last. */
function* chunkLines(data: Buffer, chunkBytes: number, first: Record<string, unknown> = {}): Generator<Buffer> {
  if (data.length === 0) {
    yield Buffer.from(JSON.stringify({ ...first, final: true }) + '\n');
    return;
  }
  for (let at = 0; at < data.length; at += chunkBytes) {
    const part = data.subarray(at, at + chunkBytes);
    const msg = { ...(at === 0 ? first : {}), data: part.toString('base64'), final: at + chunkBytes >= data.length };
    yield Buffer.from(JSON.stringify(msg) + '\n');
  }
}

function putStream(lines: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<Response> {
  return fetch(`${url}/v1/blobs/stream`, {
    method: 'POST',
    body: Readable.toWeb(Readable.from(lines)) as ReadableStream,
    duplex: 'half',
    headers: { 'Content-Type': 'application/x-ndjson' },
  } as RequestInit);
}

const tmpFiles = (): string[] => readdirSync(join(node.dataDir, 'tmp'));
/** The temp files of a broken stream are removed just after its answer: waits (10 s at most) for that. */
const tmpFilesGone = async (): Promise<void> => {
  await waitFor(() => tmpFiles().length === 0, { what: () => `temp files removed: ${tmpFiles().join(', ')}`, timeoutMs: 10_000, pollMs: 20 });
  expect(tmpFiles()).toEqual([]);
};

async function getStreamLines(id: string): Promise<{ status: number; lines: Record<string, any>[] }> {
  const res = await fetch(`${url}/v1/blobs/${id}/stream`);
  const text = await res.text();
  return { status: res.status, lines: text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)) };
}

describe('POST /v1/blobs/stream', () => {
  it('stores a 20 MiB blob sent as 1 MiB chunks; the id is the content address', async () => {
    const data = patternBytes(20 * MiB + 123, 1);
    const res = await putStream(chunkLines(data, MiB, { policy: 'REPLICATION_POLICY_NONE', labels: { via: 'stream' } }));
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: string; size: number };
    expect(body).toEqual({ id: await expectedId(data), size: data.length });
    const back = Buffer.from(await (await fetch(`${url}/v1/blobs/${body.id}`)).arrayBuffer());
    expect(back.equals(data)).toBe(true);
    const head = await fetch(`${url}/v1/blobs/${body.id}`, { method: 'HEAD' });
    expect(head.headers.get('x-blobstore-policy')).toBe('1');
  });

  it('stores small and empty blobs, with chunks of any size, and answers 200 for bytes already stored', async () => {
    const data = Buffer.from('a small blob sent in uneven chunks');
    const first = await putStream(chunkLines(data, 7));
    expect(first.status).toBe(201);
    const again = await putStream(chunkLines(data, 5));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(await first.json());
    const empty = await putStream(chunkLines(Buffer.alloc(0), 1));
    expect(empty.status).toBe(201);
    expect(((await empty.json()) as { size: number }).size).toBe(0);
  });

  it('a stream that ends without the final chunk is 500 and stores nothing', async () => {
    const data = patternBytes(3 * MiB, 2);
    const lines = [...chunkLines(data, MiB)];
    lines[lines.length - 1] = Buffer.from(JSON.stringify({ data: data.subarray(2 * MiB).toString('base64') }) + '\n');
    const res = await putStream(lines);
    expect(res.status).toBe(500);
    expect(((await res.json()) as { message: string }).message).toBe('put stream ended before the final chunk');
    expect((await fetch(`${url}/v1/blobs/${await expectedId(data)}`, { method: 'HEAD' })).status).toBe(404);
    const empty = await putStream([]);
    expect(empty.status).toBe(500);
    expect(((await empty.json()) as { message: string }).message).toBe('put stream ended before a header chunk');
    expect(tmpFiles()).toEqual([]);
  });

  it.each([
    ['a chunk after the final one', ['{"data":"YQ==","final":true}', '{"data":"Yg=="}'], /after the final chunk/],
    ['interleaved blobs (the id changes)', [`{"id":"${'a'.repeat(32)}","data":"YQ=="}`, `{"id":"${'b'.repeat(32)}","data":"Yg==","final":true}`], /interleaved/],
    ['a policy change after the first chunk', ['{"data":"YQ==","policy":1}', '{"data":"Yg==","policy":3,"final":true}'], /policy/],
    ['a line that is not JSON', ['{"data":"YQ=="', '{"final":true}'], /not valid JSON/],
    ['invalid base64', ['{"data":"!!!","final":true}'], /base64/],
    ['data of the wrong type', ['{"data":12,"final":true}'], /data/],
    ['final of the wrong type', ['{"data":"YQ==","final":"yes"}'], /final/],
    ['a bad blob id', ['{"id":"abc","data":"YQ==","final":true}'], /invalid blob ID/],
  ])('%s is 400 and stores nothing', async (_name, lines, message) => {
    const res = await putStream(lines.map((l) => Buffer.from(l + '\n')));
    expect(res.status).toBe(400);
    const err = (await res.json()) as { code: number; error: string; message: string };
    expect(err.code).toBe(400);
    expect(err.message).toMatch(message);
    await tmpFilesGone();
  });

  it('an EC policy on the first chunk is 412', async () => {
    const res = await putStream([Buffer.from('{"data":"YQ==","policy":"REPLICATION_POLICY_EC42","final":true}\n')]);
    expect(res.status).toBe(412);
  });

  it('a connection cut in the middle of a message leaves nothing behind', async () => {
    const data = patternBytes(5 * MiB, 3);
    const body = Buffer.concat([...chunkLines(data, MiB)]);
    const cutAt = 3 * MiB + 12345;
    await new Promise<void>((resolve, reject) => {
      const socket = connect(node.port, '127.0.0.1', () => {
        socket.write(`POST /v1/blobs/stream HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`);
        // Cut once the node is storing it (its temp file is there): then leaving nothing behind is work.
        const storing = (): Promise<void> => waitFor(() => tmpFiles().length > 0, { what: 'the stream\'s temp file', timeoutMs: 10_000, pollMs: 20 });
        socket.write(body.subarray(0, cutAt), () => void storing().then(() => socket.destroy(), (err: Error) => {
          reject(err);
          socket.destroy();
        }));
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    await tmpFilesGone();
    expect((await fetch(`${url}/v1/blobs/${await expectedId(data)}`, { method: 'HEAD' })).status).toBe(404);
  });

  it('streams to disk as it arrives: 200 MiB through the stream keep the node\'s memory bounded', async () => {
    const before = node.rssBytes();
    const total = 200 * MiB;
    async function* lines(): AsyncGenerator<Buffer> {
      const part = patternBytes(MiB, 4);
      for (let at = 0; at < total; at += MiB) {
        part.writeUInt32LE(at / MiB, 0);
        yield Buffer.from(JSON.stringify({ data: part.toString('base64'), final: at + MiB >= total }) + '\n');
      }
    }
    const res = await putStream(lines());
    expect(res.status).toBe(201);
    expect(((await res.json()) as { size: number }).size).toBe(total);
    expect(node.peakRssBytes() - before).toBeLessThan(160 * MiB);
  });
});

describe('GET /v1/blobs/{id}/stream', () => {
  it('answers NDJSON {"result": {data, final}} lines of at most 1 MB (10^6 bytes) that add up to the blob', async () => {
    const data = patternBytes(5 * MiB + 77, 5);
    const id = ((await (await putRaw(url, data)).json()) as { id: string }).id;
    const res = await fetch(`${url}/v1/blobs/${id}/stream`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    const { lines } = await getStreamLines(id);
    const parts = lines.map((l) => Buffer.from(l.result.data, 'base64'));
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(SPEC_MB);
    expect(lines.map((l) => l.result.final)).toEqual([...Array(lines.length - 1).fill(false), true]);
    expect(Buffer.concat(parts).equals(data)).toBe(true);
  });

  it('a blob just over 1 MB goes as two lines, and its HEAD says chunked; one of 1 MB exactly as one line', async () => {
    for (const [size, count] of [[SPEC_MB + 1, 2], [SPEC_MB, 1]] as const) {
      const data = patternBytes(size, size);
      const id = ((await (await putRaw(url, data)).json()) as { id: string }).id;
      const { lines } = await getStreamLines(id);
      expect(lines.length).toBe(count);
      expect(Buffer.concat(lines.map((l) => Buffer.from(l.result.data, 'base64'))).equals(data)).toBe(true);
      const head = await fetch(`${url}/v1/blobs/${id}/stream`, { method: 'HEAD' });
      expect(head.headers.get('transfer-encoding') === 'chunked').toBe(count > 1);
    }
  });

  it('a small blob is one final line; an empty blob one final line with empty data', async () => {
    const id = ((await (await putRaw(url, Buffer.from('tiny'))).json()) as { id: string }).id;
    expect((await getStreamLines(id)).lines).toEqual([{ result: { data: Buffer.from('tiny').toString('base64'), final: true } }]);
    const empty = ((await (await putRaw(url, Buffer.alloc(0))).json()) as { id: string }).id;
    expect((await getStreamLines(empty)).lines).toEqual([{ result: { data: '', final: true } }]);
  });

  it('a missing blob is 404 and a bad id 400 before any line', async () => {
    expect((await fetch(`${url}/v1/blobs/${'0'.repeat(32)}/stream`)).status).toBe(404);
    const bad = await fetch(`${url}/v1/blobs/nothex/stream`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/invalid blob ID/);
  });

  it('a chunk that fails its check mid-stream ends the stream with an {"error"} line, never wrong bytes', async () => {
    const data = patternBytes(3 * MiB, 6);
    const id = ((await (await putRaw(url, data)).json()) as { id: string }).id;
    flipByte(join(node.dataDir, 'blobs', id.slice(0, 2), id), MiB + 10);
    const { status, lines } = await getStreamLines(id);
    expect(status).toBe(200);
    const last = lines[lines.length - 1]!;
    expect(last.error).toMatchObject({ code: 500 });
    const good = lines.slice(0, -1).map((l) => Buffer.from(l.result.data, 'base64'));
    expect(Buffer.concat(good).equals(data.subarray(0, good.reduce((n, p) => n + p.length, 0)))).toBe(true);
    expect(lines.some((l) => l.result?.final)).toBe(false);
  });
});
