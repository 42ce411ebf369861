/**
 * Repair after a node is lost for good (issue: the cluster as users start it), against the disk's
 * own write bandwidth measured in the same run:
 *
 *   disk_write       MB/s of 1 MiB writes to one file, fdatasync every 64 MiB (the nodes'
 *                    disk, in the bench's data dir)
 *   replica3_loss    4 nodes, REPLICA3 blobs; one node SIGKILLed, its data dir deleted, then an
 *                    immediate leave: seconds until every blob has 3 copies again, and the copy
 *                    rate, against the target 10 s + bytes to copy / (50% of disk_write)
 *
 * BENCH_REPAIR_BLOBS (800) blobs of BENCH_REPAIR_BLOB_BYTES (1 MiB). The repair interval is set to
 * an hour, so only the repair the leave starts can meet the target.
 */
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { KiB, MiB, emit, envInt, log, removeDir, round, runNonce, tempDir } from '../node/lib.js';
import { type BenchCluster, startCluster } from './lib.js';

const BENCH = 'cluster-repair';
const BLOBS = envInt('BENCH_REPAIR_BLOBS', 800);
const BLOB_BYTES = envInt('BENCH_REPAIR_BLOB_BYTES', MiB);

/** MB/s of `bytes` written in 1 MiB pieces, synced every 64 MiB. */
function diskWriteMBps(dir: string, bytes: number): number {
  const path = join(dir, 'disk-probe');
  const chunk = Buffer.alloc(MiB, 0x5a);
  const fd = openSync(path, 'w');
  const t0 = performance.now();
  try {
    // Synced every 64 MiB: the device's sustained rate, not the page cache's.
    for (let done = 0; done < bytes; done += chunk.length) {
      writeSync(fd, chunk);
      if ((done + chunk.length) % (64 * MiB) === 0) fdatasyncSync(fd);
    }
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const seconds = (performance.now() - t0) / 1000;
  rmSync(path);
  return bytes / 1e6 / seconds;
}

/** Blobs held by node `i` (its blob count as its metrics give it). */
async function blobCount(c: BenchCluster, i: number): Promise<number> {
  const text = await (await fetch(`${c.url(i)}/metrics`)).text();
  return Number(/^blobstore_blob_count\{[^}]*\} (\d+)/m.exec(text)?.[1] ?? NaN);
}

async function store(c: BenchCluster, nonce: string): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < BLOBS) {
      const i = next++;
      const body = Buffer.alloc(BLOB_BYTES, i % 251);
      body.write(`${nonce}:${String(i).padStart(8, '0')}:`);
      const res = await fetch(`${c.url(i % 3)}/v1/blobs`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'x-blobstore-policy': '3' }, body });
      if (res.status !== 201) throw new Error(`store ${i}: ${res.status} ${await res.text()}`);
    }
  }));
}

async function main(): Promise<void> {
  const dir = tempDir(BENCH);
  const c = await startCluster(4, dir, ['--metrics-addr', 'same', '--repair-interval-ms', '3600000', '--replication-acks', '2']);
  try {
    const disk = diskWriteMBps(dir, 1024 * MiB);
    log(`${BENCH}: the disk writes ${disk.toFixed(0)} MB/s (1 MiB writes, synced every 64 MiB)`);
    emit({ bench: BENCH, metric: 'disk_write', value: round(disk, 1), unit: 'MB/s' });
    await store(c, runNonce());
    const lostBlobs = await blobCount(c, 3);
    log(`${BENCH}: ${BLOBS} blobs of ${BLOB_BYTES / KiB} KiB stored with 3 copies; node 4 holds ${lostBlobs}`);
    const t0 = performance.now();
    c.nodes[3]!.child.kill('SIGKILL');
    await new Promise((r) => c.nodes[3]!.child.once('exit', r));
    removeDir(c.dirs[3]!);
    const res = await fetch(`${c.url(0)}/v1/cluster/leave`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ node_id: 'node-4', graceful: false }) });
    if (res.status !== 200) throw new Error(`leave: ${res.status} ${await res.text()}`);
    for (;;) {
      const counts = await Promise.all([0, 1, 2].map((i) => blobCount(c, i)));
      if (counts.reduce((a, b) => a + b, 0) >= 3 * BLOBS) break;
      if (performance.now() - t0 > 600_000) throw new Error(`not repaired after 10 minutes: ${counts.join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - t0) / 1000;
    const bytes = lostBlobs * BLOB_BYTES;
    const target = 10 + bytes / 1e6 / (0.5 * disk);
    log(`${BENCH}: every blob has 3 copies ${seconds.toFixed(1)} s after the kill: ${(bytes / 1e6).toFixed(0)} MB copied at ${(bytes / 1e6 / seconds).toFixed(0)} MB/s end to end; target ${target.toFixed(1)} s`);
    emit({
      bench: BENCH, metric: 'replica3_loss_repair', value: round(seconds, 2), unit: 's', target_s: round(target, 2), met: seconds <= target,
      blobs: BLOBS, blob_bytes: BLOB_BYTES, copies_made: lostBlobs, bytes_copied: bytes, rate_mb_s: round(bytes / 1e6 / seconds, 1), disk_write_mb_s: round(disk, 1),
    });
  } finally {
    await c.stop();
    removeDir(dir);
  }
}

await main();
