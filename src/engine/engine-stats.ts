/**
 * The engine's storage figures (Engine.stats): the file system's, and what the index accounts
 * for as committed (segment space is accounted at the index commit, so the caller waits for the
 * records acknowledged so far first).
 */
import { promises as fsp } from 'node:fs';
import type { BlobIndex } from '../index/blob-index.js';
import type { StorageStats } from '../metrics/storage-stats.js';

/** The figures the storage gauges report (src/metrics/storage-stats.ts owns their shape). */
export type EngineStats = StorageStats;

export async function statsOf(dataPath: string, index: Pick<BlobIndex, 'segments' | 'counters'>, corruptionsDetected: number): Promise<EngineStats> {
  const fs = await fsp.statfs(dataPath);
  let segmentBytes = 0;
  for (const s of index.segments.values()) segmentBytes += s.totalBytes;
  return {
    capacityBytes: fs.blocks * fs.bsize,
    freeBytes: fs.bavail * fs.bsize,
    usedBytes: segmentBytes + fileBytes(index),
    storedBytes: index.counters.storedBytes,
    blobCount: index.counters.blobCount,
    shardCount: index.counters.shardCount,
    corruptionsDetected,
  };
}

/** Bytes in own-file blobs and columns: stored bytes minus those held inline in segments. */
function fileBytes(index: Pick<BlobIndex, 'segments' | 'counters'>): number {
  let inline = 0;
  for (const s of index.segments.values()) inline += s.liveBytes;
  return Math.max(0, index.counters.storedBytes + index.counters.shardBytes - inline);
}
