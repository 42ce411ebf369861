/**
 * A full disk never costs an acknowledged blob. On a tmpfs of its own (root only; skipped with the
 * reason otherwise), concurrent stores of 1 MiB, 64 KiB and 1 KiB fill the disk: every store
 * answered 2xx reads back byte-exact, every refused one answers 507 in the variant's error shape
 * and leaves nothing visible; deletes work on the full disk, compaction gives the space back and
 * stores succeed again without a restart; the node starts on its full data dir, even one filled
 * to the last byte by someone else.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { patternBytes, putJson, putRaw } from './helpers/blobs.js';
import { type MetricsNode, sampleValue, scrape, startMetricsNode } from './helpers/metrics.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';
import { mountTmpfs, type Tmpfs } from './helpers/tmpfs.js';
import { grpcPortOf, healthClient, healthStatus } from './grpc/helpers.js';
import { waitFor } from './helpers/wait.js';

const MiB = 1024 * 1024;
const SIZES = [MiB, 64 * 1024 - 100, 1024, MiB + 4096, 64 * 1024, 1000];

interface Stored {
  seed: number;
  size: number;
}

const bytesOf = (b: Stored): Buffer => patternBytes(b.size, b.seed);

async function listAll(url: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  for (;;) {
    const page = (await (await fetch(`${url}/v1/blobs?limit=10000${cursor ? `&cursor=${cursor}` : ''}`)).json()) as {
      ids: string[];
      next_cursor?: string;
      has_more: boolean;
    };
    ids.push(...page.ids);
    if (!page.has_more) return ids;
    cursor = page.next_cursor!;
  }
}

/**
 * Stores from six concurrent writers (one size each) until each has been refused three times in
 * a row; returns what was acknowledged and every refusal's status and body.
 */
async function fillUp(url: string, acked: Map<string, Stored>, firstSeed: number): Promise<{ status: number; body: string }[]> {
  const refusals: { status: number; body: string }[] = [];
  let seed = firstSeed;
  await Promise.all(
    SIZES.map(async (size) => {
      for (let refusedInRow = 0, n = 0; refusedInRow < 3 && n < 2000; n++) {
        const blob = { seed: seed++, size };
        const res = await putRaw(url, bytesOf(blob), { 'X-Blobstore-Policy': '1' });
        const body = await res.text();
        if (res.status === 201 || res.status === 200) {
          acked.set((JSON.parse(body) as { id: string }).id, blob);
          refusedInRow = 0;
        } else {
          refusals.push({ status: res.status, body });
          refusedInRow++;
        }
      }
    }),
  );
  return refusals;
}

async function expectAllReadBack(url: string, acked: Map<string, Stored>, why: string): Promise<void> {
  for (const [id, blob] of acked) {
    const res = await fetch(`${url}/v1/blobs/${id}`);
    const got = Buffer.from(await res.arrayBuffer());
    expect(res.status, `${why}: GET ${id} (${blob.size} bytes)`).toBe(200);
    expect(got.equals(bytesOf(blob)), `${why}: bytes of ${id}`).toBe(true);
  }
}

const mounted = mountTmpfs(64 * MiB);
const skipReason = typeof mounted === 'string' ? mounted : '';

