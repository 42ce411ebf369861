/**
 * The ceiling of the gRPC stream figures (issue 19): a bare node:http2 server (h2c, the node's
 * window and frame settings) that speaks just enough gRPC for the same clients to use it, on the
 * paths of BlobService's two streaming methods:
 *
 *   PutStream  takes the gRPC-framed request stream and discards it (`x-bare-mode: discard`) or
 *              writes it to a file and fsyncs it (`x-bare-mode: fsync`; PutStream stores
 *              durably), then answers one PutResponse and grpc-status 0
 *   GetStream  answers GetChunk messages of the node's size (half a MiB: the spec's 1 MB bound cuts
 *              each 1 MiB chunk in two; `final` on the last) for BYTES bytes, framed from
 *              one buffer in memory (`x-bare-mode: memory`) or read from FILE (`x-bare-mode: file`,
 *              a warm file), with the next read overlapping the wait for 'drain'
 *
 * No parsing beyond that, no checks, no hashing: what node:http2 itself costs to move the bytes.
 * Usage: node bare-h2.js WINDOW_BYTES FILE BYTES; prints `listening PORT`.
 */
import { promises as fsp } from 'node:fs';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { pieceBytes, STREAM_CHUNK_MAX_BYTES } from '../../src/blob/chunk.js';
import { MAX_FRAME_BYTES } from '../../src/grpc/http2-frames.js';

const [windowBytes, file, bytes] = [Number(process.argv[2]), process.argv[3]!, Number(process.argv[4])];
const MESSAGE = 1024 * 1024;
/** A GetChunk's data, as the node sends them (src/grpc/get-chunks.ts). */
const GET_MESSAGE = pieceBytes(MESSAGE, STREAM_CHUNK_MAX_BYTES);

/** A protobuf varint's bytes. */
function varintOf(value: number): number[] {
  const out: number[] = [];
  let v = value;
  for (; v >= 0x80; v = Math.floor(v / 128)) out.push((v & 0x7f) | 0x80);
  out.push(v);
  return out;
}

/** GetChunk {data = 1 (len MESSAGE or less), final = 2} framed: 5-byte prefix, tag, varint length. */
function frameHead(length: number, final: boolean): Buffer {
  const varint = varintOf(length);
  const head = Buffer.alloc(5 + 1 + varint.length);
  head.writeUInt32BE(1 + varint.length + length + (final ? 2 : 0), 1);
  head[5] = 0x0a;
  Buffer.from(varint).copy(head, 6);
  return head;
}
const FINAL = Buffer.from([0x10, 0x01]);

function grpcHeaders(): http2.OutgoingHttpHeaders {
  return { ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity' };
}

function finish(stream: http2.ServerHttp2Stream, message?: Buffer): void {
  stream.respond(grpcHeaders(), { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': '' }));
  if (message) stream.end(message);
  else stream.end();
}

/** PutResponse {id: BlobID {id: 16 zero bytes}, size}, framed. */
function putResponse(size: number): Buffer {
  const varint = varintOf(size);
  const body = Buffer.concat([Buffer.from([0x0a, 18, 0x0a, 16]), Buffer.alloc(16), Buffer.from([0x10, ...varint])]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

async function put(stream: http2.ServerHttp2Stream, fsync: boolean): Promise<void> {
  let received = 0;
  if (!fsync) {
    stream.on('data', (d: Buffer) => (received += d.length));
    await new Promise((r) => stream.once('end', r));
    finish(stream, putResponse(received));
    return;
  }
  const fh = await fsp.open(`${file}.put`, 'w');
  // Batches of >= 1 MiB per writev; the stream pauses while 8 MiB wait behind a write. As the
  // node's blob files (src/engine/blob-file.ts), a datasync runs in the background every 32 MiB
  // written, so the disk works while the bytes arrive and the last fsync has little left.
  let syncing: Promise<void> | undefined;
  let syncedUpTo = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let writing: Promise<void> | undefined;
  let position = 0;
  const flush = (): void => {
    if (writing || pendingBytes === 0) return;
    const batch = pending;
    const length = pendingBytes;
    pending = [];
    pendingBytes = 0;
    writing = fh.writev(batch, position).then(() => {
      position += length;
      writing = undefined;
      if (!syncing && position - syncedUpTo >= 32 * MESSAGE) {
        const upTo = position;
        syncing = fh.datasync().then(() => {
          syncedUpTo = upTo;
          syncing = undefined;
        });
      }
      if (stream.isPaused()) stream.resume();
      if (pendingBytes >= MESSAGE) flush();
    });
  };
  stream.on('data', (d: Buffer) => {
    received += d.length;
    pending.push(d);
    pendingBytes += d.length;
    if (pendingBytes >= MESSAGE) flush();
    if (pendingBytes >= 8 * MESSAGE) stream.pause();
  });
  await new Promise((r) => stream.once('end', r));
  while (writing || pendingBytes > 0) {
    flush();
    await writing;
  }
  await syncing;
  await fh.sync();
  await fh.close();
  // Removed, as the bench deletes the node's blob after its run: the next write on either side
  // finds pages just freed (on this VM a write into pages unused lately runs at a third the speed).
  await fsp.rm(`${file}.put`, { force: true });
  finish(stream, putResponse(received));
}

async function get(stream: http2.ServerHttp2Stream, fromFile: boolean): Promise<void> {
  stream.resume();
  await new Promise((r) => stream.once('end', r)); // the request message and half-close
  stream.respond(grpcHeaders(), { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'grpc-message': '' }));
  const count = Math.ceil(bytes / GET_MESSAGE);
  const memory = Buffer.concat([frameHead(GET_MESSAGE, false), Buffer.alloc(GET_MESSAGE, 0x5a)]);
  const fh = fromFile ? await fsp.open(file, 'r') : undefined;
  const read = async (i: number): Promise<Buffer> => {
    const length = Math.min(GET_MESSAGE, bytes - i * GET_MESSAGE);
    const final = i === count - 1;
    if (!fh) return !final ? memory : Buffer.concat([frameHead(length, true), memory.subarray(memory.length - length), FINAL]);
    const head = frameHead(length, final);
    const frame = Buffer.allocUnsafe(head.length + length + (final ? 2 : 0));
    head.copy(frame);
    await fh.read(frame, head.length, length, i * GET_MESSAGE);
    if (final) FINAL.copy(frame, head.length + length);
    return frame;
  };
  let next = read(0);
  for (let i = 0; i < count && !stream.destroyed; i++) {
    const frame = await next;
    if (i + 1 < count) next = read(i + 1);
    if (!stream.write(frame)) await new Promise((r) => stream.once('drain', r));
  }
  await fh?.close();
  stream.end();
}

const server = http2.createServer({ settings: { initialWindowSize: windowBytes, maxFrameSize: MAX_FRAME_BYTES } });
server.on('session', (session) => session.setLocalWindowSize(windowBytes));
server.on('connection', (socket: Socket) => socket.setNoDelay(true));
server.on('stream', (stream, headers) => {
  const path = headers[':path'];
  const mode = headers['x-bare-mode'];
  stream.on('error', () => undefined);
  const done = path?.endsWith('/PutStream') ? put(stream, mode === 'fsync') : path?.endsWith('/GetStream') ? get(stream, mode === 'file') : undefined;
  if (!done) {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'bare: PutStream and GetStream only' }, { endStream: true });
    return;
  }
  done.catch((err: Error) => {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    process.stderr.write(`bare: ${err.message}\n`);
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
