/**
 * The three listener layouts of MetricsAddr: host:port (a separate listener; `:9090` by default),
 * `same` (the API port serves metrics, health and the UI beside the blob API), and empty (none of
 * them anywhere). Also: the UI page, variant A's error bodies, and the bearer gate on metrics.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { opsLayout } from '../../src/ops/ops-server.js';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { metricsPortOf, scrape, startMetricsNode } from '../helpers/metrics.js';
import { startNode } from '../helpers/node-process.js';
import { listenerAddress } from '../helpers/log.js';

describe('MetricsAddr parsing', () => {
  it('":9090" (the default) is a separate listener on all interfaces, port 9090', () => {
    expect(opsLayout(':9090')).toEqual({ kind: 'separate', host: '0.0.0.0', port: 9090 });
    expect(opsLayout('127.0.0.1:0')).toEqual({ kind: 'separate', host: '127.0.0.1', port: 0 });
    expect(opsLayout('same')).toEqual({ kind: 'same' });
    expect(opsLayout('')).toEqual({ kind: 'off' });
  });
});

describe('separate listener (MetricsAddr host:port)', () => {
  it('serves metrics, health, JSON and the UI; the API port serves none of them', async () => {
    const m = await startMetricsNode({ metricsAddr: ':0' });
    try {
      expect(listenerAddress(m.node.output(), 'metrics')).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      expect(m.metricsPort).not.toBe(m.node.port);
      for (const path of ['/metrics', '/api/v1/metrics', '/health', '/']) {
        expect((await fetch(`${m.metricsUrl}${path}`)).status, path).toBe(200);
        expect((await fetch(`${m.node.url}${path}`)).status, `API port ${path}`).toBe(404);
      }
      expect((await fetch(`${m.node.url}/healthz`)).status).toBe(200);
      const ui = await fetch(`${m.metricsUrl}/`);
      expect(ui.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await ui.text()).toMatch(/^<!doctype html>/i);
    } finally {
      await m.node.stop();
    }
  });
});

describe('MetricsAddr same', () => {
  it('serves /metrics, /api/v1/metrics, /health and the UI on the API port beside the blob API and /healthz', async () => {
    const m = await startMetricsNode({ metricsAddr: 'same' });
    try {
      expect(m.metricsPort).toBe(m.node.port);
      const api = m.node.url;
      expect((await putRaw(api, patternBytes(100, 1))).status).toBe(201);
      const f = await scrape(api);
      expect(f.get('blobstore_operations_total')!.samples.find((s) => s.labels.operation === 'put')!.value).toBe(1);
      expect((await fetch(`${api}/api/v1/metrics`)).headers.get('cache-control')).toBe('no-cache');
      expect(await (await fetch(`${api}/health`)).text()).toBe('OK');
      expect(await (await fetch(`${api}/healthz`)).text()).toBe('OK');
      expect((await fetch(`${api}/`)).headers.get('content-type')).toBe('text/html; charset=utf-8');
      const post = await fetch(`${api}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET');
      expect((await fetch(`${api}/metrics/`)).status).toBe(404);
      expect((await fetch(`${api}/nope`)).status).toBe(404);
    } finally {
      await m.node.stop();
    }
  });
});

describe('MetricsAddr empty', () => {
  it('starts no metrics listener and serves no metrics, health or UI path', async () => {
    const node = await startNode();
    try {
      expect(metricsPortOf(node)).toBeUndefined();
      for (const path of ['/metrics', '/api/v1/metrics', '/health', '/']) expect((await fetch(`${node.url}${path}`)).status, path).toBe(404);
      expect((await fetch(`${node.url}/healthz`)).status).toBe(200);
    } finally {
      await node.stop();
    }
  });
});

describe('variant A error bodies', () => {
  it('405 and 404 bodies take variant A shape {code: gRPC code, message}', async () => {
    const m = await startMetricsNode({ args: ['--api-variant', 'a'] });
    try {
      const post = await fetch(`${m.metricsUrl}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(await post.json()).toEqual({ code: 12, message: '/metrics answers GET only' });
      const missing = await fetch(`${m.metricsUrl}/nope`);
      expect(missing.status).toBe(404);
      expect(Object.keys((await missing.json()) as object).sort()).toEqual(['code', 'message']);
    } finally {
      await m.node.stop();
    }
  });
});

describe('bearer authentication on the metrics listener', () => {
  it('/metrics and /api/v1/metrics need the read scope; /health and the UI stay open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'blobstore-metrics-auth-'));
    const tokens = join(dir, 'tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [
      { name: 'reader', token: 'metrics-reader-token-1', scopes: ['read'] },
      { name: 'writer', token: 'metrics-writer-token-1', scopes: ['write'] },
    ] }));
    const m = await startMetricsNode({ args: ['--auth-tokens-file', tokens] });
    try {
      const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
      for (const path of ['/metrics', '/api/v1/metrics', '/api/v1/metrics/detail']) {
        const none = await fetch(`${m.metricsUrl}${path}`);
        expect(none.status, path).toBe(401);
        expect(none.headers.get('www-authenticate')).toBe('Bearer');
        expect(((await none.json()) as { code: number }).code).toBe(401);
        expect((await fetch(`${m.metricsUrl}${path}`, { headers: bearer('wrong-token') })).status, path).toBe(401);
        expect((await fetch(`${m.metricsUrl}${path}`, { headers: bearer('metrics-writer-token-1') })).status, path).toBe(403);
        expect((await fetch(`${m.metricsUrl}${path}`, { headers: bearer('metrics-reader-token-1') })).status, path).toBe(200);
      }
      expect((await fetch(`${m.metricsUrl}/health`)).status).toBe(200);
      expect((await fetch(`${m.metricsUrl}/`)).status).toBe(200);
    } finally {
      await m.node.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
