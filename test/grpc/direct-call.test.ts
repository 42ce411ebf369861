/**
 * Flow control of a DirectCall (src/grpc/direct-call.ts) over real HTTP/2 on 127.0.0.1: while the
 * handler holds the call paused (what PutStream does while the disk is behind), the node takes no
 * more than the HTTP/2 window and the client's writes stop; on resume everything arrives. The
 * server has the node's settings (8 MiB window, 1 MiB frames).
 */
import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectCall, STATUS_OK } from '../../src/grpc/direct-call.js';
import { MAX_FRAME_BYTES } from '../../src/grpc/http2-frames.js';
import { waitFor } from '../helpers/wait.js';

const MiB = 1024 * 1024;
const WINDOW = 8 * MiB;
const MESSAGES = 48;

let server: http2.Http2Server;
let port: number;
let current: { call: DirectCall; received: number; messages: number } | undefined;

beforeAll(async () => {
  server = http2.createServer({ settings: { initialWindowSize: WINDOW, maxFrameSize: MAX_FRAME_BYTES } });
  server.on('session', (session) => session.setLocalWindowSize(WINDOW));
  server.on('stream', (stream, headers) => {
    const call = new DirectCall(stream, headers, 4 * MiB);
    const state = { call, received: 0, messages: 0 };
    current = state;
    call.read((bytes) => {
      state.received += bytes.length;
      if (++state.messages === 1) call.pause(); // the "disk" is behind from the first message on
    }, () => call.sendStatus(STATUS_OK));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  server?.close();
});

/**
 * Waits until `value()` has not changed for 10 polls in a row (the flow has come to rest). A span
 * of time, not an event: nothing says when the HTTP/2 window is spent (the client's writes wait
 * for a 'drain' that does not come), so half a second without a change stands for it.
 */
async function settled(value: () => number): Promise<number> {
  let last = -1;
  let same = 0;
  const unchanged = (): boolean => {
    const v = value();
    same = v === last ? same + 1 : 0;
    last = v;
    return same >= 10;
  };
  await waitFor(unchanged, { what: () => `the flow to come to rest (at ${last})`, timeoutMs: 30_000, pollMs: 50 });
  return last;
}

describe('DirectCall flow control', () => {
  it('a paused call holds the client to the HTTP/2 window; resume lets the rest through', async () => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const req = session.request({ ':method': 'POST', ':path': '/t/Put', 'content-type': 'application/grpc', te: 'trailers' });
      const message = Buffer.alloc(5 + MiB, 7);
      message[0] = 0;
      message.writeUInt32BE(MiB, 1);
      let handed = 0;
      const status = new Promise<string>((resolve, reject) => {
        req.on('trailers', (t) => resolve(String(t['grpc-status'])));
        req.on('response', (h) => h['grpc-status'] !== undefined && resolve(String(h['grpc-status'])));
        req.on('error', reject);
      });
      req.resume();
      void (async () => {
        for (let i = 0; i < MESSAGES; i++) {
          const more = req.write(message);
          handed++;
          if (!more) await new Promise((r) => req.once('drain', r));
        }
        req.end();
      })();

      const handedWhilePaused = await settled(() => handed);
      expect(current!.messages).toBe(1);
      // The window (8 MiB) plus what the client's and the server's stream buffers hold: a few
      // messages, never the 48 the client wants to send.
      expect(handedWhilePaused).toBeLessThan(WINDOW / MiB + 6);
      expect(handedWhilePaused).toBeLessThan(MESSAGES);

      current!.call.resume();
      expect(await status).toBe('0');
      expect(current!.messages).toBe(MESSAGES);
      expect(current!.received).toBe(MESSAGES * MiB);
    } finally {
      session.close();
    }
  });
});
