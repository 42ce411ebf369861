/**
 * PutStream and GetStream as served on their HTTP/2 streams (src/grpc/direct-streams.ts) in a real
 * node: the exact wire (checked with a bare node:http2 client that frames gRPC by hand, messages
 * split across DATA frames at odd places), errors and cancels in the middle of a stream, the
 * receive limit, grpc-timeout, and the calls that stay with grpc-js (compressed ones).
 */
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, chunksOf, client, failure, getStream, patterned, putStream, startGrpcNode, Status, unary } from './helpers.js';
import { frame, varint } from './wire.js';

const MiB = 1024 * 1024;
const NONE = 1;
const PUT = '/blobstore.v1.BlobService/PutStream';
const GET = '/blobstore.v1.BlobService/GetStream';

let n: GrpcNode;

beforeAll(async () => {
  n = await startGrpcNode();
});

afterAll(async () => {
  await n?.stop();
});

/** PutChunk {data = 2, final = 3, policy = 4}, encoded by hand. */
function putChunk(data: Buffer, final: boolean, policy?: number): Buffer {
  return Buffer.concat([
    Buffer.from([0x12, ...varint(data.length)]), data,
    Buffer.from(final ? [0x18, 1] : []),
    Buffer.from(policy === undefined ? [] : [0x20, policy]),
  ]);
}

/** Splits the framed messages from a response body; each message's bytes. */
function messages(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < body.length;) {
    expect(body[at]).toBe(0); // never compressed
    const length = body.readUInt32BE(at + 1);
    out.push(body.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return out;
}

interface RawAnswer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
  /** grpc-status from the trailers, or from the headers of a trailers-only answer. */
  status: number;
  message: string;
}

/**
 * One call with a bare node:http2 client: each piece of `pieces` is one write (one DATA frame);
 * `end` false leaves the request open.
 */
async function raw(port: number, path: string, pieces: Buffer[], headers: http2.OutgoingHttpHeaders = {}, end = true): Promise<RawAnswer> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<RawAnswer>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
      let responseHeaders: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const parts: Buffer[] = [];
      req.on('response', (h) => (responseHeaders = h));
      req.on('trailers', (t) => (trailers = t));
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('error', reject);
      // The answer is whole at the end of the response (the request side may still be open).
      req.on('end', () => {
        if (!req.destroyed) req.close();
        const source = trailers['grpc-status'] !== undefined ? trailers : responseHeaders;
        resolve({
          headers: responseHeaders, trailers, body: Buffer.concat(parts),
          status: Number(source['grpc-status']), message: decodeURI(String(source['grpc-message'] ?? '')),
        });
      });
      void (async () => {
        for (const piece of pieces) {
          if (req.destroyed) return;
          if (!req.write(piece)) await new Promise((r) => req.once('drain', r));
        }
        if (end) req.end();
      })();
    });
  } finally {
    session.close();
  }
}

/** `bytes` cut into pieces of the given sizes, cycling (so a 5-byte prefix and a message span DATA frames). */
function cut(bytes: Buffer, sizes: number[]): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  return out;
}

async function ids(node: GrpcNode = n): Promise<string[]> {
  const page = await unary(node.blobs, 'List', { limit: 10000 });
  return (page.ids ?? []).map((i: { id: Buffer }) => i.id.toString('hex')).sort();
}

