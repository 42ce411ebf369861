/**
 * The gRPC listener's connections are bounded (src/grpc/connection-limits.ts): one that holds no
 * call for grpcIdleTimeoutMs is closed, whether it sent HTTP/2's preface or nothing at all, and one
 * remote address holds at most grpcMaxConnectionsPerAddress at once. Without these, a host that
 * opened connections and sent nothing held them for ever, until the node ran out of file handles
 * and every listener with it.
 */
import http2 from 'node:http2';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GrpcNode, patterned, startGrpcNode, unary } from './helpers.js';
import { waitFor } from '../helpers/wait.js';
import { frame, varint } from './wire.js';

/** PutChunk {data = 2, final = 3, policy = 4}: the policy (NONE) on the first. */
const putChunk = (data: Buffer, final: boolean, first: boolean): Buffer =>
  Buffer.concat([Buffer.from([0x12, ...varint(data.length)]), data, Buffer.from(final ? [0x18, 1] : []), Buffer.from(first ? [0x20, 1] : [])]);

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const IDLE_MS = 1500;
const PER_ADDRESS = 8;

let n: GrpcNode;
const sockets: Socket[] = [];

beforeAll(async () => {
  n = await startGrpcNode({ args: ['--grpc-idle-timeout-ms', String(IDLE_MS), '--grpc-max-connections-per-address', String(PER_ADDRESS)] });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await n?.stop();
});

/** A raw TCP connection to the gRPC port (its `closed` turns true once the node closes it). */
async function open(preface: boolean): Promise<Socket> {
  const socket = connect(n.grpcPort, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  socket.on('data', () => undefined);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  if (preface) socket.write(PREFACE);
  return socket;
}

describe('gRPC connections are bounded', () => {
  it('a connection that sends only the preface, or nothing, is closed once idle for grpcIdleTimeoutMs; calls go on', async () => {
    const idle = [await open(true), await open(true), await open(false)];
    const started = Date.now();
    await waitFor(() => idle.every((s) => s.closed), { what: 'the idle connections closed by the node', timeoutMs: IDLE_MS + 15_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS - 200);
    const stored = await unary<{ id: { id: Buffer } }>(n.blobs, 'Put', { data: patterned(1000, 1), policy: 1 });
    expect(stored.id.id.length).toBe(16);
  });

  it(`one address holds at most grpcMaxConnectionsPerAddress connections: the next are closed as they arrive`, async () => {
    const held: Socket[] = [];
    for (let i = 0; i < PER_ADDRESS + 4; i++) held.push(await open(true));
    await waitFor(() => held.slice(PER_ADDRESS).every((s) => s.closed), { what: 'the connections beyond the bound closed', timeoutMs: 10_000 });
    // Those within the bound stay open until idle as long as the setting says (the test's own
    // client channel may hold one of the bound's places).
    expect(held.slice(0, PER_ADDRESS - 1).some((s) => s.closed)).toBe(false);
    await waitFor(() => held.every((s) => s.closed), { what: 'all closed once idle', timeoutMs: IDLE_MS + 15_000 });
    // The address may connect again: a client's call is served.
    const stored = await unary<{ id: { id: Buffer } }>(n.blobs, 'Put', { data: patterned(1000, 2), policy: 1 });
    expect(stored.id.id.length).toBe(16);
  });

  it('a PutStream that runs longer than grpcIdleTimeoutMs keeps its connection: no GOAWAY while it is open', async () => {
    const session = http2.connect(`http://127.0.0.1:${n.grpcPort}`);
    let goawayAt = 0;
    session.on('goaway', () => (goawayAt ||= Date.now()));
    session.on('error', () => undefined);
    try {
      const req = session.request({ ':method': 'POST', ':path': '/blobstore.v1.BlobService/PutStream', 'content-type': 'application/grpc', te: 'trailers' });
      const status = new Promise<string>((resolve, reject) => {
        let code = '';
        req.on('response', (h) => (code ||= String(h['grpc-status'] ?? '')));
        req.on('trailers', (t) => (code = `${String(t['grpc-status'] ?? code)}${t['grpc-message'] ? ` ${decodeURI(String(t['grpc-message']))}` : ''}`));
        req.on('data', () => undefined);
        req.on('end', () => resolve(code));
        req.on('error', reject);
      });
      const until = Date.now() + 2 * IDLE_MS + 500;
      for (let i = 0; Date.now() < until; i++) {
        req.write(frame(putChunk(patterned(1000, 30 + i), false, i === 0)));
        await new Promise((r) => setTimeout(r, 250));
      }
      const ended = Date.now();
      req.end(frame(putChunk(Buffer.alloc(0), true, false)));
      expect(await status).toMatch(/^0\b/);
      expect(goawayAt === 0 || goawayAt >= ended, `GOAWAY ${goawayAt === 0 ? 'none' : `${ended - goawayAt} ms before the stream's end`}`).toBe(true);
    } finally {
      session.close();
    }
  });
});
