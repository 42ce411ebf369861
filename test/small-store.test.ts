/**
 * The small store's fast path (src/http/small-store.ts): raw bodies of known length up to 1 MiB
 * on a node alone. It answers as the general path does, whether the body comes in one piece or
 * many, and a body that stalls, lies about its length or is cut leaves nothing stored and its
 * upload slot free.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, putRaw } from './helpers/blobs.js';
import { logLines } from './helpers/log.js';
import { sampleValue, scrape, startMetricsNode } from './helpers/metrics.js';
import type { NodeProcess } from './helpers/node-process.js';
import { waitFor } from './helpers/wait.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Sends a request head and then each of `parts` after `gapMs`, and resolves with everything the
 * server sent back by the time it closes or `waitMs` passed.
 */
function sendInParts(port: number, head: string, parts: Buffer[], gapMs: number, waitMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', async () => {
      socket.write(head + '\r\n\r\n');
      for (const p of parts) {
        await sleep(gapMs); // time is the subject: a client that sends its body in pieces, or stalls
        if (socket.destroyed) break;
        socket.write(p);
      }
    });
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (/\r\n\r\n\{.*\}$/s.test(text)) done();
    });
    socket.on('close', done);
    socket.on('error', done);
  });
}

const rawHead = (length: number): string => `POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}`;

async function listIds(url: string): Promise<string[]> {
  return ((await (await fetch(`${url}/v1/blobs?limit=10000`)).json()) as { ids: string[] }).ids;
}