describe.skipIf(skipReason !== '')(`a full disk (a 64 MiB tmpfs)${skipReason ? ` - skipped: ${skipReason}` : ''}`, () => {
  const fs = mounted as Tmpfs;
  const dataDir = fs.path && join(fs.path, 'data');
  /** The size of the node's ballast file (`<data-dir>/RESERVE`, src/engine/disk-space.ts); 0 without one. */
  const ballastBytes = (): number => {
    try {
      return statSync(join(dataDir, 'RESERVE')).size;
    } catch {
      return 0;
    }
  };
  const acked = new Map<string, Stored>();
  let m: MetricsNode | undefined;
  let node: NodeProcess | undefined;

  afterAll(async () => {
    await m?.node.stop();
    await node?.stop();
    fs.unmount?.();
  });

  it('stores until the disk is full: every 2xx reads back byte-exact, every refusal is 507 in the error shape', async () => {
    // Default settings, as a new user runs it: 256 MiB segments on a 64 MiB disk.
    m = await startMetricsNode({ dataDir, metricsAddr: 'same', args: ['--grpc-addr', '127.0.0.1:0'] });
    const url = m.node.url;
    const refusals = await fillUp(url, acked, 1);
    expect(acked.size).toBeGreaterThan(20);
    expect(refusals.length).toBeGreaterThan(0);
    for (const r of refusals) {
      expect(r.status).toBe(507);
      expect(JSON.parse(r.body)).toMatchObject({ code: 507, error: 'Insufficient Storage', message: expect.stringMatching(/disk space/) });
    }
    await expectAllReadBack(url, acked, 'after filling');
  });

  it('leaves nothing of a refused store visible: the list holds exactly the acknowledged ids, no temp file stays', async () => {
    const url = m!.node.url;
    // A JSON store and a large raw one with a Content-Length are refused too (the latter before its body is read).
    const json = await putJson(url, { data: patternBytes(200 * 1024, 999_001).toString('base64'), policy: 1 });
    expect(json.status).toBe(507);
    const large = await putRaw(url, patternBytes(8 * MiB, 999_002), { 'X-Blobstore-Policy': '1' });
    expect(large.status).toBe(507);
    expect(new Set(await listAll(url))).toEqual(new Set(acked.keys()));
    expect(readdirSync(join(dataDir, 'tmp')).filter((n) => n.endsWith('.part'))).toEqual([]);
  });

  it('reports the full disk: /health UNHEALTHY; /healthz 200 and gRPC health SERVING while reads work (a probe must not restart it); errors_total{type="storage"} moved', async () => {
    const url = m!.node.url;
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(503);
    expect(await health.text()).toBe('UNHEALTHY: backend error');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const probe = healthClient(`127.0.0.1:${grpcPortOf(m!.node.output())!}`);
    try {
      expect(await healthStatus(probe, '')).toBe('SERVING');
      expect(await healthStatus(probe, 'blobstore.v1.BlobService')).toBe('SERVING');
    } finally {
      probe.close();
    }
    const families = await scrape(m!.metricsUrl);
    expect(sampleValue(families, 'blobstore_errors_total', 'blobstore_errors_total', { type: 'storage' })).toBeGreaterThan(0);
    expect(sampleValue(families, 'blobstore_backend_healthy', 'blobstore_backend_healthy')).toBe(0);
  });

  it('deletes on the full disk; compaction gives the space back and stores succeed again without a restart', async () => {
    const url = m!.node.url;
    const victims = [...acked.keys()].filter((_, i) => i % 4 !== 0);
    for (const id of victims) {
      const res = await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
      expect(res.status, `DELETE ${id}`).toBe(200);
      expect(await res.json()).toEqual({ deleted: true });
      acked.delete(id);
    }
    for (const id of victims.slice(0, 20)) expect((await fetch(`${url}/v1/blobs/${id}`)).status).toBe(404);
    // Compaction runs soon after deletes on a full disk; a store waits for nothing but that.
    let stored: Response | undefined;
    const blob = { seed: 500_000, size: MiB };
    const storedOnce = async (): Promise<boolean> => (stored = await putRaw(url, bytesOf(blob), { 'X-Blobstore-Policy': '1' })).status === 201;
    await waitFor(storedOnce, { what: () => `a store after the deletes (last: ${stored?.status})`, timeoutMs: 40_000, pollMs: 100 });
    expect(stored!.status).toBe(201);
    acked.set(((await stored!.json()) as { id: string }).id, blob);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    await expectAllReadBack(url, acked, 'after deletes and compaction');
  });

  it('starts on its own full data dir after a SIGKILL and serves every acknowledged blob', async () => {
    // The compaction after the deletes has given the reserve back: the ballast is made again
    // before the disk fills (stores never take it; compaction, racing the stores, could).
    await waitFor(() => ballastBytes() > 0, { what: 'the ballast made again after compaction', timeoutMs: 30_000 });
    const refusals = await fillUp(m!.node.url, acked, 1_000_000);
    expect(refusals.length).toBeGreaterThan(0);
    await m!.node.kill();
    m = undefined;
    node = await startNode({ dataDir });
    await expectAllReadBack(node.url, acked, 'after SIGKILL on a full disk');
    expect(new Set(await listAll(node.url))).toEqual(new Set(acked.keys()));
  });

  it('starts on a data dir whose disk someone else filled to the last byte; reads work, stores answer 507, deletes work', async () => {
    // The ballast is what lets the deletes in: it is there when the disk is taken.
    expect(ballastBytes(), 'the ballast before the disk is filled').toBeGreaterThan(0);
    await node!.kill();
    node = undefined;
    fs.fill(0);
    expect(fs.freeBytes()).toBeLessThan(64 * 1024);
    node = await startNode({ dataDir });
    await expectAllReadBack(node.url, acked, 'on a disk filled to the last byte');
    const refused = await putRaw(node.url, patternBytes(4096, 777), { 'X-Blobstore-Policy': '1' });
    expect(refused.status).toBe(507);
    const [id] = acked.keys();
    const del = await fetch(`${node.url}/v1/blobs/${id}`, { method: 'DELETE' });
    expect(del.status, `${await del.text()} ${node.output()}`).toBe(200);
    acked.delete(id!);
    expect((await fetch(`${node.url}/v1/blobs/${id}`)).status).toBe(404);
  });
});

const mountedA = mountTmpfs(16 * MiB);
const skipReasonA = typeof mountedA === 'string' ? mountedA : '';

describe.skipIf(skipReasonA !== '')(`a full disk in variant A${skipReasonA ? ` - skipped: ${skipReasonA}` : ''}`, () => {
  const fs = mountedA as Tmpfs;
  let node: NodeProcess | undefined;
  afterAll(async () => {
    await node?.stop();
    fs.unmount?.();
  });

  it('refuses a store with RESOURCE_EXHAUSTED (code 8) in the gRPC-gateway error shape', async () => {
    node = await startNode({ dataDir: join(fs.path, 'data'), args: ['--api-variant', 'a'] });
    fs.fill(256 * 1024);
    const res = await putJson(node.url, { data: patternBytes(2 * MiB, 31).toString('base64'), policy: 'REPLICATION_POLICY_NONE' }, 'PUT');
    expect(res.status).toBe(507);
    expect(await res.json()).toEqual({ code: 8, message: expect.stringMatching(/disk space/) });
  });
});
