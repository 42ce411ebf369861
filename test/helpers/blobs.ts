/** Client-side helpers: an independent BLAKE3 (hash-wasm, not the server's native module) and requests. */
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { Readable } from 'node:stream';
import { createBLAKE3 } from 'hash-wasm';

export async function expectedId(data: Uint8Array): Promise<string> {
  const h = await createBLAKE3(256);
  h.update(data);
  return h.digest('hex').slice(0, 32);
}

export function putRaw(url: string, data: Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/blobs`, {
    method: 'POST',
    body: data,
    headers: { 'Content-Type': 'application/octet-stream', ...headers },
  });
}

/** Stores a raw body streamed from `parts` (chunked transfer encoding: no Content-Length). */
export function postStream(url: string, parts: Iterable<Uint8Array>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/blobs`, {
    method: 'POST',
    body: Readable.toWeb(Readable.from(parts)) as ReadableStream,
    duplex: 'half',
    headers: { 'Content-Type': 'application/octet-stream', ...headers },
  } as RequestInit);
}

export function putJson(url: string, body: unknown, method = 'POST'): Promise<Response> {
  return fetch(`${url}/v1/blobs`, { method, body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
}

/** Deterministic pseudo-random bytes (xorshift), so large payloads need not be stored by the test. */
export function patternBytes(length: number, seed: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let x = seed | 0 || 1;
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeInt32LE(x, i);
  }
  for (; i < length; i++) buf[i] = (seed + i) & 0xff;
  return buf;
}

/** Flips bits of one byte of a file in place (simulated disk corruption). */
export function flipByte(path: string, at: number, mask = 0x01): void {
  const fd = openSync(path, 'r+');
  try {
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    b[0]! ^= mask;
    writeSync(fd, b, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}
