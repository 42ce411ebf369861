/**
 * Metrics test helpers: a node with its metrics listener on a free port, scrapes, a small parser
 * of the text exposition, and the spec's series table.
 */
import { spawn } from 'node:child_process';
import { type NodeProcess, type StartOptions, startNode } from './node-process.js';
import { listenerPort } from './log.js';

export const NODE_ID = 'test-node';

/** The spec's buckets, as the exposition writes them in `le`. */
export const SPEC_LE = ['0.0001', '0.0005', '0.001', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '30', '60', '+Inf'];

/** Every series of the spec's table (after the blobstore_ prefix) and its type, as the table gives it. */
export const SPEC_SERIES: Readonly<Record<string, string>> = {
  node_up: 'gauge', uptime_seconds: 'gauge', last_heartbeat_timestamp: 'gauge', backend_healthy: 'gauge',
  grpc_connections_active: 'gauge', peer_health: 'gauge', capacity_bytes_total: 'gauge', capacity_bytes_used: 'gauge',
  blob_count: 'gauge', shard_count: 'gauge', bytes_read_total: 'counter', bytes_written_total: 'counter',
  operations_total: 'counter', put_latency_seconds: 'histogram', get_latency_seconds: 'histogram',
  delete_latency_seconds: 'histogram', stat_latency_seconds: 'histogram', list_latency_seconds: 'histogram',
  ec_encode_latency_seconds: 'histogram', ec_decode_latency_seconds: 'histogram', shard_fetch_latency_seconds: 'histogram',
  shard_store_latency_seconds: 'histogram', replicate_latency_seconds: 'histogram', nodes_total: 'gauge',
  nodes_active: 'gauge', nodes_offline: 'gauge', heartbeat_failures_total: 'counter', ring_version: 'gauge',
  replication_queue_depth: 'gauge', replication_lag_seconds: 'gauge', ec_reconstruction_total: 'counter',
  shards_missing_total: 'counter', errors_total: 'counter', request_failures_total: 'counter',
};

export interface MetricsNode {
  readonly node: NodeProcess;
  /** Base URL of the metrics listener (or of the API port in the `same` layout). */
  readonly metricsUrl: string;
  readonly metricsPort: number;
}

/** The port of the metrics listener the node logged at start. */
export function metricsPortOf(node: NodeProcess): number | undefined {
  return listenerPort(node.output(), 'metrics');
}

/** A node with its metrics listener on a free loopback port (or `metricsAddr` as given). */
export async function startMetricsNode(options: StartOptions & { metricsAddr?: string } = {}): Promise<MetricsNode> {
  const node = await startNode({ ...options, args: ['--metrics-addr', options.metricsAddr ?? '127.0.0.1:0', ...(options.args ?? [])] });
  const port = metricsPortOf(node);
  if (port === undefined) {
    await node.stop();
    throw new Error(`node printed no metrics line:\n${node.output()}`);
  }
  return { node, metricsUrl: `http://127.0.0.1:${port}`, metricsPort: port };
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

/** Parses the text exposition (format 0.0.4) into families by name; samples go to their family. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      current = families.get(name!) ?? { type: '', help: '', samples: [] };
      families.set(name!, current);
      if (kind === 'TYPE') current.type = rest!;
      else current.help = rest!;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (!current) throw new Error(`sample before any family: ${line}`);
    current.samples.push({ name: m[1]!, labels, value });
  }
  return families;
}

/** The value of the one sample `name` with these labels (besides node); undefined when absent. */
export function sampleValue(families: Map<string, Family>, family: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const f = families.get(family);
  const s = f?.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value;
}

export async function scrape(metricsUrl: string, headers: Record<string, string> = {}): Promise<Map<string, Family>> {
  const res = await fetch(`${metricsUrl}/metrics`, { headers });
  if (res.status !== 200) throw new Error(`/metrics: HTTP ${res.status}: ${await res.text()}`);
  return parseExposition(await res.text());
}

/**
 * What `promtool check metrics` says of the exposition and no more: the spec names four gauges
 * like a counter (_total) or a summary (_count), and promtool's naming lint flags exactly those
 * (src/metrics/README.md). It exits 3 for lint findings.
 */
export const SPEC_NAMED_GAUGE_FINDINGS = [
  'blobstore_blob_count non-histogram and non-summary metrics should not have "_count" suffix',
  'blobstore_capacity_bytes_total non-counter metrics should not have "_total" suffix',
  'blobstore_nodes_total non-counter metrics should not have "_total" suffix',
  'blobstore_shard_count non-histogram and non-summary metrics should not have "_count" suffix',
];

/** promtool's findings on an exposition (sorted lines) and its exit code. */
export async function promtoolFindings(text: string): Promise<{ code: number | null; findings: string[] }> {
  const r = await runWithInput('/usr/bin/promtool', ['check', 'metrics'], text);
  const findings = `${r.stdout}\n${r.stderr}`.split('\n').map((l) => l.trim()).filter((l) => l !== '').sort();
  return { code: r.code, findings };
}

/** Runs a command with `input` on stdin; resolves with its exit code and output. */
export function runWithInput(command: string, args: string[], input: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}
