/**
 * Uploads under bad conditions: oversize, truncated, aborted, stalled and too many at once, and a
 * 300 MiB streamed round trip. Nothing half-written may stay visible, and the node stays up.
 */
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { createBLAKE3 } from 'hash-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, postStream, putRaw } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';
import { waitFor } from './helpers/wait.js';

const MiB = 1024 * 1024;

/**
 * Opens a raw connection and sends a request head plus part of a body. `response` resolves with
 * what came back once the server closes, or once a whole JSON answer is in when `untilAnswer`.
 */
function partialUpload(port: number, head: string, body: Buffer, untilAnswer = false): Promise<{ socket: Socket; response: Promise<string> }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head + '\r\n\r\n');
      socket.write(body);
      let text = '';
      const response = new Promise<string>((done) => {
        socket.on('data', (d: Buffer) => {
          text += d.toString('latin1');
          if (untilAnswer && /\r\n\r\n\{.*\}$/s.test(text)) {
            socket.destroy();
            done(text);
          }
        });
        socket.on('close', () => done(text));
        socket.on('error', () => done(text));
      });
      resolve({ socket, response });
    });
  });
}

const tmpFiles = (node: NodeProcess): string[] => readdirSync(join(node.dataDir, 'tmp'));

describe('limits and hostile uploads', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({
      args: ['--max-blob-bytes', '8MiB', '--small-blob-max-bytes', '64KiB', '--max-concurrent-uploads', '3', '--body-idle-timeout-ms', '700'],
    });
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
  });

  it('answers 413 from Content-Length before reading the body', async () => {
    const { response } = await partialUpload(
      node.port,
      `POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${9 * MiB}`,
      Buffer.alloc(10),
      true,
    );
    const text = await response;
    expect(text).toMatch(/^HTTP\/1.1 413/);
    expect(text).toMatch(/\r\nConnection: close\r\n/i);
    expect(text).toContain('"code":413');
  });

  it('answers 413 when a chunked body grows past maxBlobBytes, and leaves no temp file', async () => {
    const res = await postStream(node.url, (function* () {
      for (let i = 0; i < 10; i++) yield patternBytes(MiB, i + 1);
    })()).catch((err: Error) => err);
    if (!(res instanceof Error)) expect(res.status).toBe(413);
    await waitFor(() => tmpFiles(node).length === 0, { what: 'tmpFiles(node).length === 0', timeoutMs: 5000 });
  });

  it('a chunked body with an X-Blobstore-Size it does not match is refused with 400 and stores nothing; one that matches is stored', async () => {
    const data = patternBytes(2 * MiB + 7, 31);
    const parts = [data.subarray(0, MiB), data.subarray(MiB)];
    for (const declared of [data.length - 1, data.length + 1]) {
      const res = await postStream(node.url, parts, { 'X-Blobstore-Size': String(declared) }).catch((err: Error) => err);
      // Too long may be cut before the answer is read; too short is answered.
      if (!(res instanceof Error)) {
        expect(res.status, `declared ${declared}`).toBe(400);
        expect(((await res.json()) as { message: string }).message).toMatch(/declared/);
      }
    }
    await waitFor(() => tmpFiles(node).length === 0, { what: 'no temp file left' });
    expect(((await (await fetch(`${node.url}/v1/blobs?limit=1000`)).json()) as { ids: string[] }).ids).toEqual([]);
    const bad = await postStream(node.url, parts, { 'X-Blobstore-Size': '12abc' });
    expect(bad.status).toBe(400);
    const ok = await postStream(node.url, parts, { 'X-Blobstore-Size': String(data.length) });
    expect(ok.status).toBe(201);
    const { id } = (await ok.json()) as { id: string };
    expect(Buffer.from(await (await fetch(`${node.url}/v1/blobs/${id}`)).arrayBuffer()).equals(data)).toBe(true);
    await fetch(`${node.url}/v1/blobs/${id}`, { method: 'DELETE' });
  });

  it('a truncated body (connection closed early) stores nothing and leaves no temp file', async () => {
    const data = patternBytes(3 * MiB, 99);
    const { socket } = await partialUpload(
      node.port,
      `POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${data.length}`,
      data.subarray(0, 2 * MiB),
    );
    await waitFor(() => tmpFiles(node).length > 0, { what: 'tmpFiles(node).length > 0', timeoutMs: 5000 }); // cut once the upload is under way
    socket.destroy();
    await waitFor(() => tmpFiles(node).length === 0, { what: 'tmpFiles(node).length === 0', timeoutMs: 5000 });
    const list = (await (await fetch(`${node.url}/v1/blobs?limit=1000`)).json()) as { ids: string[] };
    expect(list.ids).toEqual([]);
  });

  it('a body that stalls past bodyIdleTimeoutMs gets 408 and its temp data is removed', async () => {
    const { response } = await partialUpload(
      node.port,
      `POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${2 * MiB}`,
      patternBytes(MiB + 5, 3),
    );
    const text = await response;
    expect(text).toMatch(/^HTTP\/1.1 408/);
    await waitFor(() => tmpFiles(node).length === 0, { what: 'tmpFiles(node).length === 0', timeoutMs: 5000 });
  });

  it('an NDJSON stream whose one long line arrives slowly but steadily is not idle: it is stored', async () => {
    const data = patternBytes(60_000, 17);
    const line = Buffer.from(`${JSON.stringify({ data: data.toString('base64'), final: true })}\n`);
    const { socket, response } = await partialUpload(
      node.port,
      `POST /v1/blobs/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${line.length}`,
      Buffer.alloc(0),
      true,
    );
    // The line in 20 pieces, one every 100 ms: 2 s in all, more than twice the 700 ms idle limit.
    const piece = Math.ceil(line.length / 20);
    for (let at = 0; at < line.length; at += piece) {
      socket.write(line.subarray(at, at + piece));
      await new Promise((r) => setTimeout(r, 100));
    }
    const text = await response;
    expect(text).toMatch(/^HTTP\/1.1 20[01]/);
    expect(text).toContain(await expectedId(data));
  });

  it('too many concurrent uploads get 503 with Retry-After, and the node stays healthy', async () => {
    const head = `POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 100`;
    const put = async (text: string): Promise<Response> => {
      const res = await putRaw(node.url, Buffer.from(text));
      await res.arrayBuffer();
      return res;
    };
    // Four uploads for three slots: their bodies never end (a byte every 200 ms keeps them from the
    // 700 ms idle timeout), so whichever head the node reads last is refused, at once, and the other
    // three hold the slots. (Uploads and a store asked for after them would race: which head the
    // node reads first is the kernel's and the load's choice.)
    const held = await Promise.all([1, 2, 3, 4].map(() => partialUpload(node.port, head, Buffer.alloc(10), true)));
    const trickle = setInterval(() => {
      for (const o of held) if (!o.socket.destroyed) o.socket.write(Buffer.alloc(1));
    }, 200);
    try {
      const refused = await Promise.race(held.map((o) => o.response));
      expect(refused).toMatch(/^HTTP\/1.1 503/);
      expect(refused).toMatch(/\r\nretry-after: 1\r\n/i);
      const res = await put('one too many');
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      clearInterval(trickle);
      for (const o of held) o.socket.destroy();
    }
    // Once the node has seen the connections close, the slots are free again: ask until it has.
    let again = await put('room again');
    await waitFor(async () => again.status !== 503 || (again = await put('room again')).status !== 503, { what: 'an upload slot free again', timeoutMs: 10_000 });
    expect(again.status).toBe(201);
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
  });
});

