/**
 * PutStream chunks taken piece by piece (src/grpc/put-chunk-parser.ts through direct-streams.ts)
 * in a real node, with a bare node:http2 client that frames gRPC by hand: chunks after the first
 * sent one byte per DATA frame (every boundary of every field), ids and unknown fields around the
 * data, a data length that lies, a second data field, a stream cut or reset inside a chunk, a
 * policy changed on a later chunk. Whatever fails stores nothing and the node serves on.
 */
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, getStream, patterned, startGrpcNode, Status, unary } from './helpers.js';
import { bytesField, frame, varint } from './wire.js';

const KiB = 1024;
const NONE = 1;
const PUT = '/blobstore.v1.BlobService/PutStream';

let n: GrpcNode;

beforeAll(async () => {
  n = await startGrpcNode();
});

afterAll(async () => {
  await n?.stop();
});

/** PutChunk fields: id (on every chunk), unknown fields around the data, final, policy. */
function chunk(data: Buffer, opts: { id?: Buffer; final?: boolean; policy?: number; extra?: Buffer } = {}): Buffer {
  return Buffer.concat([
    opts.id ? bytesField(1, bytesField(1, opts.id)) : Buffer.alloc(0),
    Buffer.from([0x30, 0x96, 0x01]), // unknown field 6, varint 150
    bytesField(2, data),
    opts.extra ?? Buffer.alloc(0),
    Buffer.from([0x3d, 1, 2, 3, 4]), // unknown field 7, fixed32
    Buffer.from(opts.final ? [0x18, 1] : []),
    Buffer.from(opts.policy === undefined ? [] : [0x20, opts.policy]),
  ]);
}

interface Answer {
  status: number;
  message: string;
}

/**
 * One PutStream: each piece is one write (one DATA frame). `end` false leaves the request open
 * and `reset` true resets it once every piece is written (the client goes away).
 */
async function call(pieces: Buffer[], opts: { end?: boolean; reset?: boolean } = {}): Promise<Answer | 'reset'> {
  const session = http2.connect(`http://127.0.0.1:${n.grpcPort}`);
  try {
    return await new Promise<Answer | 'reset'>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': PUT, 'content-type': 'application/grpc', te: 'trailers' });
      let headers: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      req.on('response', (h) => (headers = h));
      req.on('trailers', (t) => (trailers = t));
      req.resume();
      req.on('error', (err) => (opts.reset ? resolve('reset') : reject(err)));
      req.on('close', () => {
        if (opts.reset) return resolve('reset');
        const source = trailers['grpc-status'] !== undefined ? trailers : headers;
        resolve({ status: Number(source['grpc-status']), message: decodeURI(String(source['grpc-message'] ?? '')) });
      });
      void (async () => {
        for (const piece of pieces) {
          if (req.destroyed) return;
          if (!req.write(piece)) await new Promise((r) => req.once('drain', r));
        }
        if (opts.reset) req.close(http2.constants.NGHTTP2_CANCEL);
        else if (opts.end !== false) req.end();
      })();
    });
  } finally {
    session.close();
  }
}

/** `bytes` as 1-byte pieces. */
const bytewise = (bytes: Buffer): Buffer[] => Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));

async function ids(): Promise<string[]> {
  const page = await unary(n.blobs, 'List', { limit: 10000 });
  return (page.ids ?? []).map((i: { id: Buffer }) => i.id.toString('hex')).sort();
}

/** The stored blob's bytes, by its PutResponse id. */
async function stored(response: Buffer): Promise<Buffer> {
  // PutResponse {id: BlobID {id: 16 bytes} = 1, size = 2}, framed.
  return (await getStream(n.blobs, response.subarray(5 + 4, 5 + 20))).data;
}

/**
 * Like `call`, but also returns the response body (to read the stored id); `oneFrameEach` waits
 * for each piece to be written before the next, so each is a DATA frame of its own (node:http2
 * puts pieces written together into one frame).
 */
async function put(pieces: Buffer[], oneFrameEach = false, opts: { node?: GrpcNode; pauseMs?: number } = {}): Promise<{ status: number; body: Buffer }> {
  const session = http2.connect(`http://127.0.0.1:${(opts.node ?? n).grpcPort}`);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': PUT, 'content-type': 'application/grpc', te: 'trailers' });
      const parts: Buffer[] = [];
      let status = NaN;
      req.on('trailers', (t) => (status = Number(t['grpc-status'])));
      req.on('response', (h) => h['grpc-status'] !== undefined && (status = Number(h['grpc-status'])));
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('error', reject);
      req.on('end', () => resolve({ status, body: Buffer.concat(parts) }));
      void (async () => {
        for (const piece of pieces) {
          if (oneFrameEach) await new Promise((r) => req.write(piece, r));
          else if (!req.write(piece)) await new Promise((r) => req.once('drain', r));
          if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
        }
        req.end();
      })();
    });
  } finally {
    session.close();
  }
}

