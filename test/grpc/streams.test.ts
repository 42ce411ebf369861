/**
 * PutStream and GetStream over real gRPC: multi-chunk round trips, the spec's stream rules
 * (final chunk, no interleaving, policy on the first chunk), deadlines, cancellation, and flow
 * control (a paused reader does not make the node buffer the blob).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, chunksOf, failure, getStream, patterned, putStream, startGrpcNode, Status, unary } from './helpers.js';
import { logLines } from '../helpers/log.js';
import { waitFor } from '../helpers/wait.js';

let n: GrpcNode;

beforeAll(async () => {
  // An access line for every call: the line of a call the client gave up on says the node has ended it too.
  n = await startGrpcNode({ args: ['--access-log-every', '1'] });
});

afterAll(async () => {
  await n?.stop();
});

const MiB = 1024 * 1024;
const NONE = 1;

/** Files left in the data dir's temp area by unfinished uploads (none once a stream is discarded). */
function tempFiles(dataDir: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (/tmp|\.part/.test(entry.name)) found.push(join(dir, entry.name));
    }
  };
  walk(dataDir);
  return found;
}

/** Metadata that names a call on its access line. */
function requestId(id: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('x-request-id', id);
  return metadata;
}

/** The node has ended the call with request id `id`, answered or not (its access line is out). */
const ended = (node: GrpcNode, id: string): boolean => logLines(node.node.output()).some((l) => l.access === 'grpc' && l.reqId === id);

async function listAll(): Promise<string[]> {
  const page = await unary(n.blobs, 'List', { limit: 10000 });
  return (page.ids ?? []).map((i: { id: Buffer }) => i.id.toString('hex'));
}

describe('PutStream and GetStream', () => {
  for (const [label, size, chunk] of [
    ['0 bytes', 0, 1024],
    ['4 KiB in one chunk', 4096, 4096],
    ['1 MiB + 7 in odd chunks', MiB + 7, 100_000],
    ['20 MiB in 1 MiB chunks', 20 * MiB, MiB],
  ] as const) {
    it(`round-trips ${label} exactly; GetStream chunks are at most 1 MB (10^6 bytes), final only on the last`, async () => {
      const data = patterned(size, size + 11);
      const put = await putStream(n.blobs, chunksOf(data, chunk, { policy: NONE, labels: { via: 'stream' } }));
      expect(Number(put.size)).toBe(size);
      const got = await getStream(n.blobs, put.id.id);
      expect(got.data.equals(data)).toBe(true);
      expect(Math.max(...got.sizes)).toBeLessThanOrEqual(1_000_000);
      expect(got.finals.at(-1)).toBe(true);
      expect(got.finals.slice(0, -1).every((f) => !f)).toBe(true);
      const stat = await unary(n.blobs, 'Stat', { id: put.id });
      expect(stat.meta.labels).toEqual({ via: 'stream' });
      expect(stat.meta.policy).toBe(NONE);
    });
  }

  it('a stream of the same bytes as a unary put answers the same id (dedup)', async () => {
    const data = patterned(3 * MiB, 5);
    const unaryPut = await unary(n.blobs, 'Put', { data });
    const streamed = await putStream(n.blobs, chunksOf(data, 256 * 1024));
    expect(streamed.id.id.equals(unaryPut.id.id)).toBe(true);
  });

  it('chunks may carry the same id on every chunk', async () => {
    const tag = { id: Buffer.alloc(16, 1) };
    const data = patterned(3000, 8);
    const chunks = [...chunksOf(data, 1000)].map((c) => ({ ...c, id: tag }));
    const put = await putStream(n.blobs, chunks);
    expect(Number(put.size)).toBe(3000);
  });

  it('with GrpcMaxMessageBytes below 1 MiB, GetStream sends smaller chunks that fit (put in 64 KiB chunks that fill exactly 1 MiB, then 7 bytes)', async () => {
    const small = await startGrpcNode({ args: ['--grpc-max-message-bytes', '128KiB'] });
    try {
      const data = patterned(MiB + 7, 99);
      const put = await putStream(small.blobs, chunksOf(data, 64 * 1024, { policy: NONE })); // 16 chunks fill exactly 1 MiB
      const got = await getStream(small.blobs, put.id.id);
      expect(got.data.equals(data)).toBe(true);
      expect(Math.max(...got.sizes)).toBeLessThanOrEqual(128 * 1024 - 16);
      expect(got.finals.filter((f) => f)).toHaveLength(1);
      expect(got.finals.at(-1)).toBe(true);
    } finally {
      await small.stop();
    }
  });

  it('GetStream of a missing blob answers NOT_FOUND; a bad id INVALID_ARGUMENT', async () => {
    expect((await failure(getStream(n.blobs, Buffer.alloc(16, 0xee)))).code).toBe(Status.NOT_FOUND);
    const bad = await failure(getStream(n.blobs, Buffer.alloc(5)));
    expect(bad.code).toBe(Status.INVALID_ARGUMENT);
    expect(bad.details).toMatch(/invalid blob ID/);
  });
});

