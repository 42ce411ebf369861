/**
 * What an HTTP client library expects: Content-Length on every non-stream response, ETag (the hex
 * checksum) with If-None-Match -> 304, single byte ranges (206/416) on the raw GET with
 * Accept-Ranges, keep-alive and HTTP/1.1 pipelining of requests answered at once. (This uWS
 * build drops a connection that pipelines a request behind one whose answer is still pending on
 * the disk, such as a store or a read of a large blob: README, "HTTP conventions".)
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';

const MiB = 1024 * 1024;
let node: NodeProcess;
let url: string;
let small: { id: string; data: Buffer };
let large: { id: string; data: Buffer };

async function store(data: Buffer): Promise<{ id: string; data: Buffer }> {
  return { id: ((await (await putRaw(url, data)).json()) as { id: string }).id, data };
}

beforeAll(async () => {
  node = await startNode();
  url = node.url;
  small = await store(patternBytes(5000, 11));
  large = await store(patternBytes(3 * MiB + 5, 12));
});
afterAll(async () => {
  expect(await node.stop()).toBe(0);
});

/** Sends raw bytes on one connection and collects what comes back until `done` says so. */
function exchange(payload: string | Buffer, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(node.port, '127.0.0.1', () => socket.write(payload));
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (done(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', reject);
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`timed out; got:\n${text}`));
    }, 5000);
  });
}

describe('ETag and If-None-Match', () => {
  it.each([['small'], ['large']])('GET of a %s blob carries ETag = "hex checksum"; a matching If-None-Match is 304 without a body', async (which) => {
    const blob = which === 'small' ? small : large;
    const res = await fetch(`${url}/v1/blobs/${blob.id}`);
    const etag = res.headers.get('etag')!;
    expect(etag).toMatch(new RegExp(`^"${blob.id}[0-9a-f]{32}"$`));
    await res.arrayBuffer();
    for (const header of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
      const again = await fetch(`${url}/v1/blobs/${blob.id}`, { headers: { 'If-None-Match': header } });
      expect(again.status, header).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect((await again.arrayBuffer()).byteLength).toBe(0);
    }
    const other = await fetch(`${url}/v1/blobs/${blob.id}`, { headers: { 'If-None-Match': '"other"' } });
    expect(other.status).toBe(200);
    expect(Buffer.from(await other.arrayBuffer()).equals(blob.data)).toBe(true);
  });

  it('HEAD carries the same ETag and Accept-Ranges', async () => {
    const head = await fetch(`${url}/v1/blobs/${small.id}`, { method: 'HEAD' });
    expect(head.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
    expect(head.headers.get('accept-ranges')).toBe('bytes');
    expect(head.headers.get('content-length')).toBe(String(small.data.length));
  });
});

describe('Range requests on the raw GET', () => {
  const cases: [string, (size: number) => [number, number]][] = [
    ['bytes=0-9', () => [0, 10]],
    ['bytes=100-', (size) => [100, size]],
    ['bytes=-7', (size) => [size - 7, size]],
    ['bytes=4990-999999999', (size) => [4990, size]],
  ];
  it.each(cases)('%s on a small blob is 206 with Content-Range and exactly those bytes', async (range, span) => {
    const [start, end] = span(small.data.length);
    const res = await fetch(`${url}/v1/blobs/${small.id}`, { headers: { Range: range } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end - 1}/${small.data.length}`);
    expect(res.headers.get('content-length')).toBe(String(end - start));
    expect(Buffer.from(await res.arrayBuffer()).equals(small.data.subarray(start, end))).toBe(true);
  });

  it('a range across chunk boundaries of a large blob is verified and exact', async () => {
    const start = MiB - 100;
    const end = 2 * MiB + 100;
    const res = await fetch(`${url}/v1/blobs/${large.id}`, { headers: { Range: `bytes=${start}-${end - 1}` } });
    expect(res.status).toBe(206);
    expect(Buffer.from(await res.arrayBuffer()).equals(large.data.subarray(start, end))).toBe(true);
  });

  it('a range past the end is 416 with Content-Range bytes */size', async () => {
    const res = await fetch(`${url}/v1/blobs/${small.id}`, { headers: { Range: `bytes=${small.data.length}-` } });
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe(`bytes */${small.data.length}`);
    expect(((await res.json()) as { code: number }).code).toBe(416);
  });

  it('several ranges, a malformed header or a stale If-Range send the whole blob (200)', async () => {
    const variants: Record<string, string>[] = [{ Range: 'bytes=0-1,5-6' }, { Range: 'items=0-1' }, { Range: 'bytes=0-1', 'If-Range': '"stale"' }];
    for (const headers of variants) {
      const res = await fetch(`${url}/v1/blobs/${small.id}`, { headers });
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(small.data)).toBe(true);
    }
  });
});

describe('framing', () => {
  it('every non-stream response carries Content-Length (JSON answers, errors, 404s, blobs)', async () => {
    const responses = await Promise.all([
      putRaw(url, Buffer.from('content length')),
      fetch(`${url}/v1/blobs?limit=2`),
      fetch(`${url}/v1/blobs/${'0'.repeat(32)}`),
      fetch(`${url}/v1/blobs/xyz`),
      fetch(`${url}/nowhere`),
      fetch(`${url}/v1/blobs/${small.id}`),
      fetch(`${url}/v1/blobs/${large.id}`),
      fetch(`${url}/v1/blobs/${small.id}`, { method: 'DELETE' }),
    ]);
    for (const res of responses) {
      const body = Buffer.from(await res.arrayBuffer());
      expect(res.headers.get('content-length'), res.url).toBe(String(body.length));
    }
    small = await store(small.data);
  });

  it('answers pipelined requests in order (reads of small blobs, HEAD, stat, list, errors)', async () => {
    // Pipelining holds for answers given at once (README): the blob's bytes are in memory.
    await (await fetch(`${url}/v1/blobs/${small.id}`)).arrayBuffer();
    const requests =
      `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n` +
      `GET /v1/blobs/${small.id} HTTP/1.1\r\nHost: x\r\n\r\n` +
      `GET /v1/blobs/${small.id} HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n\r\n` +
      `HEAD /v1/blobs/${small.id} HTTP/1.1\r\nHost: x\r\n\r\n` +
      `GET /v1/blobs?limit=1 HTTP/1.1\r\nHost: x\r\n\r\n` +
      `GET /v1/blobs/${'0'.repeat(32)} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const text = await exchange(requests, (t) => (t.match(/HTTP\/1\.1 /g) ?? []).length >= 6 && t.endsWith('}'));
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    expect(statuses).toEqual(['200', '200', '206', '200', '200', '404']);
    expect(text).toContain(small.data.subarray(0, 4).toString('latin1'));
  });

  it('keeps the connection alive across requests with bodies', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      let out = '';
      const socket = connect(node.port, '127.0.0.1');
      const send = (i: number): void => {
        const body = `keep-alive body ${i}`;
        socket.write(`POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      };
      let answered = 0;
      socket.on('connect', () => send(0));
      socket.on('data', (d) => {
        out += d.toString('latin1');
        const n = (out.match(/HTTP\/1\.1 /g) ?? []).length;
        if (n > answered && out.endsWith('}')) {
          answered = n;
          if (n === 3) {
            socket.destroy();
            resolve(out);
          } else send(n);
        }
      });
      socket.on('error', reject);
    });
    expect([...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1])).toEqual(['201', '201', '201']);
    expect(text).not.toMatch(/Connection: close/i);
  });
});
