/**
 * The storage backend check behind /health and the backend_healthy / node_up gauges: the data
 * dir's capacity (statfs, as the spec says: "the check reads the backend capacity") and a probe
 * that the dir still takes writes (write, fdatasync and unlink a small file under tmp/, which
 * start-up clears should a crash leave it). Checks that overlap share one run; a check that takes
 * longer than the timeout fails.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { writeAll } from '../util/write-all.js';
import type { Logger } from '../log/logger.js';

export interface BackendCapacity {
  capacityBytes: number;
  freeBytes: number;
}

export interface BackendStatus {
  healthy: boolean;
  /** Why not, for the log; '' when healthy. */
  reason: string;
  capacity: BackendCapacity | undefined;
}

const PROBE_BYTES = Buffer.from('blobstore health probe\n');

export class BackendCheck {
  private running: Promise<BackendStatus> | undefined;
  /** The last finished check (healthy until the first one ends). */
  last: BackendStatus = { healthy: true, reason: '', capacity: undefined };

  constructor(
    private readonly dataDir: string,
    private readonly timeoutMs: number,
    /** A failure the engine already knows of (a failed log write): unhealthy without probing. */
    private readonly engineFailure: () => Error | undefined,
    private readonly log: Logger,
  ) {}

  /** When the last check finished (performance.now()). */
  private lastAtMs = -Infinity;

  /**
   * Runs a check (or joins the one running) and resolves with its outcome; never rejects. With
   * `maxAgeMs`, a check that finished less than that long ago answers instead (scrapes: the probe
   * writes and fsyncs a file, which a scrape every second should not add to the disk's queue).
   */
  check(maxAgeMs = 0): Promise<BackendStatus> {
    if (maxAgeMs > 0 && this.running === undefined && performance.now() - this.lastAtMs < maxAgeMs) return Promise.resolve(this.last);
    this.running ??= this.run().then((status) => {
      this.running = undefined;
      this.lastAtMs = performance.now();
      if (status.healthy !== this.last.healthy) {
        if (status.healthy) this.log.info({ backendHealthy: true }, 'storage backend healthy again');
        else this.log.error({ backendHealthy: false, reason: status.reason }, `storage backend unhealthy: ${status.reason}`);
      }
      this.last = status;
      return status;
    });
    return this.running;
  }

  private async run(): Promise<BackendStatus> {
    const failure = this.engineFailure();
    if (failure) return { healthy: false, reason: `engine: ${failure.message}`, capacity: undefined };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      const capacity = await Promise.race([this.probe(), timeout]);
      return { healthy: true, reason: '', capacity };
    } catch (err) {
      return { healthy: false, reason: (err as Error).message, capacity: undefined };
    } finally {
      clearTimeout(timer);
    }
  }

  private async probe(): Promise<BackendCapacity> {
    const fs = await fsp.statfs(this.dataDir);
    const path = join(this.dataDir, 'tmp', `health-probe-${process.pid}`);
    const handle = await fsp.open(path, 'w', 0o600);
    try {
      await writeAll(handle, PROBE_BYTES, 0);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await fsp.unlink(path);
    return { capacityBytes: fs.blocks * fs.bsize, freeBytes: fs.bavail * fs.bsize };
  }
}
