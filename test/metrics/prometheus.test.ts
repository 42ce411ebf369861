/**
 * A real Prometheus (Debian's /usr/bin/prometheus: loopback only, temp dir, stopped by the test)
 * scrapes a node's metrics listener every second; its query API then shows the target up and
 * blobstore_operations_total moving after a put.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../cli/helpers.js';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import { type MetricsNode, NODE_ID, startMetricsNode } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';


let m: MetricsNode;
let dir: string;
let prometheus: ChildProcess | undefined;
let exited: Promise<void> | undefined;
let promUrl: string;
let promOutput = '';

/** What `fn` answers once it answers something (it polls Prometheus's query API). */
async function valueWhen<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  let value: T | undefined;
  await waitFor(async () => (value = await fn().catch(() => undefined)) !== undefined, { what: () => `${what}; prometheus said:\n${promOutput.slice(-4000)}`, timeoutMs, pollMs: 250 });
  return value!;
}

interface VectorResult {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant query; the vector's samples. */
async function query(promql: string): Promise<VectorResult[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as { status: string; data: { resultType: string; result: VectorResult[] } };
  if (body.status !== 'success') throw new Error(`query ${promql}: ${JSON.stringify(body)}`);
  return body.data.result;
}

beforeAll(async () => {
  m = await startMetricsNode();
  dir = mkdtempSync(join(tmpdir(), 'blobstore-prometheus-'));
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  writeFileSync(join(dir, 'prometheus.yml'), [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    '  evaluation_interval: 1s',
    'scrape_configs:',
    '  - job_name: blobstore',
    '    static_configs:',
    `      - targets: ['127.0.0.1:${m.metricsPort}']`,
    '',
  ].join('\n'));
  prometheus = spawn('/usr/bin/prometheus', [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'tsdb')}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  prometheus.stdout!.on('data', (d: Buffer) => (promOutput += d.toString()));
  prometheus.stderr!.on('data', (d: Buffer) => (promOutput += d.toString()));
  const child = prometheus;
  exited = new Promise((resolve) => child.once('exit', () => resolve()));
  await valueWhen('prometheus ready', async () => ((await fetch(`${promUrl}/-/ready`)).status === 200 ? true : undefined));
});

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill('SIGTERM');
    const timer = setTimeout(() => prometheus?.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  await m?.node.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a real Prometheus scraping the node', () => {
  it('sees the target up (up == 1)', async () => {
    const up = await valueWhen('up == 1', async () => {
      const r = await query('up{job="blobstore"}');
      return r.length === 1 && r[0]!.value[1] === '1' ? r[0]! : undefined;
    });
    expect(up.metric.instance).toBe(`127.0.0.1:${m.metricsPort}`);
  });

  it('sees blobstore_operations_total{operation="put"} move from 0 to 1 after a put, with the node label', async () => {
    const before = await valueWhen('a scrape of operations_total', async () => {
      const r = await query('blobstore_operations_total{operation="put"}');
      return r.length === 1 ? r[0]! : undefined;
    });
    expect(before.value[1]).toBe('0');
    expect(before.metric.node).toBe(NODE_ID);
    expect((await putRaw(m.node.url, patternBytes(4096, 3))).status).toBe(201);
    const after = await valueWhen('operations_total to move', async () => {
      const r = await query('blobstore_operations_total{operation="put"}');
      return r.length === 1 && r[0]!.value[1] === '1' ? r[0]! : undefined;
    });
    expect(after.metric.node).toBe(NODE_ID);
    // Histograms are usable as such: a quantile comes back for the put latency.
    const q = await valueWhen('put latency quantile', async () => {
      const r = await query('histogram_quantile(0.5, blobstore_put_latency_seconds_bucket)');
      return r.length === 1 && r[0]!.value[1] !== 'NaN' ? r[0]! : undefined;
    });
    expect(Number(q.value[1])).toBeGreaterThan(0);
  });
});
