/**
 * The scrubber: re-reads every blob and shard column held here, at most scrubBytesPerSecond, and
 * checks every byte: each 1 MiB chunk against its digest (the engine's read does) and the whole
 * against the blob's (or column's) BLAKE3 checksum. A corrupt copy is counted
 * (errors_total{type="corruption"}) and repaired: a whole blob from an owner's copy, a column
 * rebuilt from the blob's other columns.
 *
 *   every scrubIntervalMs: blobs by id, then columns by id ──▶ read + hash (rate-capped)
 *     ──▶ corrupt: repair (cluster.ts) ──▶ next
 */
import { BackgroundLoop } from '../util/background-loop.js';
import { BlobstoreError } from '../errors/errors.js';
import type { BlobMeta } from '../blob/meta.js';
import type { ShardMeta } from '../blob/shard.js';
import { createHasher } from '../hash/blake3.js';
import type { Logger } from '../log/logger.js';
import type { LocalStore } from '../service/local-store.js';
import { TokenBucket } from './token-bucket.js';

export interface ScrubOptions {
  bytesPerSecond: number;
  intervalMs: number;
}

export interface ScrubProgress {
  /** A pass is under way. */
  active: boolean;
  passes: number;
  /** In the current (or last) pass. */
  itemsChecked: number;
  bytesChecked: number;
  corruptFound: number;
  startedAtMs: number;
}

/** What the scrubber does with a corrupt copy. */
export interface ScrubRepair {
  corruptBlob(meta: BlobMeta): void;
  corruptColumn(meta: ShardMeta): void;
}

const PAGE = 256;

export class Scrubber {
  readonly progress: ScrubProgress = { active: false, passes: 0, itemsChecked: 0, bytesChecked: 0, corruptFound: 0, startedAtMs: 0 };
  private readonly bucket: TokenBucket;
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly store: LocalStore,
    private readonly repair: ScrubRepair,
    private readonly log: Logger,
    private readonly options: ScrubOptions,
  ) {
    this.bucket = new TokenBucket(options.bytesPerSecond);
    // A pass that outlasts scrubIntervalMs is followed by the next tick, not at once: the cap
    // stays a share of the disk.
    this.loop = new BackgroundLoop({
      step: () => this.pass(), everyMs: options.intervalMs, tick: 'when-idle',
      onError: (err) => this.log.error({ err }, `scrub: ${err.message}`),
    });
  }

  start(): void {
    if (this.options.bytesPerSecond <= 0) return;
    this.loop.start();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /** Sets the rate cap (bytes per second; 0: none). */
  setRate(bytesPerSecond: number): void {
    this.bucket.setRate(bytesPerSecond);
  }

  private async pass(): Promise<void> {
    Object.assign(this.progress, { active: true, itemsChecked: 0, bytesChecked: 0, corruptFound: 0, startedAtMs: Date.now() });
    const start = performance.now();
    for (let after: Buffer | undefined; !this.stopped;) {
      const page: BlobMeta[] = [];
      this.store.scan(after, (id) => {
        if (after && id.equals(after)) return true;
        const meta = this.store.stat(Buffer.from(id));
        if (meta) page.push(meta);
        return page.length < PAGE;
      });
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      for (const meta of page) if (!(await this.check(meta)) && !this.stopped) this.repair.corruptBlob(meta);
    }
    for (let after: Buffer | undefined; !this.stopped;) {
      const page: ShardMeta[] = [];
      let last: Buffer | undefined;
      this.store.scanShards(after, (id) => {
        if (after && id.equals(after)) return true;
        if (last?.equals(id)) return true;
        last = Buffer.from(id);
        page.push(...this.store.shardsOf(last));
        return page.length < PAGE;
      });
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      for (const meta of page) if (!(await this.check(meta)) && !this.stopped) this.repair.corruptColumn(meta);
    }
    this.progress.active = false;
    this.progress.passes++;
    const p = this.progress;
    this.log.info({ items: p.itemsChecked, bytes: p.bytesChecked, corrupt: p.corruptFound, seconds: Math.round((performance.now() - start) / 100) / 10 }, 'scrub: pass done');
  }

  /** Reads and verifies one copy; false when it is corrupt (or its bytes are gone). */
  private async check(meta: BlobMeta): Promise<boolean> {
    const hasher = createHasher();
    try {
      await this.store.read(meta, async (chunk) => {
        await this.bucket.take(chunk.length);
        hasher.update(chunk);
        this.progress.bytesChecked += chunk.length;
      });
    } catch (err) {
      if (!(err instanceof BlobstoreError && err.kind === 'corruption')) {
        // Deleted while the scrub read it, or an I/O error that the next pass meets again.
        if (this.store.stat(meta.id) || this.store.shardsOf(meta.id).length > 0) this.log.warn({ blob: meta.id.toString('hex'), err: (err as Error).message }, 'scrub: read failed');
        return true;
      }
      this.progress.corruptFound++;
      return false;
    }
    this.progress.itemsChecked++;
    if (hasher.digest().equals(meta.checksum)) return true;
    this.progress.corruptFound++;
    this.log.error({ blob: meta.id.toString('hex') }, 'scrub: a copy whose chunks pass their digests fails its checksum');
    return false;
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