describe('the wire, with a bare HTTP/2 client', () => {
  it('PutStream: messages cut across DATA frames at odd places store the blob; the answer is headers, one PutResponse, grpc-status 0 in trailers', async () => {
    const data = patterned(2 * MiB + 123, 7);
    const body = Buffer.concat([
      frame(putChunk(data.subarray(0, MiB), false, NONE)),
      frame(putChunk(data.subarray(MiB, 2 * MiB), false)),
      frame(putChunk(Buffer.alloc(0), false)), // an empty chunk is allowed
      frame(putChunk(data.subarray(2 * MiB), true)),
    ]);
    const answer = await raw(n.grpcPort, PUT, cut(body, [3, 1, 65_536, 7, 1_000_003, 2]));
    expect(answer.headers[':status']).toBe(200);
    expect(answer.headers['content-type']).toBe('application/grpc+proto');
    expect(answer.headers['grpc-encoding']).toBe('identity');
    expect(answer.trailers['grpc-status']).toBe('0');
    const [response, ...more] = messages(answer.body);
    expect(more).toEqual([]);
    // PutResponse {id: BlobID {id: 16 bytes} = 1, size = 2}
    expect([...response!.subarray(0, 4)]).toEqual([0x0a, 18, 0x0a, 16]);
    const id = response!.subarray(4, 20);
    expect([...response!.subarray(20)]).toEqual([0x10, ...varint(data.length)]);

    const got = await raw(n.grpcPort, GET, cut(frame(Buffer.concat([Buffer.from([0x0a, 18, 0x0a, 16]), id])), [2, 3, 100]));
    expect(got.status).toBe(0);
    const chunks = messages(got.body);
    const datas: Buffer[] = [];
    chunks.forEach((m, i) => {
      // GetChunk {data = 1, final = 2}: the data field, then `final` (10 01) on the last only.
      expect(m[0]).toBe(0x0a);
      let at = 1;
      let len = 0;
      for (let shift = 1; ; shift *= 128) {
        const b = m[at++]!;
        len += (b & 0x7f) * shift;
        if (b < 0x80) break;
      }
      datas.push(m.subarray(at, at + len));
      const rest = [...m.subarray(at + len)];
      expect(rest).toEqual(i === chunks.length - 1 ? [0x10, 1] : []);
    });
    expect(Buffer.concat(datas).equals(data)).toBe(true);
    expect(Math.max(...datas.map((d) => d.length))).toBeLessThanOrEqual(1_000_000);
  });

  it('an error before any answer is a trailers-only response; grpc-message is percent-encoded', async () => {
    const answer = await raw(n.grpcPort, GET, [frame(Buffer.from([0x0a, 2, 0x0a, 0]))]); // an empty blob id
    expect(answer.headers[':status']).toBe(200);
    expect(answer.headers['grpc-status']).toBe(String(Status.INVALID_ARGUMENT));
    expect(answer.headers['grpc-message']).toMatch(/^invalid%20blob%20ID/);
    expect(answer.body.length).toBe(0);
  });

  it('GetStream with no request message, or two, answers as grpc-js does', async () => {
    const none = await raw(n.grpcPort, GET, []);
    expect(none.status).toBe(Status.UNIMPLEMENTED);
    expect(none.message).toMatch(/no request message/);
    const request = frame(Buffer.from([0x0a, 18, 0x0a, 16, ...Buffer.alloc(16, 1)]));
    const two = await raw(n.grpcPort, GET, [request, request]);
    expect(two.status).toBe(Status.UNIMPLEMENTED);
    expect(two.message).toMatch(/second request message/);
  });

  it('a compressed message on a call that announced no compression is INTERNAL; nothing is stored', async () => {
    const before = await ids();
    const answer = await raw(n.grpcPort, PUT, [frame(putChunk(Buffer.from('abc'), true, NONE), 1)]);
    expect(answer.status).toBe(Status.INTERNAL);
    expect(answer.message).toMatch(/compressed/);
    expect(await ids()).toEqual(before);
  });

  it('grpc-timeout: an open put stream past its deadline answers DEADLINE_EXCEEDED and stores nothing; a bad value is INTERNAL', async () => {
    const before = await ids();
    const late = await raw(n.grpcPort, PUT, [frame(putChunk(patterned(MiB, 3), false, NONE))], { 'grpc-timeout': '200m' }, false);
    expect(late.status).toBe(Status.DEADLINE_EXCEEDED);
    expect(late.message).toBe('Deadline exceeded');
    const bad = await raw(n.grpcPort, PUT, [frame(putChunk(Buffer.from('x'), true, NONE))], { 'grpc-timeout': 'soon' });
    expect(bad.status).toBe(Status.INTERNAL);
    expect(bad.message).toMatch(/Invalid grpc-timeout/);
    expect(await ids()).toEqual(before);
  });
});

