/**
 * Start-up recovery of the log. The index checkpoint names the log position every earlier record
 * is applied up to; only records after it are read (so start-up does not grow with the number of
 * blobs). Whole records there are replayed into the index; the first torn or unwritten bytes end
 * the log, and the span a crash could have left half-written after that point is zeroed.
 */
import type { FileHandle } from 'node:fs/promises';
import { BlobstoreError } from '../errors/errors.js';
import { crc32c } from '../hash/crc32c.js';
import type { BlobIndex } from '../index/blob-index.js';
import { applyRecord } from './apply.js';
import { punchHole, writeAll } from './fs-util.js';
import { isFileRecord, RecordType } from './record.js';
import { unlinkReplayedDeletes } from './record-files.js';
import { type ScannedRecord, scanSegment } from './scan.js';
import type { OpenSegment, SegmentStore } from './segment-store.js';

export interface RecoveredLog {
  active: OpenSegment;
  offset: number;
  nextLsn: number;
  /** Whole records found after the checkpoint, in log order, to apply to the index. */
  replay: ReplayRecord[];
  /** Segment files past the end of the log (never written), removed. */
  removedSegments: number[];
}

export interface ReplayRecord extends ScannedRecord {
  segment: number;
}

export interface RecoveryOptions {
  scanBufferBytes: number;
  /** Bytes past the end of the log that in-flight batches could have reached. */
  tornSpanBytes: number;
  /** Whether a PUT_FILE (SHARD_FILE) record's file made it to disk whole. */
  fileIntact(record: ScannedRecord): Promise<boolean>;
}

/**
 * Clears the log past its end: a hole punched to the end of the segment, or where the file system
 * cannot punch holes, zeros written over the span in-flight batches could have reached. Stale
 * bytes there could never parse anyway (sequence numbers), so a disk too full for the zeros only
 * skips them.
 */
async function clearTail(handle: FileHandle, from: number, tornEnd: number, sizeBytes: number): Promise<void> {
  if (!(await punchHole(handle, from, sizeBytes - from))) {
    const zeros = Buffer.alloc(Math.min(4 * 1024 * 1024, Math.max(0, tornEnd - from)));
    try {
      for (let at = from; at < tornEnd; at += zeros.length) await writeAll(handle, zeros.subarray(0, Math.min(zeros.length, tornEnd - at)), at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    }
  }
  await handle.datasync();
}

export async function recoverLog(store: SegmentStore, index: BlobIndex, options: RecoveryOptions): Promise<RecoveredLog> {
  const { checkpoint } = index;
  const present = (await store.list()).filter((id) => id >= checkpoint.segment);
  if (!present.includes(checkpoint.segment)) {
    if (present.length > 0 || checkpoint.offset > 0) {
      throw new BlobstoreError('corruption', `log segment ${checkpoint.segment} named by the index checkpoint is missing`);
    }
    const active = await store.create(checkpoint.segment);
    return { active, offset: 0, nextLsn: checkpoint.nextLsn, replay: [], removedSegments: [] };
  }
  const replay: ReplayRecord[] = [];
  let active: OpenSegment | undefined;
  let offset = checkpoint.offset;
  let nextLsn = checkpoint.nextLsn;
  const removedSegments: number[] = [];
  for (const id of present) {
    const segment = await store.open(id);
    const first = id === checkpoint.segment;
    const start = first ? checkpoint.offset : 0;
    const end = await scanSegment(
      segment.handle,
      segment.sizeBytes,
      start,
      { firstLsn: nextLsn, exact: first, verifyData: true, bufferBytes: options.scanBufferBytes },
      async (record) => {
        if (isFileRecord(record.header.type) && !(await options.fileIntact(record))) return;
        replay.push({ ...record, segment: id, data: record.data && Buffer.from(record.data) });
      },
    );
    if (!first && end.lastLsn === 0) {
      // Created by a roll-over, never written: the log ends in the previous segment.
      await segment.handle.close();
      await store.remove(id);
      removedSegments.push(id);
      continue;
    }
    await active?.handle.close();
    active = segment;
    offset = end.endOffset;
    if (end.lastLsn > 0) nextLsn = end.lastLsn + 1;
  }
  await clearTail(active!.handle, offset, Math.min(active!.sizeBytes, offset + options.tornSpanBytes), active!.sizeBytes);
  return { active: active!, offset, nextLsn, replay, removedSegments };
}

/**
 * Applies the records found past the checkpoint to the index in one transaction (deleted blobs'
 * files unlinked first, so no crash orphans them), and waits for it to be flushed. The new
 * checkpoint is the log's end as recovery found it, where the next record goes and with the
 * sequence number it will carry: past the PAD that ends the last batch. A checkpoint at the end of
 * the last replayed record (before that PAD) named a sequence number the record there does not
 * carry, so the next recovery took the log to end at it and cut away every record written since.
 */
export async function applyReplay(dataPath: string, index: BlobIndex, recovered: RecoveredLog): Promise<void> {
  if (recovered.replay.length === 0) return;
  const replayed = recovered.replay.map((s) => ({
    ...s.header, labels: s.labels, segment: s.segment, offset: s.offset, length: s.length,
    dataCrc: s.header.type === RecordType.PUT_INLINE && s.data !== undefined ? crc32c(s.data) : undefined,
  }));
  await unlinkReplayedDeletes(dataPath, index, replayed);
  await index.commit(
    { segment: recovered.active.id, offset: recovered.offset, nextLsn: recovered.nextLsn },
    (w) => replayed.forEach((r) => applyRecord(w, r)),
  );
  await index.flushed();
}
