/**
 * A tiny stand-in for the metrics listener, for the UI cases a single real node cannot show:
 * bearer auth, a failing endpoint, a cluster with peers. It serves UI_PAGE at / and the JSON
 * endpoints from a state object the test changes between polls.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { uiPage } from '../../src/ops/ui-page.js';
import { OPERATIONS, STAGES } from '../../src/metrics/recorder.js';

export interface ClusterNode {
  node_id: string;
  address: string;
  state: string;
  capacity_bytes: number;
  used_bytes: number;
  blob_count: number;
  migration?: { blobs_left: number; bytes_left: number; bytes_per_second: number };
}

export interface MockState {
  nodeId: string;
  /** When set, every JSON endpoint needs `Authorization: Bearer <token>`. */
  token: string | null;
  /** When true, /api/v1/metrics answers 500. */
  failing: boolean;
  operations: Record<string, number>;
  /** Failed requests by operation (counted in `operations` too). */
  failures: Record<string, number>;
  bytesReadTotal: number;
  bytesWrittenTotal: number;
  peerHealth: Record<string, boolean>;
  /** Answer of /v1/cluster/state; null answers 501 as a node without a cluster does. */
  clusterNodes: ClusterNode[] | null;
  /**
   * The cluster's view in the detail JSON (as a node in a cluster serves it, at read scope), with
   * this replication queue; /v1/cluster/state then answers 403 (an admin route the page must not need).
   */
  clusterInDetail: { queueDepth: number; lagSeconds: number } | null;
  /** Authorization headers seen on JSON requests, in order. */
  readonly authSeen: string[];
}

export interface MockMetrics {
  readonly url: string;
  readonly state: MockState;
  close(): Promise<void>;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function snapshot(s: MockState): unknown {
  const peers = Object.values(s.peerHealth);
  const nodesTotal = s.clusterNodes?.length ?? 1 + peers.length;
  const nodesActive = 1 + peers.filter(Boolean).length;
  return {
    nodeId: s.nodeId,
    uptime: 3725,
    storage: { totalBytes: 500 * 2 ** 30, usedBytes: 187 * 2 ** 30, blobCount: 48213, shardCount: 0 },
    throughput: { bytesReadTotal: s.bytesReadTotal, bytesWrittenTotal: s.bytesWrittenTotal, operations: { ...s.operations } },
    cluster: { nodesTotal, nodesActive, nodesOffline: nodesTotal - nodesActive, ringVersion: 7 },
    health: { nodeUp: true, backendHealthy: true, peerHealth: { ...s.peerHealth } },
  };
}

function detail(s: MockState): unknown {
  const percentiles = (base: number, count: number) => ({ count, p50: base, p95: base * 3, p99: base * 8 });
  return {
    nodeId: s.nodeId,
    uptime: 3725,
    stages: Object.fromEntries(STAGES.map((stage, i) => [stage, percentiles(20e-6 * (i + 1), 1000)])),
    operations: Object.fromEntries(OPERATIONS.map((op, i) => [op, percentiles(150e-6 * (i + 1), s.operations[op] ?? 0)])),
    failures: { ...s.failures },
    pool: { threads: 2, queueDepth: 0, utilisation: 0.18 },
    eventLoopLagSeconds: { p50: 0.0004, p99: 0.003 },
    ...(s.clusterInDetail ? { cluster: { ring_version: 7, nodes: s.clusterNodes ?? [], replication: s.clusterInDetail } } : {}),
  };
}

function route(s: MockState, req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  if (path === '/') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(uiPage({ metricsHere: true, apiHere: false, apiPort: 8080, metricsPort: 9090 }));
    return;
  }
  const auth = req.headers.authorization ?? '';
  s.authSeen.push(auth);
  if (s.token !== null && auth !== `Bearer ${s.token}`) return json(res, 401, { code: 401, error: 'Unauthorized', message: 'missing or invalid bearer token' });
  if (path === '/api/v1/metrics') return s.failing ? json(res, 500, { code: 500, error: 'Internal Server Error', message: 'mock failure' }) : json(res, 200, snapshot(s));
  if (path === '/api/v1/metrics/detail') return json(res, 200, detail(s));
  if (path === '/v1/cluster/state' && s.clusterInDetail) return json(res, 403, { code: 403, error: 'Forbidden', message: 'needs the admin scope' });
  if (path === '/v1/cluster/state' && s.clusterNodes) return json(res, 200, { nodes: s.clusterNodes, ring_version: 7 });
  if (path === '/v1/cluster/state') return json(res, 501, { code: 501, error: 'Not Implemented', message: 'no cluster' });
  json(res, 404, { code: 404, error: 'Not Found', message: `no route for ${path}` });
}

export async function startMockMetrics(initial: Partial<MockState> = {}): Promise<MockMetrics> {
  const state: MockState = {
    nodeId: 'mock-node',
    token: null,
    failing: false,
    operations: { put: 0, get: 0, delete: 0, stat: 0, list: 0 },
    failures: { put: 0, get: 0, delete: 0, stat: 0, list: 0 },
    bytesReadTotal: 0,
    bytesWrittenTotal: 0,
    peerHealth: {},
    clusterNodes: null,
    clusterInDetail: null,
    authSeen: [],
    ...initial,
  };
  const server = createServer((req, res) => route(state, req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    state,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