describe('errors and cancels in the middle of a stream', () => {
  it('a malformed chunk after 3 MiB, with 8 MiB more on the way: INVALID_ARGUMENT, nothing stored, the node serves on', async () => {
    const before = await ids();
    const good = [0, 1, 2].map((i) => frame(putChunk(patterned(MiB, 10 + i), false, i === 0 ? NONE : undefined)));
    const malformed = frame(Buffer.from([0x12, 0x05, 1, 2])); // data says 5 bytes, 2 follow
    const more = Array.from({ length: 8 }, (_, i) => frame(putChunk(patterned(MiB, 20 + i), i === 7)));
    const answer = await raw(n.grpcPort, PUT, [...good, malformed, ...more]);
    expect(answer.status).toBe(Status.INVALID_ARGUMENT);
    expect(answer.message).toMatch(/malformed blobstore\.v1\.PutChunk/);
    expect(await ids()).toEqual(before);
    const again = await putStream(n.blobs, chunksOf(patterned(MiB, 5), 256 * 1024, { policy: NONE }));
    expect(Number(again.size)).toBe(MiB);
  });

  it('a message over GrpcMaxMessageBytes answers RESOURCE_EXHAUSTED (bare client and grpc-js), nothing stored', async () => {
    const small = await startGrpcNode({ args: ['--grpc-max-message-bytes', '128KiB'] });
    try {
      const answer = await raw(small.grpcPort, PUT, [frame(putChunk(patterned(200 * 1024, 1), true, NONE))]);
      expect(answer.status).toBe(Status.RESOURCE_EXHAUSTED);
      expect(answer.message).toMatch(/larger than max/);
      const viaGrpcJs = await failure(putStream(small.blobs, [{ data: patterned(200 * 1024, 2), final: true, policy: NONE }]));
      expect(viaGrpcJs.code).toBe(Status.RESOURCE_EXHAUSTED);
      expect(await ids(small)).toEqual([]);
    } finally {
      await small.stop();
    }
  });

  it('a GetStream cancelled after two messages: the client sees CANCELLED, the node logs no error and serves the blob whole next', async () => {
    const data = patterned(32 * MiB, 77);
    const put = await putStream(n.blobs, chunksOf(data, MiB, { policy: NONE }));
    const code = await new Promise<number>((resolve) => {
      const call = n.blobs.GetStream!({ id: put.id }) as grpc.ClientReadableStream<{ data: Buffer }>;
      let seen = 0;
      call.on('data', () => {
        if (++seen === 2) call.cancel();
      });
      call.on('error', (err: grpc.ServiceError) => resolve(err.code));
      call.on('end', () => resolve(Status.OK));
    });
    expect(code).toBe(Status.CANCELLED);
    const again = await getStream(n.blobs, put.id.id);
    expect(again.data.equals(data)).toBe(true);
    expect(n.node.output()).not.toMatch(/"level":"error"[^\n]*GetStream/);
  });

  it('a put stream reset by the client right after its half-close leaves the node serving (no answer is possible)', async () => {
    for (let i = 0; i < 5; i++) {
      const session = http2.connect(`http://127.0.0.1:${n.grpcPort}`);
      const req = session.request({ ':method': 'POST', ':path': PUT, 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => undefined);
      req.end(frame(putChunk(patterned(4096, 100 + i), true, NONE)));
      await new Promise((r) => setImmediate(r));
      req.close(http2.constants.NGHTTP2_CANCEL);
      await new Promise((r) => req.on('close', r));
      session.close();
    }
    const again = await putStream(n.blobs, chunksOf(patterned(MiB, 6), MiB, { policy: NONE }));
    expect(Number(again.size)).toBe(MiB);
  });
});

describe('calls that stay with grpc-js', () => {
  it('a gzip-compressed PutStream and GetStream (grpc-js client with compression) round-trip', async () => {
    const gz = client('BlobService', n.target, { 'grpc.default_compression_algorithm': 2 });
    try {
      const data = patterned(3 * MiB + 5, 123);
      const put = await putStream(gz, chunksOf(data, MiB, { policy: NONE }));
      expect(Number(put.size)).toBe(data.length);
      const got = await getStream(gz, put.id.id);
      expect(got.data.equals(data)).toBe(true);
    } finally {
      gz.close();
    }
  });
});