describe('PutStream rules', () => {
  it('a stream that ends without a final chunk answers INTERNAL and stores nothing', async () => {
    const before = await listAll();
    const data = patterned(3 * MiB, 21);
    const chunks = [...chunksOf(data, MiB)].map((c) => ({ ...c, final: false }));
    const err = await failure(putStream(n.blobs, chunks));
    expect(err.code).toBe(Status.INTERNAL);
    expect(err.details).toBe('put stream ended before the final chunk');
    expect(await listAll()).toEqual(before);
    await waitFor(() => tempFiles(n.node.dataDir).length === 0, { what: 'tempFiles(n.node.dataDir).length === 0', timeoutMs: 10_000 });
  });

  it('an empty stream (no chunk at all) answers INTERNAL', async () => {
    const err = await failure(putStream(n.blobs, []));
    expect(err.code).toBe(Status.INTERNAL);
  });

  it('a chunk after the final chunk answers INVALID_ARGUMENT and stores nothing', async () => {
    const before = await listAll();
    const err = await failure(putStream(n.blobs, [{ data: Buffer.from('abc'), final: true }, { data: Buffer.from('def'), final: true }]));
    expect(err.code).toBe(Status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/after the final chunk/);
    expect(await listAll()).toEqual(before);
  });

  it('interleaved blobs (a chunk with another id) answer INVALID_ARGUMENT and store nothing', async () => {
    const before = await listAll();
    const err = await failure(
      putStream(n.blobs, [
        { id: { id: Buffer.alloc(16, 1) }, data: patterned(MiB + 3, 1) },
        { id: { id: Buffer.alloc(16, 2) }, data: patterned(MiB, 2) },
        { id: { id: Buffer.alloc(16, 1) }, data: Buffer.from('x'), final: true },
      ]),
    );
    expect(err.code).toBe(Status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/interleaved/);
    expect(await listAll()).toEqual(before);
    await waitFor(() => tempFiles(n.node.dataDir).length === 0, { what: 'tempFiles(n.node.dataDir).length === 0', timeoutMs: 10_000 });
  });

  it('an id of the wrong length on a chunk answers INVALID_ARGUMENT naming an invalid blob ID', async () => {
    const err = await failure(putStream(n.blobs, [{ id: { id: Buffer.alloc(4) }, data: Buffer.from('x'), final: true }]));
    expect(err.code).toBe(Status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/invalid blob ID/);
  });

  it('policy or labels on a later chunk answer INVALID_ARGUMENT', async () => {
    const policy = await failure(putStream(n.blobs, [{ data: Buffer.from('a') }, { data: Buffer.from('b'), policy: 2, final: true }]));
    expect(policy.code).toBe(Status.INVALID_ARGUMENT);
    const labels = await failure(putStream(n.blobs, [{ data: Buffer.from('a') }, { data: Buffer.from('b'), labels: { a: 'b' }, final: true }]));
    expect(labels.code).toBe(Status.INVALID_ARGUMENT);
  });

  it('a bad policy on the first chunk fails before the bytes are taken; EC answers FAILED_PRECONDITION', async () => {
    expect((await failure(putStream(n.blobs, [{ data: Buffer.from('a'), policy: 17, final: true }]))).code).toBe(Status.INVALID_ARGUMENT);
    expect((await failure(putStream(n.blobs, [{ data: Buffer.from('a'), policy: 4, final: true }]))).code).toBe(Status.FAILED_PRECONDITION);
  });

  it('a stream larger than MaxBlobBytes answers RESOURCE_EXHAUSTED and stores nothing', async () => {
    const small = await startGrpcNode({ args: ['--max-blob-bytes', '2MiB'] });
    try {
      const err = await failure(putStream(small.blobs, chunksOf(patterned(3 * MiB, 4), MiB)));
      expect(err.code).toBe(Status.RESOURCE_EXHAUSTED);
      expect((await unary(small.blobs, 'List', {})).ids ?? []).toEqual([]);
      await waitFor(() => tempFiles(small.node.dataDir).length === 0, { what: 'tempFiles(small.node.dataDir).length === 0', timeoutMs: 10_000 });
    } finally {
      await small.stop();
    }
  });
});

