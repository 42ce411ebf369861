/**
 * What the storage gauges report and where they read it: the shape the engine fills (its stats at
 * scrape time), defined here so that metrics sit below the engine that records into them.
 */
export interface StorageStats {
  capacityBytes: number;
  freeBytes: number;
  usedBytes: number;
  storedBytes: number;
  blobCount: number;
  /** Shards of erasure-coded blobs held (a column holds one per stripe). */
  shardCount: number;
  corruptionsDetected: number;
}

/** The storage behind the gauges and the backend check (the engine). */
export interface StatsSource {
  /** Set once the storage has failed (the backend check reports it). */
  readonly failure: Error | undefined;
  stats(): Promise<StorageStats>;
  /** The worker pool's figures, when the storage has one. */
  readonly workerPool?: { stats(): PoolStats } | undefined;
}

export interface PoolStats {
  threads: number;
  queueDepth: number;
  /** 0..1: the share of the pool's thread time spent running tasks. */
  utilisation: number;
}
