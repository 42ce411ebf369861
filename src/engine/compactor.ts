/**
 * Background compaction. A sealed segment whose live bytes fall under the ratio has its live
 * records copied to the head of the log (as relocations, which apply only while the index still
 * points at the original, so a delete racing the copy wins); once the index no longer points into
 * the segment, its file is removed. A crash at any step leaves either the original or the copy
 * current, never neither.
 */
import { Location } from '../index/entry.js';
import type { Engine } from './engine.js';
import { RecordType } from './record.js';
import { scanSegment } from './scan.js';

/** Relocated bytes allowed in flight before compaction waits for their commit. */
const RELOCATE_WINDOW_BYTES = 8 * 1024 * 1024;

export class Compactor {
  private readonly timer: NodeJS.Timeout;
  private running: Promise<number> | undefined;
  private stopped = false;

  constructor(
    private readonly engine: Engine,
    private readonly liveRatio: number,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => void this.runOnce().catch((err: Error) => console.error(`blobstore: compaction: ${err.message}`)), intervalMs);
    this.timer.unref();
  }

  /** Compacts every eligible segment; resolves with the number of segment files removed. */
  runOnce(): Promise<number> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<number> {
    const { index, store } = this.engine;
    // Only sealed segments wholly before the checkpoint: recovery may still need the rest.
    const limit = Math.min(this.engine.activeSegment, index.checkpoint.segment);
    let removed = 0;
    for (const id of await store.list()) {
      if (this.stopped || id >= limit) break;
      const space = index.segments.get(id) ?? { totalBytes: 0, liveBytes: 0 };
      if (space.totalBytes > 0 && space.liveBytes / space.totalBytes >= this.liveRatio) continue;
      if (space.liveBytes > 0) await this.relocateLive(id);
      if (this.stopped) break;
      if ((index.segments.get(id)?.liveBytes ?? 0) > 0) {
        console.error(`blobstore: compaction: segment ${id} still holds live records; kept`);
        continue;
      }
      // The relocations must be durable in the index before the originals go.
      await index.flushed();
      await this.engine.reader.release(id);
      await store.remove(id);
      await index.dropSegment(id);
      removed++;
    }
    return removed;
  }

  private async relocateLive(segment: number): Promise<void> {
    const { index, store } = this.engine;
    const open = await store.open(segment);
    const pending: Promise<unknown>[] = [];
    let pendingBytes = 0;
    try {
      await scanSegment(open.handle, open.sizeBytes, 0, { firstLsn: 1, exact: false, verifyData: false, bufferBytes: 8 * 1024 * 1024 },
        async (rec) => {
          if (rec.header.type !== RecordType.PUT_INLINE || this.stopped) return;
          const entry = index.get(rec.header.id);
          if (entry?.location !== Location.SEGMENT || entry.segment !== segment || entry.offset !== rec.offset) return;
          pending.push(this.engine.relocate(rec, segment));
          pendingBytes += rec.length;
          if (pendingBytes >= RELOCATE_WINDOW_BYTES) {
            await Promise.all(pending.splice(0));
            pendingBytes = 0;
          }
        });
      await Promise.all(pending);
    } finally {
      await open.handle.close();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }
}
