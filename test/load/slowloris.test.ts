/**
 * Slowloris: many connections trickling request heads or bodies. uWebSockets.js gives a request
 * head ~10 s in all (a trickle does not extend it) and closes a body slower than 16 KiB per 10 s;
 * the node answers 408 to a body that goes quiet for bodyIdleTimeoutMs. Meanwhile ordinary
 * requests are served promptly, RSS stays bounded, and nothing is left behind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { errorShapeProblem, report, tmpFiles, stopAndClean } from '../fuzz/harness.js';
import { type Held, open, sleep, storeHead } from './connections.js';
import { waitFor } from '../helpers/wait.js';

const MiB = 1024 * 1024;
const RSS_GROWTH_MAX = 64 * MiB;
/** uWS's fixed idle timeout (10 s) plus its 4 s timer granularity, with a margin. */
const UWS_CLOSE_MS = 16_000;

describe('slowloris', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode({ args: ['--body-idle-timeout-ms', '1000', '--max-concurrent-uploads', '64', '--small-blob-max-bytes', '64KiB'] });
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  /**
   * Ordinary puts and gets while the slow connections hang on; each must be answered while most
   * of them are still open (served alongside them, not after uWS closed them).
   */
  async function probe(untilMs: number, conns: Held[]): Promise<number> {
    let served = 0;
    for (let i = 0; Date.now() < untilMs; i++) {
      const data = Buffer.from(`served during slowloris ${i} ${Date.now()}`);
      const res = await putRaw(node.url, data, {});
      expect(res.status).toBe(201);
      const id = ((await res.json()) as { id: string }).id;
      expect((await fetch(`${node.url}/v1/blobs/${id}`)).status).toBe(200);
      const open = conns.filter((c) => !c.closed()).length;
      expect(open, 'slow connections still open when an ordinary put + get was answered').toBeGreaterThan(conns.length * 0.9);
      served++;
      await sleep(200); // time is the subject: the probes spread over the span the slow connections hang on
    }
    return served;
  }

  it('300 connections trickling their heads a byte a second are all closed within ~10 s; ordinary requests go on', async () => {
    const rssBefore = node.rssBytes();
    const head = 'POST /v1/blobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nX-Slow: ' + 'z'.repeat(200);
    const conns: Held[] = await Promise.all(Array.from({ length: 300 }, () => open(node.port, head.slice(0, 10))));
    let sent = 10;
    let served = 0;
    const trickle = setInterval(() => {
      for (const c of conns) if (!c.closed()) c.socket.write(head[sent % head.length]!);
      sent++;
    }, 1000);
    try {
      served = await probe(Date.now() + 6000, conns);
      expect(served).toBeGreaterThan(5);
      await waitFor(() => conns.every((c) => c.closed()), { what: 'every trickling connection closed', timeoutMs: UWS_CLOSE_MS });
    } finally {
      clearInterval(trickle);
      for (const c of conns) c.close();
    }
    const lifetimes = conns.map((c) => c.closedAtMs! - c.openedAtMs).sort((a, b) => a - b);
    const growth = node.peakRssBytes() - rssBefore;
    console.log(`head trickle: closed after ${lifetimes[0]}-${lifetimes.at(-1)} ms; RSS growth ${(growth / MiB).toFixed(1)} MiB`);
    report({ suite: 'slowloris-heads', connections: conns.length, closedAfterMs: [lifetimes[0], lifetimes.at(-1)], servedMeanwhile: served, rssGrowthMiB: growth / MiB });
    expect(conns.filter((c) => c.answer()).map((c) => c.answer()!.status)).toEqual([]);
    expect(node.peakRssBytes() - rssBefore).toBeLessThan(RSS_GROWTH_MAX);
  });

  it('60 bodies that stop short of their Content-Length get 408 in the error shape, and their temp data is removed', async () => {
    const part = patternBytes(300 * 1024, 3); // past smallBlobMaxBytes: a temp file exists
    const conns = await Promise.all(Array.from({ length: 60 }, () => open(node.port, Buffer.concat([Buffer.from(storeHead(2 * MiB)), part]))));
    await waitFor(() => conns.every((c) => c.answer() !== undefined || c.closed()), { what: 'every stopped body answered or closed', timeoutMs: 15_000 });
    const statuses = conns.map((c) => c.answer()?.status ?? 'none');
    expect(statuses.filter((s) => s !== 408)).toEqual([]);
    for (const c of conns) expect(errorShapeProblem('b', c.answer()!)).toBeUndefined();
    for (const c of conns) c.close();
    await waitFor(() => tmpFiles(node).length === 0, { what: 'temp files removed', timeoutMs: 5000 });
    expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
  });

  it('40 bodies trickled a byte every 300 ms (under the idle timeout) are closed by uWS within ~10 s; slots and temp files come back', async () => {
    const rssBefore = node.rssBytes();
    const part = patternBytes(100 * 1024, 4);
    const conns = await Promise.all(Array.from({ length: 40 }, () => open(node.port, Buffer.concat([Buffer.from(storeHead(MiB)), part]))));
    const trickle = setInterval(() => {
      for (const c of conns) if (!c.closed()) c.socket.write('x');
    }, 300);
    try {
      const served = await probe(Date.now() + 4000, conns);
      expect(served).toBeGreaterThan(3);
      await waitFor(() => conns.every((c) => c.closed()), { what: 'every trickled body closed', timeoutMs: UWS_CLOSE_MS });
    } finally {
      clearInterval(trickle);
      for (const c of conns) c.close();
    }
    await waitFor(() => tmpFiles(node).length === 0, { what: 'temp files removed', timeoutMs: 5000 });
    // Every slot is free again: 64 uploads at once are all admitted.
    const results = await Promise.all(Array.from({ length: 64 }, (_, i) => putRaw(node.url, patternBytes(1000, 500 + i))));
    expect(results.map((r) => r.status).filter((s) => s !== 201)).toEqual([]);
    const growth = node.peakRssBytes() - rssBefore;
    console.log(`body trickle: RSS growth ${(growth / MiB).toFixed(1)} MiB`);
    report({ suite: 'slowloris-bodies', connections: conns.length, rssGrowthMiB: growth / MiB });
    expect(node.peakRssBytes() - rssBefore).toBeLessThan(RSS_GROWTH_MAX);
  });
});
