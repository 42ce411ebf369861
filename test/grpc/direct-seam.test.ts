/**
 * The seam of src/grpc/direct-seam.ts against the installed grpc-js: its server must still make
 * its HTTP/2 server through its createHttp2Server method, and streams must still arrive through
 * that server's `emit('stream')`, or PutStream and GetStream silently fall back to grpc-js's
 * slower path. This test fails loudly when a grpc-js upgrade breaks either. The settings and the
 * seam stay on that one server: node:http2 itself is never patched.
 * A real grpc-js server and client on 127.0.0.1, port 0.
 */
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DirectHandler } from '../../src/grpc/direct-seam.js';
import { servedDirectly } from '../../src/grpc/direct-seam.js';
import { widenHttp2Windows } from '../../src/grpc/server.js';
import { MAX_FRAME_BYTES } from '../../src/grpc/http2-frames.js';

const identity = (b: Buffer): Buffer => b;
const method = (path: string, requestStream = false): grpc.MethodDefinition<Buffer, Buffer> => ({
  path, requestStream, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
});
const definition = { Direct: method('/seam.Test/Direct'), Other: method('/seam.Test/Other') };

let server: grpc.Server;
let serverPort = 0;
let client: grpc.Client & Record<string, (...args: unknown[]) => any>;
let created: () => boolean;
const createServer = http2.createServer;
const connect = http2.connect;
const seen: string[] = [];

beforeAll(async () => {
  // The direct route answers trailers-only with a status grpc-js's handler never gives.
  const direct: DirectHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    seen.push(String(headers[':path']));
    stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': String(grpc.status.ALREADY_EXISTS), 'grpc-message': 'served%20directly' }, { endStream: true });
    stream.resume();
  };
  server = new grpc.Server();
  server.addService(definition, {
    Direct: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, Buffer.from('grpc-js')),
    Other: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, Buffer.from('grpc-js')),
  });
  created = widenHttp2Windows(server, 8 * 1024 * 1024, new Map([['/seam.Test/Direct', direct]]));
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => {
    return err ? reject(err) : resolve(p);
  }));
  serverPort = port;
  const Ctor = grpc.makeGenericClientConstructor(definition, 'SeamTest');
  client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as typeof client;
});

afterAll(() => {
  client?.close();
  server?.forceShutdown();
});

function call(name: 'Direct' | 'Other', options: grpc.CallOptions = {}): Promise<{ code: number; details: string; body?: string }> {
  return new Promise((resolve) => client[name]!(Buffer.from('x'), new grpc.Metadata(), options, (err: grpc.ServiceError | null, body?: Buffer) =>
    resolve(err ? { code: err.code, details: err.details } : { code: 0, details: '', body: body?.toString() })));
}

describe('the grpc-js seam', () => {
  it('grpc-js makes its HTTP/2 server through the wrapped createHttp2Server of this instance', () => {
    expect(created()).toBe(true);
  });

  it('node:http2 is left alone: other servers and clients in the process keep Node\'s defaults', async () => {
    expect(http2.createServer).toBe(createServer);
    expect(http2.connect).toBe(connect);
    // Our server announces its large frames and window; a plain client announces Node's own.
    const session = http2.connect(`http://127.0.0.1:${serverPort}`);
    try {
      const remote = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
      expect(remote.maxFrameSize).toBe(MAX_FRAME_BYTES);
      expect(remote.initialWindowSize).toBe(8 * 1024 * 1024);
      expect(session.localSettings.maxFrameSize).toBe(16384);
    } finally {
      session.close();
    }
  });

  it('a stream on a direct route reaches our handler, not grpc-js', async () => {
    expect(await call('Direct')).toEqual({ code: grpc.status.ALREADY_EXISTS, details: 'served directly' });
    expect(seen).toEqual(['/seam.Test/Direct']);
  });

  it('every other stream still reaches grpc-js', async () => {
    expect(await call('Other')).toEqual({ code: 0, details: '', body: 'grpc-js' });
    expect(seen).toEqual(['/seam.Test/Direct']);
  });

  it('only plain calls are taken: a compressed request or another content type stays with grpc-js', () => {
    const base = { ':method': 'POST', ':path': '/x', 'content-type': 'application/grpc' };
    expect(servedDirectly(base)).toBe(true);
    expect(servedDirectly({ ...base, 'content-type': 'application/grpc+proto', 'grpc-encoding': 'identity' })).toBe(true);
    expect(servedDirectly({ ...base, 'grpc-encoding': 'gzip' })).toBe(false);
    expect(servedDirectly({ ...base, 'content-type': 'application/grpc+json' })).toBe(false);
    expect(servedDirectly({ ...base, 'content-type': 'text/plain' })).toBe(false);
    expect(servedDirectly({ ...base, ':method': 'GET' })).toBe(false);
  });
});
