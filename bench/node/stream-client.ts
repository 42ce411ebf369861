/**
 * The streamed-upload client of the 1 GiB figures: a chunked POST of `total` bytes generated in
 * 1 MiB chunks (a random pattern stamped with a nonce and the chunk index, so every upload is new
 * content), written with backpressure (await 'drain').
 */
import { randomFillSync } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { MiB } from './lib.js';

export const CHUNK_BYTES = MiB;
const pattern = randomFillSync(Buffer.allocUnsafe(CHUNK_BYTES));

/** Chunk i of a blob of `total` bytes. */
export function chunk(total: number, nonce: string, i: number): Buffer {
  const n = Math.min(CHUNK_BYTES, total - i * CHUNK_BYTES);
  const b = Buffer.allocUnsafe(n);
  pattern.copy(b, 0, 0, n);
  b.write(`${nonce}:${i}:`, 0, 'latin1');
  return b;
}

export function chunkCount(total: number): number {
  return Math.ceil(total / CHUNK_BYTES);
}

export function responseText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (s += d));
    res.on('end', () => resolve(s));
    res.on('error', reject);
  });
}

/**
 * POSTs the blob chunked; resolves with the seconds until the answer's body arrived, and the id.
 * `path`/`status` default to the node's store (201); the echo server's /sink answers 200.
 */
export async function putChunked(port: number, total: number, nonce: string, path = '/v1/blobs', status = 201): Promise<{ seconds: number; id: string }> {
  const t0 = performance.now();
  const count = chunkCount(total);
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, method: 'POST', path,
      headers: { 'Content-Type': 'application/octet-stream', 'Transfer-Encoding': 'chunked' },
    }, resolve);
    req.on('error', reject);
    void (async () => {
      for (let i = 0; i < count; i++) {
        if (!req.write(chunk(total, nonce, i))) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })().catch(reject);
  });
  const text = await responseText(res);
  const seconds = (performance.now() - t0) / 1000;
  if (res.statusCode !== status) throw new Error(`PUT: HTTP ${res.statusCode}: ${text}`);
  const body = JSON.parse(text) as { id?: string; size: number };
  if (body.size !== total) throw new Error(`PUT: size ${body.size}, sent ${total}`);
  return { seconds, id: body.id ?? '' };
}