describe('deadlines and cancellation', () => {
  it('a tiny deadline on a big put stream answers DEADLINE_EXCEEDED and leaves nothing behind', async () => {
    const before = await listAll();
    // 8 MiB sent a chunk per 100 ms: the 150 ms deadline passes while the stream is still open.
    // (Time is the subject: a stream slower than its deadline.)
    const data = patterned(MiB, 31);
    let call: grpc.ClientWritableStream<unknown>;
    const err = await new Promise<{ code: number }>((resolve) => {
      call = n.blobs.PutStream!(requestId('past-deadline'), { deadline: Date.now() + 150 }, (e: grpc.ServiceError | null) => resolve({ code: e ? e.code : Status.OK })) as grpc.ClientWritableStream<unknown>;
      call.on('error', () => undefined);
      void (async () => {
        for (let i = 0; i < 8 && !call.destroyed; i++) {
          call.write({ data, final: i === 7 });
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
    });
    expect(err.code).toBe(Status.DEADLINE_EXCEEDED);
    // Once the node has ended the call (its access line), nothing of it can be stored any more.
    await waitFor(() => ended(n, 'past-deadline'), { what: 'the node\'s access line of the PutStream', timeoutMs: 10_000 });
    expect(await listAll()).toEqual(before);
    await waitFor(() => tempFiles(n.node.dataDir).length === 0, { what: 'tempFiles(n.node.dataDir).length === 0', timeoutMs: 10_000 });
  });

  it('a tiny deadline on a big get stream answers DEADLINE_EXCEEDED; the node serves on', async () => {
    const data = patterned(64 * MiB, 41);
    const put = await putStream(n.blobs, chunksOf(data, MiB, { policy: NONE }));
    const err = await failure(getStream(n.blobs, put.id.id, { deadlineMs: 50 }));
    expect(err.code).toBe(Status.DEADLINE_EXCEEDED);
    const again = await getStream(n.blobs, put.id.id);
    expect(again.data.equals(data)).toBe(true);
  });

  it('a put stream cancelled by the client stores nothing', async () => {
    const before = await listAll();
    const call = n.blobs.PutStream!(requestId('cancelled'), () => undefined) as grpc.ClientWritableStream<unknown>;
    call.on('error', () => undefined);
    for (let i = 0; i < 5; i++) call.write({ data: patterned(MiB, 50 + i) });
    // Cancelled while the node stores it (its temp file is there), and once the node has ended it
    // (its access line), nothing of it can be stored any more.
    await waitFor(() => tempFiles(n.node.dataDir).length > 0, { what: 'the stream\'s temp file', timeoutMs: 10_000 });
    call.cancel();
    await waitFor(() => ended(n, 'cancelled'), { what: 'the node\'s access line of the PutStream', timeoutMs: 10_000 });
    expect(await listAll()).toEqual(before);
    await waitFor(() => tempFiles(n.node.dataDir).length === 0, { what: 'tempFiles(n.node.dataDir).length === 0', timeoutMs: 10_000 });
  });
});

describe('idle streams', () => {
  it('a put stream that sends nothing for BodyIdleTimeoutMs is cut with DEADLINE_EXCEEDED and stores nothing', async () => {
    const own = await startGrpcNode({ args: ['--body-idle-timeout-ms', '300'] });
    try {
      const err = await failure(
        new Promise((resolve, reject) => {
          const call = own.blobs.PutStream!((e: grpc.ServiceError | null, r: unknown) => (e ? reject({ code: e.code, details: e.details }) : resolve(r)));
          call.write({ data: patterned(2 * MiB, 5), policy: NONE }); // and then nothing, without half-closing
        }),
      );
      expect(err.code).toBe(Status.DEADLINE_EXCEEDED);
      expect(err.details).toMatch(/sent nothing/);
      expect((await unary(own.blobs, 'List', {})).ids ?? []).toEqual([]);
      await waitFor(() => tempFiles(own.node.dataDir).length === 0, { what: 'tempFiles(own.node.dataDir).length === 0', timeoutMs: 10_000 });
    } finally {
      await own.stop();
    }
  });
});

describe('shutdown', () => {
  it('SIGTERM with a put stream in progress: the stream is cut after ShutdownTimeoutMs, the node exits 0, nothing is stored', async () => {
    const own = await startGrpcNode({ args: ['--shutdown-timeout-ms', '500'] });
    const call = own.blobs.PutStream!(() => undefined) as grpc.ClientWritableStream<unknown>;
    call.on('error', () => undefined);
    call.write({ data: patterned(2 * MiB, 77), policy: NONE });
    // SIGTERM while the node stores it (its temp file is there).
    await waitFor(() => tempFiles(own.node.dataDir).length > 0, { what: 'the stream\'s temp file', timeoutMs: 10_000 });
    own.blobs.close();
    expect(await own.node.stop()).toBe(0);
    expect(tempFiles(own.node.dataDir)).toEqual([]);
    // The data dir reopens with nothing stored.
    const again = await startGrpcNode({ dataDir: own.node.dataDir });
    try {
      expect((await unary(again.blobs, 'List', {})).ids ?? []).toEqual([]);
    } finally {
      await again.stop();
    }
  });
});

describe('flow control', () => {
  it('a paused GetStream reader keeps the node from buffering the blob (300 MiB, RSS bounded)', async () => {
    const size = 300 * MiB;
    const block = patterned(MiB, 61);
    function* blob(): Generator<Record<string, unknown>> {
      for (let i = 0; i < 300; i++) {
        const chunk = Buffer.from(block);
        chunk.writeUInt32LE(i, 0); // distinct chunks
        yield { data: chunk, final: i === 299, ...(i === 0 ? { policy: NONE } : {}) };
      }
    }
    const put = await putStream(n.blobs, blob());
    expect(Number(put.size)).toBe(size);
    const rssBefore = n.node.rssBytes();

    const call = n.blobs.GetStream!({ id: put.id }) as grpc.ClientReadableStream<{ data: Buffer }>;
    let received = 0;
    let hold = true;
    call.on('data', (chunk: { data: Buffer }) => {
      received += chunk.data.length;
      if (hold && received >= 8 * MiB) call.pause();
    });
    const ended = new Promise<void>((resolve, reject) => {
      call.on('end', resolve);
      call.on('error', reject);
    });
    await waitFor(() => received >= 8 * MiB, { what: 'received >= 8 * MiB', timeoutMs: 10_000 });
    // The node would run ahead here if it could: a span of time, as nothing the node reports
    // tells how far it has read the blob for a reader that holds still.
    await new Promise((r) => setTimeout(r, 1500));
    const rssPaused = n.node.rssBytes();
    expect(received).toBeLessThan(64 * MiB);
    // grpc-js queue (16 messages) + HTTP/2 windows + read-ahead: tens of MiB, never the blob.
    expect(rssPaused - rssBefore).toBeLessThan(96 * MiB);
    hold = false;
    call.resume();
    await ended;
    expect(received).toBe(size);
  });
});