describe('PutStream chunks taken piece by piece', () => {
  it('chunks sent one byte per DATA frame, with ids and unknown fields around the data, store the exact bytes', async () => {
    const data = patterned(2 * KiB + 17, 3);
    const id = Buffer.alloc(16, 0x42);
    const parts = [data.subarray(0, 1000), data.subarray(1000, 1300), Buffer.alloc(0), data.subarray(1300, 1900), data.subarray(1900)];
    const first = frame(chunk(parts[0]!, { id, policy: NONE }));
    const rest = Buffer.concat(parts.slice(1).map((p, i) => frame(chunk(p, { id, final: i === parts.length - 2, policy: i === 1 ? NONE : undefined }))));
    const answer = await put([first, ...bytewise(rest)], true);
    expect(answer.status).toBe(Status.OK);
    expect((await stored(answer.body)).equals(data)).toBe(true);
  });

  it('large chunks cut at odd places across frames store the exact bytes', async () => {
    const data = patterned(3 * 1024 * KiB + 5, 9);
    const body = Buffer.concat([
      frame(chunk(data.subarray(0, 1024 * KiB), { policy: NONE })),
      frame(chunk(data.subarray(1024 * KiB, 2048 * KiB))),
      frame(chunk(data.subarray(2048 * KiB), { final: true })),
    ]);
    const pieces: Buffer[] = [];
    const sizes = [1, 2, 3, 5, 7, 11, 65_535, 13, 300_007];
    for (let at = 0, i = 0; at < body.length; i++) {
      pieces.push(body.subarray(at, at + sizes[i % sizes.length]!));
      at += sizes[i % sizes.length]!;
    }
    const answer = await put(pieces);
    expect(answer.status).toBe(Status.OK);
    expect((await stored(answer.body)).equals(data)).toBe(true);
  });

  it('a later chunk whose data length lies (longer than the message): INVALID_ARGUMENT, nothing stored', async () => {
    const before = await ids();
    const lying = frame(Buffer.concat([Buffer.from([0x12, ...varint(64 * KiB)]), patterned(1000, 1)]));
    const answer = await call([frame(chunk(patterned(2000, 2), { policy: NONE })), ...bytewise(lying.subarray(0, 20)), lying.subarray(20), frame(chunk(patterned(10, 3), { final: true }))]);
    expect(answer).toMatchObject({ status: Status.INVALID_ARGUMENT, message: expect.stringMatching(/malformed blobstore\.v1\.PutChunk: field data is truncated/) });
    expect(await ids()).toEqual(before);
  });

  it('a second data field in a later chunk: INVALID_ARGUMENT, nothing stored', async () => {
    const before = await ids();
    const twice = frame(chunk(patterned(100, 4), { extra: bytesField(2, patterned(50, 5)) }));
    const answer = await call([frame(chunk(patterned(100, 6), { policy: NONE })), twice, frame(chunk(patterned(10, 7), { final: true }))]);
    expect(answer).toMatchObject({ status: Status.INVALID_ARGUMENT, message: expect.stringMatching(/data field appears more than once/) });
    expect(await ids()).toEqual(before);
  });

  it('a later chunk with a malformed field after its data: INVALID_ARGUMENT, nothing stored', async () => {
    const before = await ids();
    const bad = frame(chunk(patterned(100, 8), { extra: Buffer.from([0x0a, 5, 1]) })); // id claims 5 bytes
    const answer = await call([frame(chunk(patterned(100, 9), { policy: NONE })), bad]);
    expect(answer).toMatchObject({ status: Status.INVALID_ARGUMENT, message: expect.stringMatching(/malformed blobstore\.v1\.PutChunk/) });
    expect(await ids()).toEqual(before);
  });

  it('a later chunk that changes the policy: INVALID_ARGUMENT, nothing stored', async () => {
    const before = await ids();
    const answer = await call([frame(chunk(patterned(100, 10), { policy: NONE })), frame(chunk(patterned(100, 11), { policy: 3, final: true }))]);
    expect(answer).toMatchObject({ status: Status.INVALID_ARGUMENT, message: expect.stringMatching(/policy is set on the first chunk/) });
    expect(await ids()).toEqual(before);
  });

  it('a half-close in the middle of a chunk\'s data: INTERNAL, nothing stored', async () => {
    const before = await ids();
    const cutShort = frame(chunk(patterned(64 * KiB, 12), { final: true }));
    const answer = await call([frame(chunk(patterned(100, 13), { policy: NONE })), cutShort.subarray(0, 1000)]);
    expect(answer).toMatchObject({ status: Status.INTERNAL, message: 'the request ended inside a message' });
    expect(await ids()).toEqual(before);
  });

  it('a stream reset in the middle of a chunk\'s data stores nothing; the node serves on', async () => {
    const before = await ids();
    const cutShort = frame(chunk(patterned(2 * 1024 * KiB, 14), { final: true }));
    expect(await call([frame(chunk(patterned(100, 15), { policy: NONE })), cutShort.subarray(0, 1024 * KiB)], { reset: true })).toBe('reset');
    expect(await ids()).toEqual(before);
    const answer = await put([frame(chunk(patterned(10, 16), { policy: NONE, final: true }))]);
    expect(answer.status).toBe(Status.OK);
  });
});

describe('PutStream and the body idle limit', () => {
  let slow: GrpcNode;
  beforeAll(async () => {
    slow = await startGrpcNode({ args: ['--body-idle-timeout-ms', '700'] });
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it('a first chunk that arrives slowly but steadily is not idle: it is stored', async () => {
    const data = patterned(60 * KiB, 17);
    const message = frame(chunk(data, { policy: NONE, final: true }));
    // 20 DATA frames, one every 100 ms: 2 s in all, more than twice the 700 ms idle limit.
    const size = Math.ceil(message.length / 20);
    const pieces = Array.from({ length: Math.ceil(message.length / size) }, (_, i) => message.subarray(i * size, (i + 1) * size));
    const answer = await put(pieces, true, { node: slow, pauseMs: 100 });
    expect(answer.status).toBe(Status.OK);
    expect((await getStream(slow.blobs, answer.body.subarray(5 + 4, 5 + 20))).data.equals(data)).toBe(true);
  });
});
