/**
 * GET /metrics and GET /api/v1/metrics on a real node: every series of the spec with the node
 * label and the spec's buckets, single-node values, counters that move with requests, promtool's
 * lint, the JSON snapshot's exact shape, and the method and path rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes, putRaw } from '../helpers/blobs.js';
import {
  type Family, type MetricsNode, NODE_ID, SPEC_LE, SPEC_NAMED_GAUGE_FINDINGS, SPEC_SERIES, parseExposition, promtoolFindings, sampleValue, scrape, startMetricsNode,
} from '../helpers/metrics.js';

const OPERATIONS = ['put', 'get', 'delete', 'stat', 'list'];
const STAGES = ['receive', 'hash', 'write', 'fsync', 'index', 'read', 'verify', 'respond'];

let m: MetricsNode;
let api: string;
const BLOB = patternBytes(5000, 7);
let blobId: string;

beforeAll(async () => {
  m = await startMetricsNode();
  api = m.node.url;
  const res = await putRaw(api, BLOB);
  expect(res.status).toBe(201);
  blobId = ((await res.json()) as { id: string }).id;
  expect((await fetch(`${api}/v1/blobs/${blobId}`)).status).toBe(200);
  expect((await fetch(`${api}/v1/blobs/${'0'.repeat(32)}`)).status).toBe(404);
});

afterAll(async () => {
  await m?.node.stop();
});

/** The `le` values of one histogram series (labels besides le and node match `labels`). */
function bucketsOf(f: Family, name: string, labels: Record<string, string> = {}): string[] {
  return f.samples
    .filter((s) => s.name === `${name}_bucket` && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .map((s) => s.labels.le!);
}

describe('GET /metrics', () => {
  it('answers the text exposition with content type text/plain; version=0.0.4; charset=utf-8', async () => {
    const res = await fetch(`${m.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await res.text()).toMatch(/^# HELP blobstore_/);
  });

  it('has every series of the spec, prefixed blobstore_, of the spec type, with node on every sample', async () => {
    const families = await scrape(m.metricsUrl);
    for (const [name, type] of Object.entries(SPEC_SERIES)) {
      const f = families.get(`blobstore_${name}`);
      expect(f, `blobstore_${name}`).toBeDefined();
      expect(f!.type, `blobstore_${name}`).toBe(type);
      if (name !== 'peer_health') expect(f!.samples.length, `blobstore_${name}`).toBeGreaterThan(0);
    }
    for (const [name, f] of families) {
      expect(/^(blobstore|process|nodejs)_/.test(name), name).toBe(true);
      for (const s of f.samples) expect(s.labels.node, `${s.name} ${JSON.stringify(s.labels)}`).toBe(NODE_ID);
    }
  });

  it('every histogram has exactly the spec buckets (and +Inf), _sum and _count, per series', async () => {
    const families = await scrape(m.metricsUrl);
    const histograms = [...families].filter(([, f]) => f.type === 'histogram');
    // The spec's eleven, and the streamed EC store's two steps after its last byte (seal, manifest).
    expect(histograms.filter(([name]) => name.startsWith('blobstore_')).length).toBe(13);
    expect(histograms.map(([name]) => name)).toEqual(expect.arrayContaining(['blobstore_ec_seal_latency_seconds', 'blobstore_ec_manifest_latency_seconds']));
    for (const [name, f] of histograms) {
      const seriesLabel = name === 'blobstore_stage_latency_seconds' ? 'stage' : undefined;
      // The runtime's GC histogram has one series per GC kind seen so far.
      const gcKinds = name === 'nodejs_gc_duration_seconds' ? [...new Set(f.samples.map((s) => s.labels.kind!))] : undefined;
      const series = seriesLabel ? STAGES.map((s) => ({ [seriesLabel]: s })) : gcKinds ? gcKinds.map((kind) => ({ kind })) : [{}];
      for (const labels of series) {
        expect(bucketsOf(f, name, labels), `${name} ${JSON.stringify(labels)}`).toEqual(SPEC_LE);
        const count = sampleValue(families, name, `${name}_count`, labels);
        expect(count).toBe(sampleValue(families, name, `${name}_bucket`, { ...labels, le: '+Inf' }));
        expect(sampleValue(families, name, `${name}_sum`, labels)).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it('cluster series hold their single-node values; no peer_health series before a peer heartbeat', async () => {
    const f = await scrape(m.metricsUrl);
    const v = (name: string): number | undefined => sampleValue(f, `blobstore_${name}`, `blobstore_${name}`);
    expect(v('nodes_total')).toBe(1);
    expect(v('nodes_active')).toBe(1);
    expect(v('nodes_offline')).toBe(0);
    expect(v('ring_version')).toBe(0);
    expect(v('grpc_connections_active')).toBe(0);
    expect(v('replication_queue_depth')).toBe(0);
    expect(v('replication_lag_seconds')).toBe(0);
    expect(v('heartbeat_failures_total')).toBe(0);
    expect(v('ec_reconstruction_total')).toBe(0);
    expect(v('shards_missing_total')).toBe(0);
    expect(v('shard_count')).toBe(0);
    expect(v('last_heartbeat_timestamp')).toBe(0);
    expect(f.get('blobstore_peer_health')!.samples).toEqual([]);
    expect(v('node_up')).toBe(1);
    expect(v('backend_healthy')).toBe(1);
    expect(v('capacity_bytes_total')).toBeGreaterThan(0);
  });

  it('counters move with requests: operations, bytes, latency, failures and errors by type', async () => {
    const f = await scrape(m.metricsUrl);
    expect(sampleValue(f, 'blobstore_operations_total', 'blobstore_operations_total', { operation: 'put' })).toBe(1);
    expect(sampleValue(f, 'blobstore_operations_total', 'blobstore_operations_total', { operation: 'get' })).toBe(2);
    for (const op of ['delete', 'stat', 'list']) expect(sampleValue(f, 'blobstore_operations_total', 'blobstore_operations_total', { operation: op })).toBe(0);
    expect(sampleValue(f, 'blobstore_bytes_written_total', 'blobstore_bytes_written_total')).toBe(BLOB.length);
    expect(sampleValue(f, 'blobstore_bytes_read_total', 'blobstore_bytes_read_total')).toBe(BLOB.length);
    expect(sampleValue(f, 'blobstore_put_latency_seconds', 'blobstore_put_latency_seconds_count')).toBe(1);
    expect(sampleValue(f, 'blobstore_get_latency_seconds', 'blobstore_get_latency_seconds_count')).toBe(1);
    expect(sampleValue(f, 'blobstore_request_failures_total', 'blobstore_request_failures_total', { operation: 'get' })).toBe(1);
    expect(sampleValue(f, 'blobstore_request_failures_total', 'blobstore_request_failures_total', { operation: 'put' })).toBe(0);
    expect(sampleValue(f, 'blobstore_errors_total', 'blobstore_errors_total', { type: 'client' })).toBe(1);
    for (const type of ['storage', 'network']) expect(sampleValue(f, 'blobstore_errors_total', 'blobstore_errors_total', { type })).toBe(0);
    expect(sampleValue(f, 'blobstore_blob_count', 'blobstore_blob_count')).toBe(1);
    expect(sampleValue(f, 'blobstore_capacity_bytes_used', 'blobstore_capacity_bytes_used')).toBeGreaterThan(0);
  });

  it('the engine stages of a put and a get are timed (hash, write, fsync, index, read, verify)', async () => {
    const f = await scrape(m.metricsUrl);
    for (const stage of ['hash', 'write', 'fsync', 'index', 'read', 'verify']) {
      expect(sampleValue(f, 'blobstore_stage_latency_seconds', 'blobstore_stage_latency_seconds_count', { stage }), stage).toBeGreaterThanOrEqual(1);
    }
  });

  it('has the standard process and Node.js runtime series (prom-client default collectors) with the node label', async () => {
    const f = await scrape(m.metricsUrl);
    const expected: Record<string, string> = {
      process_cpu_seconds_total: 'counter', process_cpu_user_seconds_total: 'counter', process_start_time_seconds: 'gauge',
      process_resident_memory_bytes: 'gauge', process_open_fds: 'gauge', process_max_fds: 'gauge',
      nodejs_eventloop_lag_seconds: 'gauge', nodejs_heap_size_used_bytes: 'gauge', nodejs_heap_space_size_used_bytes: 'gauge',
      nodejs_external_memory_bytes: 'gauge', nodejs_gc_duration_seconds: 'histogram', nodejs_version_info: 'gauge',
      nodejs_active_handles: 'gauge', nodejs_active_handles_total: 'untyped', nodejs_active_requests_total: 'untyped',
      nodejs_active_resources_total: 'untyped',
    };
    for (const [name, type] of Object.entries(expected)) {
      expect(f.get(name)?.type, name).toBe(type);
    }
    expect(sampleValue(f, 'process_resident_memory_bytes', 'process_resident_memory_bytes')).toBeGreaterThan(10 * 2 ** 20);
    expect(sampleValue(f, 'process_start_time_seconds', 'process_start_time_seconds')).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(f.get('nodejs_version_info')!.samples[0]!.labels).toMatchObject({ version: process.version, node: NODE_ID });
  });

  it('worker pool and event-loop series are there', async () => {
    const f = await scrape(m.metricsUrl);
    expect(sampleValue(f, 'blobstore_pool_threads', 'blobstore_pool_threads')).toBe(0);
    expect(sampleValue(f, 'blobstore_pool_queue_depth', 'blobstore_pool_queue_depth')).toBe(0);
    expect(sampleValue(f, 'blobstore_pool_utilisation_ratio', 'blobstore_pool_utilisation_ratio')).toBeGreaterThanOrEqual(0);
    expect(f.get('blobstore_event_loop_lag_seconds')!.type).toBe('summary');
    expect(sampleValue(f, 'blobstore_event_loop_lag_seconds', 'blobstore_event_loop_lag_seconds', { quantile: '0.99' })).toBeGreaterThanOrEqual(0);
  });

  it('uptime_seconds is recomputed on each scrape', async () => {
    const read = async (): Promise<number> => sampleValue(await scrape(m.metricsUrl), 'blobstore_uptime_seconds', 'blobstore_uptime_seconds')!;
    const first = await read();
    await new Promise((r) => setTimeout(r, 300)); // time is the subject: uptime must have grown
    const second = await read();
    expect(second).toBeGreaterThan(first);
  });

  it('promtool check metrics finds exactly the lint findings of the four spec-named gauges, nothing else', async () => {
    const text = await (await fetch(`${m.metricsUrl}/metrics`)).text();
    const r = await promtoolFindings(text);
    expect(r.findings).toStrictEqual(SPEC_NAMED_GAUGE_FINDINGS);
    expect(r.code).toBe(3);
  });
});

describe('methods and paths', () => {
  // The spec: "Any other method gives 405", HEAD included.
  for (const path of ['/metrics', '/api/v1/metrics']) {
    for (const method of ['HEAD', 'POST', 'PUT', 'DELETE', 'PATCH']) {
      it(`${method} ${path} answers 405 with Allow: GET`, async () => {
        const res = await fetch(`${m.metricsUrl}${path}`, { method, body: method === 'POST' || method === 'PUT' ? 'x' : undefined });
        expect(res.status).toBe(405);
        expect(res.headers.get('allow')).toBe('GET');
      });
    }
  }

  it('/metrics/ (trailing slash) is not an alias: 404', async () => {
    expect((await fetch(`${m.metricsUrl}/metrics/`)).status).toBe(404);
    expect((await fetch(`${m.metricsUrl}/api/v1/metrics/`)).status).toBe(404);
  });

  it('unknown paths on the metrics listener answer 404; the blob API is not served there', async () => {
    expect((await fetch(`${m.metricsUrl}/nope`)).status).toBe(404);
    expect((await fetch(`${m.metricsUrl}/v1/blobs`)).status).toBe(404);
  });
});

describe('GET /api/v1/metrics', () => {
  it('answers the spec JSON shape exactly, with Cache-Control: no-cache', async () => {
    const res = await fetch(`${m.metricsUrl}/api/v1/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const s = (await res.json()) as Record<string, unknown>;
    const shape = (o: unknown): unknown =>
      o !== null && typeof o === 'object' ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, shape(v)])) : typeof o;
    expect(shape(s)).toEqual({
      nodeId: 'string',
      uptime: 'number',
      storage: { totalBytes: 'number', usedBytes: 'number', blobCount: 'number', shardCount: 'number' },
      throughput: { bytesReadTotal: 'number', bytesWrittenTotal: 'number', operations: { put: 'number', get: 'number', delete: 'number', stat: 'number', list: 'number' } },
      cluster: { nodesTotal: 'number', nodesActive: 'number', nodesOffline: 'number', ringVersion: 'number' },
      health: { nodeUp: 'boolean', backendHealthy: 'boolean', peerHealth: {} },
    });
    const ints = [s.uptime, ...Object.values(s.storage as object), ...Object.values(s.cluster as object)];
    for (const n of ints) expect(Number.isInteger(n)).toBe(true);
    expect(s).toMatchObject({
      nodeId: NODE_ID,
      storage: { blobCount: 1, shardCount: 0 },
      throughput: { bytesReadTotal: BLOB.length, bytesWrittenTotal: BLOB.length, operations: { put: 1, get: 2, delete: 0, stat: 0, list: 0 } },
      cluster: { nodesTotal: 1, nodesActive: 1, nodesOffline: 0, ringVersion: 0 },
      health: { nodeUp: true, backendHealthy: true, peerHealth: {} },
    });
  });

  it('GET /api/v1/metrics/detail answers stage and operation percentiles from the buckets, pool and event-loop lag', async () => {
    const res = await fetch(`${m.metricsUrl}/api/v1/metrics/detail`);
    expect(res.status).toBe(200);
    const d = (await res.json()) as { nodeId: string; stages: Record<string, { count: number; p50: number; p99: number }>; operations: Record<string, { count: number; p50: number; p95: number; p99: number }>; pool: object; eventLoopLagSeconds: object };
    expect(d.nodeId).toBe(NODE_ID);
    expect(Object.keys(d.stages)).toEqual(STAGES);
    expect(Object.keys(d.operations)).toEqual(OPERATIONS);
    expect(d.operations.put!.count).toBe(1);
    expect(d.operations.put!.p50).toBeGreaterThan(0);
    expect(d.operations.put!.p50).toBeLessThanOrEqual(d.operations.put!.p99);
    expect(d.operations.list!).toEqual({ count: 0, p50: 0, p95: 0, p99: 0 });
    expect(Object.keys(d.pool).sort()).toEqual(['queueDepth', 'threads', 'utilisation']);
    expect(Object.keys(d.eventLoopLagSeconds).sort()).toEqual(['p50', 'p99']);
  });
});

describe('parseExposition (the test parser itself)', () => {
  it('reads families, labels and values', () => {
    const f = parseExposition('# HELP a_total x\n# TYPE a_total counter\na_total{k="v",node="n"} 3\n');
    expect(f.get('a_total')).toEqual({ type: 'counter', help: 'x', samples: [{ name: 'a_total', labels: { k: 'v', node: 'n' }, value: 3 }] });
  });
});