describe('large streamed blobs', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
  });

  it('stores and serves 300 MiB byte-exact, streamed, without holding it in memory', async () => {
    const total = 300 * MiB;
    const chunk = (i: number): Buffer => patternBytes(MiB, 1000 + i);
    const hasher = await createBLAKE3(256);
    for (let i = 0; i < total / MiB; i++) hasher.update(chunk(i));
    const digest = hasher.digest('hex');
    const rssBefore = node.rssBytes();
    const res = await postStream(node.url, (function* () {
      for (let i = 0; i < total / MiB; i++) yield chunk(i);
    })());
    expect(res.status).toBe(201);
    const { id, size } = (await res.json()) as { id: string; size: number };
    expect(size).toBe(total);
    expect(id).toBe(digest.slice(0, 32));
    // Peak RSS during the upload: far below the blob's size.
    expect(node.peakRssBytes() - rssBefore).toBeLessThan(128 * MiB);

    const got = await fetch(`${node.url}/v1/blobs/${id}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-length')).toBe(String(total));
    const check = await createBLAKE3(256);
    let received = 0;
    for await (const part of got.body as unknown as AsyncIterable<Uint8Array>) {
      check.update(part);
      received += part.length;
    }
    expect(received).toBe(total);
    expect(check.digest('hex')).toBe(digest);
  }, 180_000);

  it('a body of 1e9 bytes or more goes through with chunked transfer encoding', async () => {
    const total = 1_000_000_001;
    const chunk = patternBytes(MiB, 77);
    const parts = Math.ceil(total / MiB);
    const hasher = await createBLAKE3(256);
    const res = await postStream(node.url, (function* () {
      for (let i = 0; i < parts; i++) {
        const part = i === parts - 1 ? chunk.subarray(0, total - i * MiB) : chunk;
        hasher.update(part);
        yield part;
      }
    })());
    expect(res.status).toBe(201);
    const { id, size } = (await res.json()) as { id: string; size: number };
    expect(size).toBe(total);
    expect(id).toBe(hasher.digest('hex').slice(0, 32));
    const head = await fetch(`${node.url}/v1/blobs/${id}`, { method: 'HEAD' });
    expect(head.headers.get('x-blobstore-blob-size')).toBe(String(total));
  }, 180_000);

  it('a ten-digit Content-Length is reset by the HTTP front end (documented: send such bodies chunked)', async () => {
    const { response } = await partialUpload(
      node.port,
      'POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000000',
      Buffer.alloc(100),
    );
    expect(await response).toBe('');
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
  });
});
