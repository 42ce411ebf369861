/**
 * What the engine does as the log's records move on (LogHooks): staged into the index overlay
 * once fsynced (in log order, a deleted blob's file unlinked first), applied again in their
 * commit, a pooled small record given back once committed.
 */
import type { BlobIndex } from '../index/blob-index.js';
import type { IndexWriter } from '../index/overlay.js';
import { applyRecord } from './apply.js';
import type { LogHooks, LogRecord } from './log-record.js';
import { RecordType } from './record.js';
import { unlinkFileOf } from './record-files.js';
import { SmallRecord } from './small-record.js';
import type { VerifiedCache } from './verified-cache.js';

/** Stages a record in the index overlay (one function for every record: no closure per record). */
const stageRecord = (w: IndexWriter, r: LogRecord): void => {
  r.existed = applyRecord(w, r, r.absent ? false : undefined);
};

export function engineLogHooks(dataPath: string, index: BlobIndex, cache: Pick<VerifiedCache, 'invalidate'>, beforeBatch: () => void): LogHooks {
  return {
    // Once fsynced (in log order): into the overlay, where reads see it until its commit.
    stage: (r: LogRecord): Promise<void> | undefined => {
      // Before anyone can read the delete: the read cache finds records by id alone (getById).
      if (r.type === RecordType.DELETE) cache.invalidate(r.id);
      const unlink = unlinkFileOf(dataPath, index, r);
      index.stage(r.lsn, stageRecord, r);
      return unlink;
    },
    // Every record is staged before its commit (log.ts), so staging's answer holds here.
    apply: (r: LogRecord, w: IndexWriter): void => void applyRecord(w, r, r.existed),
    // A small store's record may be reused once its commit is in (and its store answered).
    committed: (r: LogRecord): void => {
      if (r instanceof SmallRecord) r.pool.commit(r);
    },
    // A put of a whole blob staged as new; one staged as a duplicate writes nothing.
    addsOnly: (r: LogRecord): boolean => (r.type === RecordType.PUT_INLINE || r.type === RecordType.PUT_FILE) && r.relocatedFromSegment === 0,
    // Small stores placed since the last turn are hashed together, then queued (or answered).
    beforeBatch,
  };
}
