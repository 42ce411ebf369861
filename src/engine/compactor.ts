/**
 * Background compaction. A sealed segment whose live bytes fall under the ratio has its live
 * records copied to the head of the log (as relocations, which apply only while the index still
 * points at the original, so a delete racing the copy wins); once the index no longer points into
 * the segment, its file is removed. A crash at any step leaves either the original or the copy
 * current, never neither.
 *
 * On a full disk the head segment may be all that is left to reclaim (a small disk holds one
 * segment): when the disk is full and the head is mostly dead, it is sealed first. Deletes on a
 * full disk ask for a run soon instead of at the next interval. Relocations may use the disk's
 * reserve, but a segment whose live bytes would not fit in the free space is left for later.
 */
import type { BlobMeta } from '../blob/meta.js';
import type { BlobstoreError } from '../errors/errors.js';
import { crc32c } from '../hash/crc32c.js';
import type { BlobIndex } from '../index/blob-index.js';
import { type IndexEntry, Location } from '../index/entry.js';
import type { Logger } from '../log/logger.js';
import type { DiskSpace } from './disk-space.js';
import { inlineIntact } from './inline-reader.js';
import type { AppendRecord, LogRecord } from './log-record.js';
import { isInlineRecord, isShardRecord, RecordType } from './record.js';
import { shardIndexOf, shardKey } from './shard-info.js';
import { type ScannedRecord, scanSegment } from './scan.js';
import type { SegmentReader } from './segment-reader.js';
import type { SegmentStore } from './segment-store.js';

/** How long a run asked for by soon() waits, so that a burst of deletes makes one run. */
const SOON_DELAY_MS = 50;

/** What compaction needs of the engine. */
export interface CompactionHost {
  readonly index: Pick<BlobIndex, 'segments' | 'committedCheckpoint' | 'get' | 'getShard' | 'dropSegment'>;
  readonly store: Pick<SegmentStore, 'list' | 'open' | 'remove'>;
  readonly space: Pick<DiskSpace, 'full' | 'freeBytes' | 'restoreBallast'>;
  readonly reader: Pick<SegmentReader, 'release'>;
  readonly log: Logger;
  readonly activeSegment: number;
  sealActiveSegment(): Promise<void>;
  /** Resolves once every record acknowledged so far is committed to the index and flushed. */
  settled(): Promise<void>;
  appendRecord: AppendRecord;
  /** A corrupt copy was found: counted, and the error a reader would get. */
  corruption(meta: BlobMeta): BlobstoreError;
}

export interface CompactionOptions {
  /** Segments whose live bytes fall under this fraction are compacted. */
  liveRatio: number;
  intervalMs: number;
  /** Bytes relocated between two log syncs (setting compactionWindowBytes). */
  windowBytes: number;
  /** The scan's buffer (it holds the largest record). */
  scanBufferBytes: number;
}

export class Compactor {
  private readonly timer: NodeJS.Timeout;
  private running: Promise<number> | undefined;
  private soonTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  private readonly liveRatio: number;
  private readonly windowBytes: number;

  constructor(
    private readonly engine: CompactionHost,
    private readonly options: CompactionOptions,
  ) {
    this.liveRatio = options.liveRatio;
    this.windowBytes = options.windowBytes;
    this.timer = setInterval(() => void this.runOnce().catch((err: Error) => this.failed(err)), options.intervalMs);
    this.timer.unref();
  }

  private failed(err: Error): void {
    this.engine.log.error({ err }, `compaction: ${err.message}`);
  }

