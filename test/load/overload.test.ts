/**
 * 10x overload: with maxConcurrentUploads 16, 160 uploads at once. The 16 admitted ones proceed,
 * the rest are answered 503 with Retry-After at once (not queued), memory stays bounded, reads
 * and /healthz keep working, and the node serves normally once the load is gone. The limit holds
 * for every way of storing: raw and JSON bodies, NDJSON streams and gRPC.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, putRaw } from '../helpers/blobs.js';
import { type GrpcNode, startGrpcNode } from '../grpc/helpers.js';
import { errorShapeProblem, report, tmpFiles, stopAndClean } from '../fuzz/harness.js';
import { type Held, open, sleep, storeHead } from './connections.js';
import { waitFor } from '../helpers/wait.js';

const MiB = 1024 * 1024;
const SLOTS = 16;
const LOAD = 10 * SLOTS;
/** RSS growth allowed while 160 uploads push at a node with 16 slots. */
const RSS_GROWTH_MAX = 128 * MiB;

describe(`10x overload (${LOAD} uploads, maxConcurrentUploads ${SLOTS})`, () => {
  let n: GrpcNode;
  let smallId: string;

  beforeAll(async () => {
    n = await startGrpcNode({ args: ['--max-concurrent-uploads', String(SLOTS), '--body-idle-timeout-ms', '8000', '--small-blob-max-bytes', '64KiB'] });
    const res = await putRaw(n.node.url, Buffer.from('readable under load'));
    smallId = ((await res.json()) as { id: string }).id;
  });
  afterAll(async () => {
    expect(await stopAndClean(n)).toBe(0);
  });

  const url = (): string => n.node.url;

  async function holdUploads(count: number, path = '/v1/blobs', type = 'application/octet-stream'): Promise<Held[]> {
    // 2 MiB declared, 1.5 MiB sent: admitted ones go to a temp file and wait for the rest.
    const part = patternBytes(1.5 * MiB, 5);
    return Promise.all(Array.from({ length: count }, () => open(n.node.port, Buffer.concat([Buffer.from(storeHead(2 * MiB, path, type)), part]))));
  }

  /** Uploads the node is storing: each admitted one has its temp file. */
  const admitted = (): number => tmpFiles(n.node).filter((f) => f.endsWith('.part')).length;

  /**
   * Every slot is taken once each held upload has its temp file: on a loaded machine the node can
   * take longer than a fixed pause to read them all. Then a pause in which none may be answered:
   * nothing tells when the node has taken in every byte the held uploads sent (a temp file grows a
   * whole chunk at a time, the last half chunk of each waits in memory), so that is a span of time.
   */
  async function heldAdmitted(): Promise<void> {
    await waitFor(() => admitted() >= SLOTS, { what: 'the held uploads admitted', timeoutMs: 10_000 });
    await sleep(300);
  }

  async function expectHealthyAfter(conns: Held[]): Promise<void> {
    for (const c of conns) c.close();
    await waitFor(() => tmpFiles(n.node).length === 0, { what: 'temp files of the cut uploads removed', timeoutMs: 5000 });
    const data = patternBytes(100_000, 77);
    const res = await putRaw(url(), data);
    expect(res.status).toBeLessThan(300);
    expect(((await res.json()) as { id: string }).id).toBe(await expectedId(data));
    expect((await fetch(`${url()}/healthz`)).status).toBe(200);
  }

  it('raw uploads: 16 admitted, 144 answered 503 + Retry-After at once; reads and /healthz still served; RSS bounded', async () => {
    const rssBefore = n.node.rssBytes();
    const conns = await holdUploads(LOAD);
    // Every upload is decided once those beyond the limit are answered and the admitted ones have
    // their temp files (the 8 s body idle timeout cuts the held ones only later).
    const decided = (): boolean => conns.filter((c) => c.answer() || c.closed()).length >= LOAD - SLOTS && admitted() >= SLOTS;
    await waitFor(decided, { what: 'the uploads beyond the limit answered, the others admitted', timeoutMs: 7000 });
    const refused = conns.filter((c) => c.answer()?.status === 503);
    const waiting = conns.filter((c) => !c.answer() && !c.closed());
    const other = conns.filter((c) => c.answer() && c.answer()!.status !== 503);
    expect(other.map((c) => c.answer()!.status)).toEqual([]);
    expect(waiting.length).toBe(SLOTS);
    expect(refused.length).toBe(LOAD - SLOTS);
    for (const c of refused) {
      expect(c.answer()!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(errorShapeProblem('b', c.answer()!)).toBeUndefined();
    }
    // Reads and health are not uploads: they are served while every slot is taken.
    expect((await fetch(`${url()}/v1/blobs/${smallId}`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
    expect((await fetch(`${url()}/healthz`, { signal: AbortSignal.timeout(10_000) })).status).toBe(200);
    const extra = await putRaw(url(), Buffer.from('one more'));
    expect(extra.status).toBe(503);
    expect(extra.headers.get('retry-after')).toMatch(/^\d+$/);
    const growth = n.node.peakRssBytes() - rssBefore;
    console.log(`raw overload: RSS ${(rssBefore / MiB).toFixed(0)} MiB before, peak growth ${(growth / MiB).toFixed(1)} MiB`);
    report({ suite: 'overload-raw-held', uploads: LOAD, slots: SLOTS, refused: refused.length, rssGrowthMiB: growth / MiB });
    expect(growth).toBeLessThan(RSS_GROWTH_MAX);
    await expectHealthyAfter(conns);
  });

  it('160 concurrent 256 KiB stores with retries on 503: every answer is 2xx or 503 + Retry-After, and all get stored', async () => {
    const rssBefore = n.node.rssBytes();
    const blobs = Array.from({ length: LOAD }, (_, i) => patternBytes(256 * 1024, 1000 + i));
    let refusals = 0;
    const ids = await Promise.all(
      blobs.map(async (data) => {
        for (let attempt = 0; ; attempt++) {
          const res = await putRaw(url(), data);
          const text = await res.text();
          if (res.status === 503) {
            refusals++;
            expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
            await sleep(20 + Math.random() * 50 * Math.min(attempt + 1, 8)); // time is the subject: a client's back-off with jitter
            continue;
          }
          expect(res.status, text).toBeLessThan(300);
          return (JSON.parse(text) as { id: string }).id;
        }
      }),
    );
    for (const [i, id] of ids.entries()) expect(id).toBe(await expectedId(blobs[i]!));
    const growth = n.node.peakRssBytes() - rssBefore;
    console.log(`fast overload: ${refusals} refusals (503) before all ${LOAD} stored; RSS peak growth ${(growth / MiB).toFixed(1)} MiB`);
    report({ suite: 'overload-raw-retry', uploads: LOAD, slots: SLOTS, refusals, rssGrowthMiB: growth / MiB });
    expect(growth).toBeLessThan(RSS_GROWTH_MAX);
  });

  it('NDJSON put streams share the limit: with 16 held, the next stream is answered 503 + Retry-After', async () => {
    const conns = await holdUploads(SLOTS);
    await heldAdmitted();
    expect(conns.filter((c) => c.answer()).map((c) => c.answer()!.status)).toEqual([]);
    const res = await fetch(`${url()}/v1/blobs/stream`, { method: 'POST', body: '{"data":"aGk=","final":true}\n', headers: { 'Content-Type': 'application/x-ndjson' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    await expectHealthyAfter(conns);
  });

  it('gRPC shares the limit: with 16 uploads held, Put and PutStream answer UNAVAILABLE', async () => {
    const conns = await holdUploads(SLOTS);
    await heldAdmitted();
    const put = await new Promise<grpc.ServiceError | null>((resolve) =>
      n.blobs.Put({ data: Buffer.from('grpc over the limit'), policy: 1 }, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null) => resolve(err)),
    );
    const stream = await new Promise<grpc.ServiceError | null>((resolve) => {
      const call = n.blobs.PutStream({ deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null) => resolve(err));
      call.write({ data: Buffer.from('grpc stream over the limit'), final: true });
      call.end();
    });
    try {
      expect(put?.code, 'unary Put').toBe(grpc.status.UNAVAILABLE);
      expect(stream?.code, 'PutStream').toBe(grpc.status.UNAVAILABLE);
    } finally {
      await expectHealthyAfter(conns);
    }
  });

  it('160 stalled gRPC put streams: the extra ones answer UNAVAILABLE and RSS stays bounded', async () => {
    const rssBefore = n.node.rssBytes();
    const chunk = patternBytes(MiB, 9);
    const results: (grpc.ServiceError | null)[] = [];
    const calls = Array.from({ length: LOAD }, () => {
      const call = n.blobs.PutStream({ deadline: Date.now() + 20_000 }, (err: grpc.ServiceError | null) => results.push(err));
      call.write({ data: chunk });
      return call;
    });
    // The extra streams are refused as they arrive; how soon depends on the machine, not the node.
    const refused = (): number => results.filter((e) => e?.code === grpc.status.UNAVAILABLE).length;
    // Every stream is decided once those beyond the limit are refused and the admitted ones have
    // their temp files: no admitted stream may be refused after that (counted exactly below).
    await waitFor(() => refused() >= LOAD - SLOTS && admitted() >= SLOTS, { what: 'the streams beyond the limit refused, the others admitted', timeoutMs: 15_000 });
    const growth = n.node.peakRssBytes() - rssBefore;
    const unavailable = refused();
    console.log(`gRPC overload: ${unavailable} UNAVAILABLE of ${LOAD}; RSS peak growth ${(growth / MiB).toFixed(1)} MiB`);
    report({ suite: 'overload-grpc-stalled', streams: LOAD, slots: SLOTS, unavailable, rssGrowthMiB: growth / MiB });
    for (const c of calls) c.cancel();
    await waitFor(() => tmpFiles(n.node).length === 0, { what: 'temp files of the cancelled streams removed', timeoutMs: 5000 });
    expect(unavailable).toBe(LOAD - SLOTS);
    expect(growth).toBeLessThan(RSS_GROWTH_MAX);
  });
});
