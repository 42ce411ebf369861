/**
 * GET /health: 200 `OK` while the storage backend check passes (statfs of the data dir and a small
 * write + fsync in it); 503 `UNHEALTHY: backend error` once the data dir is unusable, with
 * backend_healthy and node_up following; healthy again when the dir comes back.
 */
import { renameSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricsNode, sampleValue, scrape, startMetricsNode } from '../helpers/metrics.js';

let m: MetricsNode;
let moved = false;

beforeAll(async () => {
  m = await startMetricsNode();
});

afterAll(async () => {
  if (moved) renameSync(`${m.node.dataDir}.gone`, m.node.dataDir);
  await m?.node.stop();
});

async function health(): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`${m.metricsUrl}/health`);
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

async function healthGauges(): Promise<{ backend: number | undefined; up: number | undefined }> {
  const f = await scrape(m.metricsUrl);
  return {
    backend: sampleValue(f, 'blobstore_backend_healthy', 'blobstore_backend_healthy'),
    up: sampleValue(f, 'blobstore_node_up', 'blobstore_node_up'),
  };
}

describe('GET /health', () => {
  it('answers 200 with the plain-text body OK while the backend check passes', async () => {
    expect(await health()).toEqual({ status: 200, body: 'OK', type: 'text/plain; charset=utf-8' });
    expect(await healthGauges()).toEqual({ backend: 1, up: 1 });
  });

  it('answers 503 UNHEALTHY: backend error when the data dir is gone; backend_healthy and node_up go to 0', async () => {
    renameSync(m.node.dataDir, `${m.node.dataDir}.gone`);
    moved = true;
    expect(await health()).toEqual({ status: 503, body: 'UNHEALTHY: backend error', type: 'text/plain; charset=utf-8' });
    expect(await healthGauges()).toEqual({ backend: 0, up: 0 });
    const snapshot = (await (await fetch(`${m.metricsUrl}/api/v1/metrics`)).json()) as { health: unknown };
    expect(snapshot.health).toEqual({ nodeUp: false, backendHealthy: false, peerHealth: {} });
    expect(m.node.output()).toMatch(/storage backend unhealthy/);
  });

  it('answers 200 again once the data dir is back', async () => {
    renameSync(`${m.node.dataDir}.gone`, m.node.dataDir);
    moved = false;
    expect((await health()).status).toBe(200);
    expect(await healthGauges()).toEqual({ backend: 1, up: 1 });
  });

  it('needs no credentials and answers other methods 405 with Allow: GET, HEAD', async () => {
    const res = await fetch(`${m.metricsUrl}/health`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });
});