  /** Asks for a run shortly (deletes on a full disk), one for a burst of calls. */
  soon(): void {
    if (this.soonTimer || this.stopped) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = undefined;
      void this.runOnce().catch((err: Error) => this.failed(err));
    }, SOON_DELAY_MS);
    this.soonTimer.unref();
  }

  /** Compacts every eligible segment; resolves with the number of segment files removed. */
  runOnce(): Promise<number> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<number> {
    const { index, store, space } = this.engine;
    const head = index.segments.get(this.engine.activeSegment);
    if (space.full() && head && head.totalBytes > 0 && this.deadEnough(this.engine.activeSegment)) await this.engine.sealActiveSegment();
    // Only sealed segments wholly before the committed checkpoint: recovery replays from it, and
    // a record staged (acknowledged) but not committed may live in any segment from it on.
    const limit = Math.min(this.engine.activeSegment, index.committedCheckpoint.segment);
    let removed = 0;
    for (const id of await store.list()) {
      if (this.stopped || id >= limit) break;
      if (!this.deadEnough(id)) continue;
      const liveBytes = index.segments.get(id)?.liveBytes ?? 0;
      if (liveBytes > 0 && liveBytes + this.windowBytes > space.freeBytes()) continue;
      if (liveBytes > 0) await this.relocateLive(id);
      if (this.stopped) break;
      // The relocations (acknowledged once fsynced in the log) must be committed to the index and
      // flushed before the originals go: recovery replays from the flushed checkpoint on.
      await this.engine.settled();
      if ((index.segments.get(id)?.liveBytes ?? 0) > 0) {
        this.engine.log.warn({ segment: id }, `compaction: segment ${id} still holds live records; kept`);
        continue;
      }
      await this.engine.reader.release(id);
      await store.remove(id);
      await index.dropSegment(id);
      removed++;
    }
    await space.restoreBallast();
    return removed;
  }

  /** The segment's live bytes are under the ratio (or nothing was ever appended to it). */
  private deadEnough(segment: number): boolean {
    const s = this.engine.index.segments.get(segment);
    return !s || s.totalBytes === 0 || s.liveBytes / s.totalBytes < this.liveRatio;
  }

  private async relocateLive(segment: number): Promise<void> {
    const { index, store } = this.engine;
    const open = await store.open(segment);
    const pending: Promise<unknown>[] = [];
    let pendingBytes = 0;
    try {
      await scanSegment(open.handle, open.sizeBytes, 0, { firstLsn: 1, exact: false, verifyData: false, bufferBytes: this.options.scanBufferBytes },
        async (rec) => {
          if (!isInlineRecord(rec.header.type) || this.stopped) return;
          const entry = isShardRecord(rec.header.type) ? index.getShard(shardKey(rec.header.id, shardIndexOf(rec.labels))) : index.get(rec.header.id);
          if (entry?.location !== Location.SEGMENT || entry.segment !== segment || entry.offset !== rec.offset) return;
          const moved = this.relocate(rec, segment, entry);
          if (moved === undefined) return;
          pending.push(moved);
          pendingBytes += rec.length;
          if (pendingBytes >= this.windowBytes) {
            await Promise.all(pending.splice(0));
            pendingBytes = 0;
          }
        });
      await Promise.all(pending);
    } finally {
      await open.handle.close();
    }
  }

  /**
   * Relocates a live record; it applies only if the index still points at the source (`entry`).
   * The scan does not check the bytes: a whole blob's are checked here, against its entry's
   * CRC-32C (or BLAKE3 where it has none), so that a corrupt copy is never moved under a new
   * check; one that fails stays where it is (counted; the segment is kept), undefined.
   */
  private relocate(rec: ScannedRecord, segment: number, entry: IndexEntry): Promise<LogRecord> | undefined {
    const h = rec.header;
    let dataCrc: number | undefined;
    if (h.type === RecordType.PUT_INLINE) {
      if (!inlineIntact(rec.data!, entry.dataCrc, entry.checksum)) {
        this.engine.corruption({ ...entry, id: h.id });
        return undefined;
      }
      dataCrc = entry.dataCrc ?? crc32c(rec.data!);
    }
    return this.engine.appendRecord({
      // The log copies the bytes into the record's place before append returns: the scan's buffer is not kept.
      ...h, labels: rec.labels, data: rec.data, relocatedFromSegment: segment, relocatedFromOffset: rec.offset,
    }, false, false, dataCrc);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.soonTimer);
    await this.running?.catch(() => undefined);
  }
}
