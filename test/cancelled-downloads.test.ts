/**
 * A client that closes a download early is not a storage failure: a raw GET, an NDJSON get stream
 * and a gRPC GetStream of a large blob, each dropped after its first bytes, count as
 * errors_total{type="cancelled"}; errors_total{type="storage"} and request_failures_total stay at
 * 0, and nothing is logged as a backend failure (operators alert on both).
 */
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, startGrpcNode } from './grpc/helpers.js';
import { patternBytes, putRaw } from './helpers/blobs.js';
import { sampleValue, scrape } from './helpers/metrics.js';
import { waitFor } from './helpers/wait.js';

const MiB = 1024 * 1024;
/** Far more than the socket buffers between the node and the client hold, so the node is still sending. */
const SIZE = 32 * MiB;

let n: GrpcNode;
let id: string;

beforeAll(async () => {
  n = await startGrpcNode({ args: ['--metrics-addr', 'same'] });
  const res = await putRaw(n.node.url, patternBytes(SIZE, 99));
  expect(res.status).toBe(201);
  id = ((await res.json()) as { id: string }).id;
});
afterAll(async () => {
  expect(await n.stop()).toBe(0);
  rmSync(n.node.dataDir, { recursive: true, force: true });
});

/** GET `path` on a raw connection; destroys it once the first bytes of the answer are in. */
function readFirstBytesAndLeave(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(n.node.port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    socket.once('data', (d: Buffer) => {
      socket.destroy();
      resolve(d.toString('latin1', 0, 12));
    });
    socket.on('error', reject);
  });
}

async function errorsOfType(type: string): Promise<number> {
  return sampleValue(await scrape(n.node.url), 'blobstore_errors_total', 'blobstore_errors_total', { type }) ?? -1;
}

describe('a download the client closes early', () => {
  it('raw GET, NDJSON get stream and gRPC GetStream count as cancelled, never as storage errors or request failures', async () => {
    expect(await errorsOfType('cancelled')).toBe(0);
    expect(await readFirstBytesAndLeave(`/v1/blobs/${id}`)).toBe('HTTP/1.1 200');
    expect(await readFirstBytesAndLeave(`/v1/blobs/${id}/stream`)).toBe('HTTP/1.1 200');
    await new Promise<void>((resolve, reject) => {
      const call = n.blobs.GetStream!({ id: { id: Buffer.from(id, 'hex') } }) as grpc.ClientReadableStream<unknown>;
      call.once('data', () => call.cancel());
      call.on('error', (err: grpc.ServiceError) => (err.code === 1 ? resolve() : reject(err))); // CANCELLED, on the client's side
    });
    await waitFor(async () => (await errorsOfType('cancelled')) >= 3, { what: 'three cancelled downloads counted', timeoutMs: 20_000 });

    const f = await scrape(n.node.url);
    expect(sampleValue(f, 'blobstore_errors_total', 'blobstore_errors_total', { type: 'cancelled' })).toBe(3);
    expect(sampleValue(f, 'blobstore_errors_total', 'blobstore_errors_total', { type: 'storage' })).toBe(0);
    expect(sampleValue(f, 'blobstore_request_failures_total', 'blobstore_request_failures_total', { operation: 'get' })).toBe(0);
    expect(n.node.output()).not.toMatch(/storage backend failure|client went away/);
  });

  it('the node serves the blob whole afterwards', async () => {
    const res = await fetch(`${n.node.url}/v1/blobs/${id}`);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(patternBytes(SIZE, 99))).toBe(true);
  });
});
