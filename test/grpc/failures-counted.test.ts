/**
 * Every BlobService call the node answers with an error is counted in its metrics, as an HTTP
 * request's is: operations_total and request_failures_total by operation, errors_total by type,
 * whether it failed at the transport (a bad argument, no credential) or inside the service, and
 * each once. The same limits hold as over HTTP: MaxBlobBytes for a unary Put, a hex list prefix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, failure, getStream, putStream, startGrpcNode, unary, type BlobClient, type GrpcNode } from './helpers.js';

let n: GrpcNode;
let blobs: BlobClient;

type Counts = Record<string, number>;

/** The node's counters: operations and failures by operation, errors by type. */
async function counters(): Promise<{ operations: Counts; failures: Counts; errors: Counts }> {
  const text = await (await fetch(`${n.node.url}/metrics`)).text();
  const read = (name: string, label: string): Counts => {
    const out: Counts = {};
    for (const m of text.matchAll(new RegExp(`^blobstore_${name}\\{[^}]*${label}="([a-z_]+)"[^}]*\\} (\\d+)`, 'gm'))) out[m[1]!] = Number(m[2]);
    return out;
  };
  return { operations: read('operations_total', 'operation'), failures: read('request_failures_total', 'operation'), errors: read('errors_total', 'type') };
}

const delta = (after: Counts, before: Counts): Counts => Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? 0)]));

beforeAll(async () => {
  n = await startGrpcNode({ args: ['--metrics-addr', 'same', '--max-blob-bytes', '1MiB'] });
  blobs = client('BlobService', n.target);
});
afterAll(async () => {
  blobs?.close();
  await n?.stop();
});

describe('BlobService failures in the metrics', () => {
  it('counts each failed call once, by operation, whichever layer refused it', async () => {
    const before = await counters();
    const short = { id: Buffer.from([1]) };
    expect((await failure(unary(blobs, 'Put', { data: Buffer.from('x'), policy: 9 }))).code).toBe(3);
    expect((await failure(unary(blobs, 'Put', { data: Buffer.alloc(2 * 1024 * 1024) }))).code).toBe(8);
    expect((await failure(putStream(blobs, [{ data: Buffer.from('never final') }]))).code).toBe(13);
    expect((await failure(unary(blobs, 'Get', { id: short }))).code).toBe(3);
    expect((await failure(unary(blobs, 'Get', { id: { id: Buffer.alloc(16, 2) } }))).code).toBe(5);
    expect((await failure(getStream(blobs, Buffer.alloc(16, 3)))).code).toBe(5);
    expect((await failure(unary(blobs, 'Stat', { id: short }))).code).toBe(3);
    expect((await failure(unary(blobs, 'Delete', { id: short }))).code).toBe(3);
    expect((await failure(unary(blobs, 'List', { prefix: 'ZZ' }))).code).toBe(3);
    const after = await counters();
    expect(delta(after.failures, before.failures)).toEqual({ put: 3, get: 3, stat: 1, delete: 1, list: 1 });
    expect(delta(after.operations, before.operations)).toEqual({ put: 3, get: 3, stat: 1, delete: 1, list: 1 });
    // All nine are the client's: a stream without its final chunk too, whatever status the spec
    // gives it (500), so an alert on storage errors stays quiet.
    const errors = delta(after.errors, before.errors);
    expect(errors.client).toBe(9);
    expect(Object.values(errors).reduce((a, b) => a + b, 0)).toBe(9);
  });

  it('a unary Put over MaxBlobBytes stores nothing; a list prefix is read case-insensitively, hex only', async () => {
    const big = await failure(unary(blobs, 'Put', { data: Buffer.alloc(1024 * 1024 + 1, 7) }));
    expect(big.details).toContain('exceeds the limit of 1048576 bytes');
    const stored = await unary<{ id: { id: Buffer } }>(blobs, 'Put', { data: Buffer.alloc(1024 * 1024, 7) });
    const hex = stored.id.id.toString('hex');
    const page = await unary<{ ids: { id: Buffer }[] }>(blobs, 'List', { prefix: hex.slice(0, 2).toUpperCase() });
    expect(page.ids.map((i) => i.id.toString('hex'))).toContain(hex);
    expect((await failure(unary(blobs, 'List', { prefix: 'c8-' }))).details).toContain('invalid prefix');
  });
});
