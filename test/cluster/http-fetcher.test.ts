/**
 * The data plane's reads (src/cluster/transport/http-fetcher.ts) against a peer that answers in
 * fragments of any size: to a sink, and read in place into a target (an EC read's column queue),
 * which gets every body byte in order in its own memory, holds reading while it has no room, and
 * keeps the connection for the next fetch; a body longer than announced fails the fetch.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type BytesTarget, HttpFetcher } from '../../src/cluster/transport/http-fetcher.js';
import { PeerLink } from '../../src/cluster/transport/peer-link.js';
import { patternBytes } from '../helpers/blobs.js';

interface Peer {
  address: string;
  connections: number;
  requests: string[];
  server: Server;
}

/**
 * How a peer answers a GET with a Range: as HTTP says (206, the range's bytes), or wrongly: the
 * whole body with a 200, or another range's bytes with their own Content-Range.
 */
type Ranges = 'honest' | 'ignored' | 'shifted';

/** Answers each GET with `body` (or `answer` when given), written in fragments of the given sizes. */
async function peer(body: Buffer, fragments: number[], answer?: (body: Buffer) => Buffer, ranges: Ranges = 'honest', prefix: Buffer = Buffer.alloc(0)): Promise<Peer> {
  const p: Peer = { address: '', connections: 0, requests: [], server: createServer() };
  p.server.on('connection', (socket: Socket) => {
    p.connections++;
    // The fetcher closes a connection whose fetch failed: writes after that meet a reset.
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', (d) => {
      head += d.toString('latin1');
      while (head.includes('\r\n\r\n')) {
        const end = head.indexOf('\r\n\r\n');
        const request = head.slice(0, end);
        p.requests.push(request);
        head = head.slice(end + 4);
        void send(socket, /\r\nRange: bytes=(\d+)-(\d+)/.exec(request));
      }
    });
  });
  const send = async (socket: Socket, range: RegExpExecArray | null): Promise<void> => {
    let head = `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`;
    let payload = body;
    if (range && ranges !== 'ignored') {
      const shift = ranges === 'shifted' ? -Number(range[1]) : 0;
      const start = Number(range[1]) + shift;
      const last = Number(range[2]) + shift;
      // A column read with chunk values has them before the range's bytes (column-check.ts).
      payload = Buffer.concat([prefix, body.subarray(start, last + 1)]);
      head = `HTTP/1.1 206 Partial Content\r\nContent-Range: bytes ${start}-${last}/${body.length}\r\nContent-Length: ${payload.length}\r\n\r\n`;
    }
    const bytes = Buffer.concat([Buffer.from(head), answer ? answer(payload) : payload]);
    for (let at = 0, i = 0; at < bytes.length; i++) {
      const n = fragments[i % fragments.length]!;
      socket.write(bytes.subarray(at, at + n));
      at += n;
      await new Promise((r) => setImmediate(r));
    }
  };
  await new Promise<void>((resolve) => p.server.listen(0, '127.0.0.1', resolve));
  p.address = `127.0.0.1:${(p.server.address() as { port: number }).port}`;
  return p;
}

/** A target of regions of at most `regionBytes` in one buffer; every third fill says "no room" for a moment. */
function target(size: number, regionBytes: number): BytesTarget & { bytes: () => Buffer; waits: number } {
  const memory = Buffer.alloc(size + regionBytes);
  let at = 0;
  let fills = 0;
  const t = {
    waits: 0,
    region: () => memory.subarray(at, at + regionBytes),
    filled(n: number): Promise<void> | undefined {
      at += n;
      if (++fills % 3 !== 0) return undefined;
      t.waits++;
      return new Promise<void>((r) => setTimeout(r, 2));
    },
    bytes: () => memory.subarray(0, at),
  };
  return t;
}

const fetcher = new HttpFetcher({ link: new PeerLink('', undefined), connectionsPerPeer: 1, idleTimeoutMs: 5000 });
const peers: Peer[] = [];
afterEach(() => {
  for (const p of peers.splice(0)) p.server.close();
});

describe('HttpFetcher', () => {
  const body = patternBytes(3 * 1024 * 1024 + 4321, 11);

  it('reads a body in place into a target, in order, holding reads while it has no room, on one kept connection', async () => {
    const p = await peer(body, [7, 65_536, 1_000_003, 12]);
    peers.push(p);
    for (let round = 0; round < 2; round++) {
      const t = target(body.length, 100_000);
      await fetcher.fetchPath(p.address, '/internal/v1/shards/ab/1', { start: 0, end: body.length }, t);
      expect(t.bytes().equals(body)).toBe(true);
      expect(t.waits).toBeGreaterThan(0);
    }
    expect(p.connections).toBe(1);
    expect(p.requests[0]).toContain('Range: bytes=0-');
  });

  it('reads a range that starts inside the body, and refuses an answer with other bytes than the range asked for', async () => {
    const range = { start: 1_234_567, end: 2_500_000 };
    const values = patternBytes(72, 3);
    const honest = await peer(body, [65_536]);
    const withValues = await peer(body, [65_536], undefined, 'honest', values);
    const ignored = await peer(body, [65_536], undefined, 'ignored');
    const shifted = await peer(body, [65_536], undefined, 'shifted');
    peers.push(honest, withValues, ignored, shifted);
    const t = target(range.end - range.start, 100_000);
    await fetcher.fetchPath(honest.address, '/internal/v1/shards/ab/1', range, t);
    expect(t.bytes().equals(body.subarray(range.start, range.end))).toBe(true);
    const v = target(values.length + range.end - range.start, 100_000);
    await fetcher.fetchPath(withValues.address, '/internal/v1/shards/ab/1', range, v);
    expect(v.bytes().equals(Buffer.concat([values, body.subarray(range.start, range.end)]))).toBe(true);
    // A 200 with the whole body, or a 206 of another range: their first bytes are not the range's.
    await expect(fetcher.fetchPath(ignored.address, '/internal/v1/shards/ab/1', range, target(body.length, 100_000))).rejects.toThrow(/answered 200/);
    const got: Buffer[] = [];
    await expect(fetcher.fetchPath(shifted.address, '/internal/v1/blobs/ab', range, (chunk) => void got.push(chunk))).rejects.toThrow(/other than 1234567-2499999/);
    expect(got).toHaveLength(0);
  });

  it('hands a body to a sink chunk by chunk, as before', async () => {
    const p = await peer(body, [300_000, 5]);
    peers.push(p);
    const got: Buffer[] = [];
    await fetcher.fetchPath(p.address, '/internal/v1/blobs/ab', undefined, (chunk) => {
      got.push(Buffer.from(chunk));
    });
    expect(Buffer.concat(got).equals(body)).toBe(true);
  });

  it('fails a fetch whose peer sends more than it announced', async () => {
    const p = await peer(body.subarray(0, 1000), [600], (b) => Buffer.concat([b, Buffer.from('extra')]));
    peers.push(p);
    await expect(fetcher.fetchPath(p.address, '/x', undefined, target(2000, 100_000))).rejects.toThrow(/more bytes than/);
  });

  it('fails a fetch whose target fails, and reads nothing more into it', async () => {
    const p = await peer(body, [65_536]);
    peers.push(p);
    let fills = 0;
    const failing: BytesTarget = {
      region: () => Buffer.alloc(65_536),
      filled: () => (++fills === 3 ? Promise.reject(new Error('column read closed')) : undefined),
    };
    await expect(fetcher.fetchPath(p.address, '/x', undefined, failing)).rejects.toThrow('column read closed');
    expect(fills).toBe(3);
  });
});