describe('small raw stores (the fast path)', () => {
  let node: NodeProcess;
  let metricsUrl: string;
  beforeAll(async () => {
    // An access line for every request: a client that went away gets none other (no answer, no count).
    ({ node, metricsUrl } = await startMetricsNode({ args: ['--max-concurrent-uploads', '4', '--body-idle-timeout-ms', '600', '--access-log-every', '1'] }));
  });
  afterAll(async () => {
    expect(await node.stop()).toBe(0);
  });

  it('answers 201 with the id and size, then 200 for the same bytes, and serves them back', async () => {
    const data = patternBytes(4096, 1);
    const first = await putRaw(node.url, data);
    expect(first.status).toBe(201);
    expect(first.headers.get('content-type')).toBe('application/json');
    const body = await first.text();
    expect(body).toBe(`{"id":"${await expectedId(data)}","size":4096}`);
    const again = await putRaw(node.url, data);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(body);
    const got = await fetch(`${node.url}/v1/blobs/${await expectedId(data)}`);
    expect(Buffer.from(await got.arrayBuffer()).equals(data)).toBe(true);
  });

  it('answers sizes of every digit count in its body, the empty blob included', async () => {
    for (const size of [0, 1, 9, 10, 99, 100, 65_535, 1_000_000]) {
      const data = patternBytes(size, 100 + size);
      const res = await putRaw(node.url, data);
      expect(res.status).toBe(201);
      expect(await res.json()).toEqual({ id: await expectedId(data), size });
    }
  });

  it('stores a body that arrives in several pieces whole', async () => {
    const data = patternBytes(300_000, 2);
    const parts = [data.subarray(0, 1000), data.subarray(1000, 150_000), data.subarray(150_000)];
    const text = await sendInParts(node.port, rawHead(data.length), parts, 50);
    expect(text).toMatch(/^HTTP\/1.1 201/);
    expect(text).toContain(`{"id":"${await expectedId(data)}","size":300000}`);
    const got = await fetch(`${node.url}/v1/blobs/${await expectedId(data)}`);
    expect(Buffer.from(await got.arrayBuffer()).equals(data)).toBe(true);
  });

  it('many stores of the same bytes at once: one 201, the rest 200, one blob', async () => {
    const data = patternBytes(2048, 3);
    const id = await expectedId(data);
    const before = (await listIds(node.url)).length;
    // Four connections (the node's upload slots) open first, then each sends the same store in
    // the same moment, many rounds: the stores meet while the first is still waiting for its sync.
    const sockets = await Promise.all([0, 1, 2, 3].map(() => new Promise<Socket>((resolve) => {
      const socket = connect(node.port, '127.0.0.1', () => resolve(socket));
    })));
    const request = Buffer.concat([Buffer.from(rawHead(data.length) + '\r\n\r\n'), data]);
    const answerOf = (socket: Socket): Promise<string> => new Promise((resolve) => {
      let text = '';
      const onData = (d: Buffer): void => {
        text += d.toString('latin1');
        if (!/\r\n\r\n\{.*\}$/s.test(text)) return;
        socket.off('data', onData);
        resolve(text);
      };
      socket.on('data', onData);
    });
    const statuses: string[] = [];
    for (let round = 0; round < 8; round++) {
      const answers = sockets.map(answerOf);
      for (const socket of sockets) socket.write(request);
      for (const text of await Promise.all(answers)) {
        expect(text.endsWith(`{"id":"${id}","size":2048}`)).toBe(true);
        statuses.push(text.slice(9, 12));
      }
    }
    for (const socket of sockets) socket.destroy();
    expect(statuses.filter((s) => s === '201')).toHaveLength(1);
    expect(statuses.filter((s) => s === '200')).toHaveLength(31);
    expect((await listIds(node.url)).length).toBe(before + 1);
  });

  it('a body that stalls gets 408, is not stored, and gives its slot back', async () => {
    const data = patternBytes(100_000, 4);
    const before = await listIds(node.url);
    const text = await sendInParts(node.port, rawHead(data.length), [data.subarray(0, 50_000)], 10, 3000);
    expect(text).toMatch(/^HTTP\/1.1 408/);
    expect(text).toMatch(/\r\nConnection: close\r\n/i);
    expect(await listIds(node.url)).toEqual(before);
    // Every slot is free again: as many stores at once as there are slots all go through.
    const answers = await Promise.all([5, 6, 7, 8].map((seed) => putRaw(node.url, patternBytes(1000, seed))));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
  });

  it('a client that goes away mid-body stores nothing and gives its slot back', async () => {
    const before = await listIds(node.url);
    for (let i = 0; i < 6; i++) {
      await new Promise<void>((resolve) => {
        const socket = connect(node.port, '127.0.0.1', () => {
          socket.write(`${rawHead(10_000)}\r\nX-Request-Id: gone-${i}\r\n\r\n`);
          socket.write(patternBytes(3000, 50 + i), () => {
            socket.destroy();
            resolve();
          });
        });
      });
    }
    // The node has seen all six go (their access lines, by request id): nothing of them can be stored now.
    const seen = (): number => logLines(node.output()).filter((l) => l.access === 'http' && /^gone-\d$/.test(l.reqId ?? '')).length;
    await waitFor(() => seen() >= 6, { what: 'the access lines of the six stores whose clients went away', timeoutMs: 10_000 });
    expect(await listIds(node.url)).toEqual(before);
    const answers = await Promise.all([9, 10, 11, 12].map((seed) => putRaw(node.url, patternBytes(1000, seed))));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
  });

  it('counts its stores in the metrics like any other store', async () => {
    const count = async (): Promise<number> => sampleValue(await scrape(metricsUrl), 'blobstore_operations_total', 'blobstore_operations_total', { operation: 'put' }) ?? 0;
    const bytes = async (): Promise<number> => sampleValue(await scrape(metricsUrl), 'blobstore_bytes_written_total', 'blobstore_bytes_written_total') ?? 0;
    const [n0, b0] = [await count(), await bytes()];
    for (let i = 0; i < 3; i++) expect((await putRaw(node.url, patternBytes(777, 200 + i))).status).toBe(201);
    expect(await count()).toBe(n0 + 3);
    expect(await bytes()).toBe(b0 + 3 * 777);
  });
});
