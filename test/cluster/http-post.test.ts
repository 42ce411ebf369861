/**
 * The data plane's keep-alive POSTs and length-framed PUTs (src/cluster/transport/http-post.ts,
 * http-put.ts, kept-connections.ts) against a plain TCP server on 127.0.0.1: posts reuse a kept
 * connection, one the peer closed while idle is replaced and the post sent again, and a refusal
 * or a connection that breaks mid-answer fails the post; PUTs whose body has a Content-Length
 * share the kept connections, but not one idle too long or one whose PUT failed.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpPoster } from '../../src/cluster/transport/http-post.js';
import { bodyFraming, HttpPut, PeerPutError } from '../../src/cluster/transport/http-put.js';
import { KeptConnections } from '../../src/cluster/transport/kept-connections.js';
import { PeerLink } from '../../src/cluster/transport/peer-link.js';

type Behaviour = (socket: Socket, request: string) => void;

/** A server reading whole requests (a head with Content-Length, then the body) and answering each as `behave` says. */
async function server(behave: Behaviour): Promise<{ server: Server; address: string; connections: Socket[]; bodies: string[] }> {
  const connections: Socket[] = [];
  const bodies: string[] = [];
  const srv = createServer((socket) => {
    connections.push(socket);
    let buffered = '';
    socket.on('data', (bytes) => {
      buffered += bytes.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const body = buffered.slice(end + 4, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        bodies.push(body);
        behave(socket, body);
      }
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  return { server: srv, address: `127.0.0.1:${port}`, connections, bodies };
}

const answer = (socket: Socket, status: number, body: string): void =>
  void socket.write(`HTTP/1.1 ${status} X\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
const head = (address: string, bytes: number): string => `POST /internal/v1/replicas HTTP/1.1\r\nHost: ${address}\r\nContent-Length: ${bytes}\r\n\r\n`;

describe('keep-alive POSTs to a peer', () => {
  const closers: (() => void)[] = [];
  let kept = new KeptConnections(new PeerLink('', undefined));
  afterEach(() => {
    for (const close of closers.splice(0)) close();
    kept = new KeptConnections(new PeerLink('', undefined));
  });

  it('reuse one connection, and replace one the peer closed while it was idle', async () => {
    const s = await server((socket, body) => answer(socket, 200, `{"got":"${body}"}`));
    const poster = new HttpPoster(kept);
    closers.push(() => kept.close(), () => s.server.close());
    const peer = { nodeId: 'peer', address: s.address };
    const parts = [Buffer.from('ab'), Buffer.from('cd')];
    expect(await poster.post(peer, head(s.address, 4), parts, 5000)).toBe('{"got":"abcd"}');
    expect(await poster.post(peer, head(s.address, 4), parts, 5000)).toBe('{"got":"abcd"}');
    expect(s.connections).toHaveLength(1);
    // The peer closes its idle connection: the next post goes on a new one (at once, or again
    // once the kept one breaks, whichever this side sees first).
    s.connections[0]!.destroy();
    expect(await poster.post(peer, head(s.address, 2), [Buffer.from('ef')], 5000)).toBe('{"got":"ef"}');
    expect(s.connections).toHaveLength(2);
  });

  it('fail with PeerPutError on a refusal, and on a fresh connection that breaks before its answer', async () => {
    const refusing = await server((socket) => answer(socket, 507, '{"code":"resource_exhausted"}'));
    const breaking = await server((socket) => socket.destroy());
    const poster = new HttpPoster(kept);
    closers.push(() => kept.close(), () => refusing.server.close(), () => breaking.server.close());
    await expect(poster.post({ nodeId: 'full', address: refusing.address }, head(refusing.address, 1), [Buffer.from('x')], 5000))
      .rejects.toThrow(/full answered 507/);
    const broke = poster.post({ nodeId: 'gone', address: breaking.address }, head(breaking.address, 1), [Buffer.from('x')], 5000);
    await expect(broke).rejects.toBeInstanceOf(PeerPutError);
    expect(breaking.bodies).toHaveLength(1);
  });

  it('do not keep a connection the peer answered while the body was still queued: its bytes are the caller\'s buffers', async () => {
    // The first connection refuses at the head and reads no more; later ones take whole requests.
    const connections: Socket[] = [];
    const srv = createServer((socket) => {
      connections.push(socket);
      let buffered = '';
      const first = connections.length === 1;
      socket.on('data', (bytes) => {
        buffered += bytes.toString('latin1');
        if (first) {
          socket.pause();
          return answer(socket, 413, '{"code":"payload_too_large"}');
        }
        const end = buffered.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, Math.max(0, end)))?.[1] ?? -1);
        if (end >= 0 && buffered.length >= end + 4 + length) answer(socket, 200, `{"got":${length}}`);
      });
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${(srv.address() as { port: number }).port}`;
    const poster = new HttpPoster(kept);
    closers.push(() => kept.close(), () => srv.close(), () => connections.forEach((c) => c.destroy()));
    const big = Buffer.alloc(64 * 1024 * 1024, 7);
    await expect(poster.post({ nodeId: 'peer', address }, head(address, big.length), [big], 5000)).rejects.toThrow(/peer answered 413/);
    expect(await poster.post({ nodeId: 'peer', address }, head(address, 2), [Buffer.from('ok')], 5000)).toBe('{"got":2}');
    expect(connections).toHaveLength(2);
  });

  it('time out a peer that takes the body and never answers', async () => {
    const silent = await server(() => undefined);
    const poster = new HttpPoster(kept);
    closers.push(() => kept.close(), () => silent.server.close());
    await expect(poster.post({ nodeId: 'mute', address: silent.address }, head(silent.address, 1), [Buffer.from('x')], 300)).rejects.toThrow(/mute: no answer within 300 ms/);
  });
});

describe('PUTs with a Content-Length to a peer', () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });
  const link = new PeerLink('', undefined);
  const putHead = (address: string, framing: string): string => `PUT /internal/v1/replicas/ab HTTP/1.1\r\nHost: ${address}\r\n${framing}\r\n`;
  /** A PUT of `parts` as its body; its answer, or its failure. */
  async function put(peer: { nodeId: string; address: string }, kept: KeptConnections, parts: Buffer[], length = parts.reduce((n, p) => n + p.length, 0)): Promise<string> {
    const framing = bodyFraming(length);
    const leg = new HttpPut(peer, putHead(peer.address, framing.header), { timeoutMs: 5000, kept, length: framing.length });
    for (const p of parts) leg.write(p, () => undefined);
    leg.end();
    await leg.done;
    if (leg.failure) throw leg.failure;
    return leg.answer;
  }

  it('go on one kept connection one after another, shared with the POSTs, each body whole', async () => {
    const s = await server((socket, body) => answer(socket, 200, `{"got":"${body}"}`));
    const kept = new KeptConnections(link);
    const poster = new HttpPoster(kept);
    closers.push(() => kept.close(), () => s.server.close());
    const peer = { nodeId: 'peer', address: s.address };
    expect(await put(peer, kept, [Buffer.from('col'), Buffer.from('umn')])).toBe('{"got":"column"}');
    expect(await put(peer, kept, [Buffer.from('second')])).toBe('{"got":"second"}');
    expect(await poster.post(peer, head(s.address, 2), [Buffer.from('ab')], 5000)).toBe('{"got":"ab"}');
    expect(s.connections).toHaveLength(1);
    expect(s.bodies).toEqual(['column', 'second', 'ab']);
  });

  it('do not reuse a connection idle for longer than the reuse window, nor one whose PUT was refused', async () => {
    let refuse = false;
    const s = await server((socket, body) => (refuse ? answer(socket, 507, '{"code":"resource_exhausted"}') : answer(socket, 200, `{"got":"${body}"}`)));
    const kept = new KeptConnections(link, 32, 50);
    closers.push(() => kept.close(), () => s.server.close());
    const peer = { nodeId: 'peer', address: s.address };
    await put(peer, kept, [Buffer.from('a')]);
    await new Promise((resolve) => setTimeout(resolve, 120));
    await put(peer, kept, [Buffer.from('b')]);
    expect(s.connections).toHaveLength(2);
    refuse = true;
    await expect(put(peer, kept, [Buffer.from('c')])).rejects.toThrow(/peer answered 507/);
    refuse = false;
    await put(peer, kept, [Buffer.from('d')]);
    expect(s.connections).toHaveLength(3);
  });

  it('fail a body shorter than its Content-Length rather than leave the peer waiting for the rest, and one longer before its tail goes', async () => {
    const s = await server((socket, body) => answer(socket, 200, `{"got":"${body}"}`));
    const kept = new KeptConnections(link);
    closers.push(() => kept.close(), () => s.server.close());
    await expect(put({ nodeId: 'peer', address: s.address }, kept, [Buffer.from('abc')], 4)).rejects.toThrow(/a body of 3 bytes, its head said 4/);
    // Nor one longer: its tail would reach the peer as the start of another request.
    await expect(put({ nodeId: 'peer', address: s.address }, kept, [Buffer.from('abc'), Buffer.from('de')], 4)).rejects.toThrow(/a body past the 4 bytes its head said/);
    expect(s.bodies).toEqual([]);
  });

  it('go chunked, on a connection of their own, when the length is not known or has ten digits', () => {
    expect(bodyFraming(undefined)).toEqual({ header: 'Transfer-Encoding: chunked\r\n', length: undefined });
    expect(bodyFraming(1_000_000_000).length).toBeUndefined();
    expect(bodyFraming(999_999_999)).toEqual({ header: 'Content-Length: 999999999\r\n', length: 999_999_999 });
  });
});
