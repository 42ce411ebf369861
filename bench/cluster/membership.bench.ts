/**
 * Membership and background figures (issue: the cluster):
 *
 *   converge_10      a 5-node cluster, then 5 nodes started at once, each seeded with a different
 *                    member: time from the last of them up until all 10 agree (ms and heartbeat
 *                    intervals; HeartbeatInterval 1 s here)
 *   leave_migration  graceful leave of one of 4 nodes holding ~1 GiB of copies, repair uncapped:
 *                    MB/s handed over, from the leave to the node's disappearance
 *   antientropy_scan digest-tree build over 1M blobs in one index (ids/s), a 3-node ring
 */
import { join } from 'node:path';
import { AntiEntropy } from '../../src/cluster/anti-entropy.js';
import type { ClusterNode } from '../../src/cluster/cluster-node.js';
import type { PeerTransport } from '../../src/cluster/transport/peer-transport.js';
import { Ring } from '../../src/cluster/ring.js';
import type { BlobSender } from '../../src/cluster/transfer.js';
import { TokenBucket } from '../../src/cluster/token-bucket.js';
import { silentLogger } from '../../src/log/logger.js';
import { bulkLoad, openEngine } from '../node/bulk.js';
import { MiB, emit, freePort, log, removeDir, round, runNonce, tempDir } from '../node/lib.js';
import { clusterState, startCluster, startClusterNode, waitAgreed } from './lib.js';

const BENCH = 'cluster-membership';
const INTERVAL_MS = 1000;

async function converge(dir: string): Promise<void> {
  const flags = ['--heartbeat-interval-ms', String(INTERVAL_MS)];
  const c = await startCluster(5, join(dir, 'conv'), flags);
  const newPorts: number[] = [];
  try {
    for (let i = 0; i < 5; i++) newPorts.push(await freePort());
    const joining = await Promise.all(newPorts.map((port, i) => startClusterNode(join(dir, 'conv', `j${i}`), `node-${6 + i}`, port, c.ports, flags)));
    c.nodes.push(...joining);
    const upAt = performance.now();
    await waitAgreed([...c.ports, ...newPorts], 10, 30_000, 10);
    const ms = performance.now() - upAt;
    log(`${BENCH}: 10 nodes agree ${ms.toFixed(0)} ms (${(ms / INTERVAL_MS).toFixed(2)} heartbeat intervals) after 5 simultaneous joins`);
    emit({ bench: BENCH, metric: 'converge_after_5_joins_ms', value: round(ms, 0), unit: 'ms', heartbeat_interval_ms: INTERVAL_MS });
    emit({ bench: BENCH, metric: 'converge_after_5_joins_intervals', value: round(ms / INTERVAL_MS, 2), unit: 'intervals', target: '<= 3', pass: ms / INTERVAL_MS <= 3 });
  } finally {
    await c.stop();
  }
}

async function leaveMigration(dir: string): Promise<void> {
  const c = await startCluster(4, join(dir, 'leave'), ['--repair-bytes-per-second', '0', '--handoff-interval-ms', '2000']);
  try {
    const body = Buffer.alloc(MiB, 3);
    const nonce = runNonce();
    for (let i = 0; i < 1024; i++) {
      body.write(`${nonce}:${i}:`, 0);
      await fetch(`${c.url(i % 3)}/v1/blobs`, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '2' } });
    }
    // Let the queue settle: node 4's share of the copies is on it.
    await new Promise((r) => setTimeout(r, 5000));
    const held = ((await (await fetch(`${c.url(3)}/v1/blobs?limit=10000`)).json()) as { ids: string[] }).ids.length;
    const t0 = performance.now();
    await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', body: '{"node_id":"node-4","graceful":true}', headers: { 'content-type': 'application/json' } });
    for (;;) {
      const state = await clusterState(c.ports[0]!);
      if (!state.nodes.some((n) => n.node_id === 'node-4')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - t0) / 1000;
    const mbps = (held * MiB) / 1e6 / seconds;
    log(`${BENCH}: graceful leave handed ${held} MiB over in ${seconds.toFixed(2)} s: ${mbps.toFixed(0)} MB/s`);
    emit({ bench: BENCH, metric: 'leave_migration_mb_per_s', value: round(mbps, 1), unit: 'MB/s', blobs: held, blob_bytes: MiB, seconds: round(seconds, 2) });
  } finally {
    await c.stop();
  }
}

async function antiEntropyScan(dir: string): Promise<void> {
  const count = Number(process.env.BENCH_AE_BLOBS ?? 1_000_000);
  const dataDir = join(dir, 'ae');
  const loaded = await bulkLoad({ dataDir, count, sizeBytes: 100, nonce: runNonce() });
  log(`${BENCH}: loaded ${loaded.stored} blobs in ${loaded.seconds.toFixed(0)} s`);
  const engine = await openEngine(dataDir);
  try {
    const ring = new Ring(['node-1', 'node-2', 'node-3'].map((nodeId) => ({ nodeId, region: '' })), 128);
    const node = { ring, nodeId: 'node-1', membership: { ringVersion: 1 }, online: () => true, member: () => undefined } as unknown as ClusterNode;
    const ae = new AntiEntropy(engine, node, {} as PeerTransport, {} as BlobSender, silentLogger(), { intervalMs: 60_000, bucket: new TokenBucket(0), treeMaxAgeMs: 60_000, retryMs: 1000, batchBytes: 4 << 20 });
    const runs: number[] = [];
    for (let i = 0; i < 3; i++) {
      await ae.buildTrees();
      runs.push(ae.stats.idsScanned / (ae.stats.scanMs / 1000));
    }
    runs.sort((a, b) => a - b);
    log(`${BENCH}: anti-entropy digest trees over ${count} ids: ${runs[1]!.toFixed(0)} ids/s (${(count / runs[1]!).toFixed(2)} s a round)`);
    emit({ bench: BENCH, metric: 'antientropy_scan_ids_per_s', value: round(runs[1]!, 0), unit: 'ids/s', blobs: count, runs: runs.map((r) => round(r, 0)) });
  } finally {
    await engine.close();
  }
}

const dir = tempDir('cluster-membership');
try {
  const only = process.env.BENCH_CLUSTER_ONLY ?? 'converge,leave,scan';
  if (only.includes('converge')) await converge(dir);
  if (only.includes('leave')) await leaveMigration(dir);
  if (only.includes('scan')) await antiEntropyScan(dir);
} finally {
  removeDir(dir);
}
