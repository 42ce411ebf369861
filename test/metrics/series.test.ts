/**
 * The metrics internals in-process: bucket placement and quantile estimates, the errors_total
 * type of each error kind, the cluster API driving its series, and a Recorder that allocates
 * nothing per call.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ClientGone } from '../../src/errors/client-gone.js';
import { BlobstoreError, toBlobstoreError } from '../../src/errors/errors.js';
import { ERROR_TYPES, errorTypeIndex } from '../../src/metrics/error-types.js';
import { silentLogger } from '../../src/log/logger.js';
import type { RepairSource } from '../../src/metrics/cluster-metrics.js';
import { NodeMetrics, type NodeMetricsOptions } from '../../src/metrics/node-metrics.js';
import { Late } from '../../src/util/late.js';
import { HistogramFamily, SLOTS, SPEC_BUCKETS } from '../../src/metrics/series.js';
import { parseExposition, runWithInput, sampleValue } from '../helpers/metrics.js';
import { REPO } from '../helpers/node-process.js';

/** Bytes allocated per call, measured in a child process (built modules from dist/). */
async function measureAllocation(): Promise<Record<'promObserve' | 'failed' | 'done' | 'stage' | 'clock' | 'ticks', number>> {
  const script = `
    import { createRequire } from 'node:module';
    import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
    const require = createRequire(${JSON.stringify(join(REPO, 'package.json'))});
    const { Histogram, Registry } = require('prom-client');
    const { NodeMetrics } = await import(${JSON.stringify(join(REPO, 'dist/src/metrics/node-metrics.js'))});
    const { BlobstoreError } = await import(${JSON.stringify(join(REPO, 'dist/src/errors/errors.js'))});
    const { ticks } = await import(${JSON.stringify(join(REPO, 'dist/src/metrics/clock.js'))});
    const dir = mkdtempSync('/tmp/blobstore-alloc-'); mkdirSync(dir + '/tmp');
    const { silentLogger } = await import(${JSON.stringify(join(REPO, 'dist/src/log/logger.js'))});
    const m = new NodeMetrics({ nodeId: 'a', dataDir: dir, healthCheckTimeoutMs: 1000, log: silentLogger() });
    const h = new Histogram({ name: 'x_seconds', help: 'x', labelNames: ['operation'], buckets: [0.001, 0.01, 0.1, 1], registers: [new Registry()] });
    const err = new BlobstoreError('not_found', 'x');
    const labels = { operation: 'put' };
    const t0 = ticks();
    let sink = 0;
    let ticksSink = 0;
    const N = 100000;
    // The least of three runs: whatever else allocates meanwhile (the node's timers, the JIT on
    // a loaded machine) only adds to a run.
    const perCall = (fn) => {
      for (let i = 0; i < 20000; i++) fn();
      let least = Infinity;
      for (let run = 0; run < 3; run++) {
        globalThis.gc();
        const before = process.memoryUsage().heapUsed;
        for (let i = 0; i < N; i++) fn();
        least = Math.min(least, (process.memoryUsage().heapUsed - before) / N);
      }
      return least;
    };
    const out = {
      promObserve: perCall(() => h.observe(labels, 0.003)),
      failed: perCall(() => m.failed('get', err)),
      done: perCall(() => m.done('put', t0, 4096)),
      stage: perCall(() => m.stage('hash', t0)),
      clock: perCall(() => { sink += performance.now(); }),
      // xor: a small integer stays one (a sum of them would grow past 2^30 into a heap number).
      ticks: perCall(() => { ticksSink ^= ticks(); }),
    };
    m.close();
    rmSync(dir, { recursive: true, force: true });
    process.stdout.write(JSON.stringify(out));
  `;
  const r = await runWithInput(process.execPath, ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64', '--input-type=module', '-'], script);
  if (r.code !== 0) throw new Error(`allocation probe failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<'promObserve' | 'failed' | 'done' | 'stage' | 'clock' | 'ticks', number>;
}

const dirs: string[] = [];
function metricsFor(nodeId: string, late: Pick<NodeMetricsOptions, 'repair'> = {}): NodeMetrics {
  const dir = mkdtempSync(join(tmpdir(), 'blobstore-metrics-unit-'));
  mkdirSync(join(dir, 'tmp'));
  dirs.push(dir);
  return new NodeMetrics({ nodeId, dataDir: dir, healthCheckTimeoutMs: 2000, log: silentLogger(), ...late });
}
const opened: NodeMetrics[] = [];
afterAll(() => {
  for (const m of opened) m.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('HistogramFamily', () => {
  it('has the spec bounds and a +Inf bucket', () => {
    expect(SPEC_BUCKETS).toEqual([0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]);
    expect(SLOTS).toBe(17);
  });

  it('a value equal to a bound counts in that bound (le), above the last bound in +Inf', () => {
    const h = new HistogramFamily('x_seconds', 'x', '', []);
    h.observe(0, 0.001);
    h.observe(0, 0.0010001);
    h.observe(0, 61);
    h.observe(0, 0);
    expect(h.counts[0]).toBe(1); // 0 -> le 0.0001
    expect(h.counts[2]).toBe(1); // 0.001 -> le 0.001
    expect(h.counts[3]).toBe(1); // just above -> le 0.005
    expect(h.counts[16]).toBe(1); // +Inf
    expect(h.count(0)).toBe(4);
    expect(h.sums[0]).toBeCloseTo(61.0020001, 9);
  });

  it('estimates quantiles by linear interpolation inside the bucket, as histogram_quantile does', () => {
    const h = new HistogramFamily('x_seconds', 'x', '', []);
    for (let i = 0; i < 100; i++) h.observe(0, 0.003); // all in (0.001, 0.005]
    expect(h.quantile(0, 0.5)).toBeCloseTo(0.003, 9);
    expect(h.quantile(0, 0.99)).toBeCloseTo(0.001 + 0.004 * 0.99, 9);
    const empty = new HistogramFamily('y_seconds', 'y', '', []);
    expect(empty.quantile(0, 0.5)).toBe(0);
    const slow = new HistogramFamily('z_seconds', 'z', '', []);
    slow.observe(0, 100);
    expect(slow.quantile(0, 0.5)).toBe(60);
  });
});

describe('errors_total types', () => {
  const type = (err: BlobstoreError): string => ERROR_TYPES[errorTypeIndex(err)]!;
  const withCause = (kind: 'internal' | 'unavailable', code: string): BlobstoreError =>
    new BlobstoreError(kind, 'x', { cause: Object.assign(new Error(code), { code }) });

  it('maps each kind to a documented type', () => {
    expect(type(new BlobstoreError('invalid_argument', 'x'))).toBe('client');
    expect(type(new BlobstoreError('not_found', 'x'))).toBe('client');
    expect(type(new BlobstoreError('payload_too_large', 'x'))).toBe('client');
    expect(type(new BlobstoreError('unauthenticated', 'x'))).toBe('auth');
    expect(type(new BlobstoreError('permission_denied', 'x'))).toBe('auth');
    expect(type(new BlobstoreError('request_timeout', 'x'))).toBe('timeout');
    expect(type(new BlobstoreError('corruption', 'x'))).toBe('corruption');
    expect(type(new BlobstoreError('internal', 'x'))).toBe('storage');
    expect(type(withCause('internal', 'EIO'))).toBe('storage');
    expect(type(withCause('internal', 'ECONNRESET'))).toBe('network');
    expect(type(withCause('unavailable', 'ENOSPC'))).toBe('storage');
    expect(type(withCause('unavailable', 'ECONNREFUSED'))).toBe('network');
    expect(type(new BlobstoreError('unavailable', 'too many uploads'))).toBe('overload');
    expect(type(new BlobstoreError('unavailable', 'its owners are unreachable', { peer: true }))).toBe('network');
    // A download the client closed early, as the blob service records it.
    expect(type(toBlobstoreError(new ClientGone()))).toBe('cancelled');
  });
});

describe('NodeMetrics', () => {
  it('the cluster API drives the cluster series: members, ring, peers (a series per observed peer), heartbeats, replication, EC, repair', async () => {
    // The repair figures come from the cluster once the node's start has made it (a slot it sets).
    const cluster = new Late<RepairSource>('the cluster');
    const m = metricsFor('n1', { repair: cluster });
    opened.push(m);
    expect(m.cluster.repair().queueDepth).toBe(0);
    cluster.set({
      repairStats: () => ({ queueDepth: 4, bytesLeft: 4096, bytesPerSecond: 1024, etaSeconds: 4, rateLimitBytesPerSecond: 2048, bytesRepaired: 77, blobsRepaired: 5, scrubBytesChecked: 99 }),
    });
    m.cluster.setMembers(3, 2, 1);
    m.cluster.setRingVersion(7);
    m.cluster.setPeerHealth('n2', true);
    m.cluster.setPeerHealth('n3', false);
    m.cluster.heartbeatSucceeded(1_700_000_000_000);
    m.cluster.heartbeatFailed();
    m.cluster.setGrpcConnections(2);
    m.cluster.setReplication(5, 1.5);
    m.cluster.ecReconstructed();
    m.cluster.shardsMissingDetected(3);
    m.cluster.observe('replicate', performance.now() - 3);
    const f = parseExposition(await m.exposition());
    const v = (name: string, labels: Record<string, string> = {}): number | undefined => sampleValue(f, `blobstore_${name}`, `blobstore_${name}`, labels);
    expect([v('nodes_total'), v('nodes_active'), v('nodes_offline'), v('ring_version')]).toEqual([3, 2, 1, 7]);
    expect(v('peer_health', { peer: 'n2' })).toBe(1);
    expect(v('peer_health', { peer: 'n3' })).toBe(0);
    expect(f.get('blobstore_peer_health')!.samples.every((s) => s.labels.node === 'n1')).toBe(true);
    expect(v('last_heartbeat_timestamp')).toBe(1_700_000_000);
    expect(v('heartbeat_failures_total')).toBe(1);
    expect(v('grpc_connections_active')).toBe(2);
    expect([v('replication_queue_depth'), v('replication_lag_seconds')]).toEqual([5, 1.5]);
    expect([v('repair_queue_depth'), v('repair_bytes_left'), v('repair_bytes_per_second'), v('repair_eta_seconds')]).toEqual([4, 4096, 1024, 4]);
    expect([v('repair_rate_limit_bytes_per_second'), v('repair_bytes_total'), v('repair_blobs_total'), v('scrub_bytes_total')]).toEqual([2048, 77, 5, 99]);
    expect(v('ec_reconstruction_total')).toBe(1);
    expect(v('shards_missing_total')).toBe(3);
    expect(sampleValue(f, 'blobstore_replicate_latency_seconds', 'blobstore_replicate_latency_seconds_count')).toBe(1);
    const snapshot = await m.snapshot();
    expect(snapshot.cluster).toEqual({ nodesTotal: 3, nodesActive: 2, nodesOffline: 1, ringVersion: 7 });
    expect(snapshot.health.peerHealth).toEqual({ n2: true, n3: false });
    m.cluster.forgetPeer('n3');
    const after = parseExposition(await m.exposition());
    expect(after.get('blobstore_peer_health')!.samples.map((s) => s.labels.peer)).toEqual(['n2']);
  });

  it('done/failed/stage allocate nothing, clock reading included, where prom-client allocates per call', async () => {
    const r = await measureAllocation();
    // A young generation large enough that no scavenge runs while measuring, so heap growth is
    // what was allocated. prom-client's calls allocate (label hash strings, closures); ours read
    // the clock as ticks (a small integer), where performance.now() is a heap number per reading.
    // Any object allocated per call is at least 16 bytes; a few bytes per call on average is the
    // noise of the node's own timers (event-loop monitor) allocating during the measurement.
    expect(r.promObserve).toBeGreaterThan(64);
    expect(r.clock).toBeGreaterThanOrEqual(12);
    expect(r.ticks).toBeLessThan(4);
    expect(r.failed).toBeLessThan(4);
    expect(r.done).toBeLessThan(4);
    expect(r.stage).toBeLessThan(4);
  });
});
