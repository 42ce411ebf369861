/**
 * The files that own-file records (PUT_FILE, SHARD_FILE) name, as recovery and the log's commits
 * need them: whether a recorded file made it to disk whole, and unlinking the files of deleted
 * blobs and columns before the index commit that forgets them (so no crash can orphan a file).
 */
import { promises as fsp } from 'node:fs';
import type { BlobIndex } from '../index/blob-index.js';
import { Location } from '../index/entry.js';
import { blobFilePath } from './blob-file.js';
import { isDeleteRecord, isShardRecord } from './record.js';
import type { ScannedRecord } from './scan.js';
import { shardFilePath, shardIndexOf, shardKey } from './shard-info.js';

interface Named {
  type: number;
  id: Buffer;
  labels: Buffer;
}

/** The index key a file record names (the blob, or the blob and column), for the replay's bookkeeping. */
export function fileKeyOf(r: Named): string {
  return isShardRecord(r.type) ? `${r.id.toString('hex')}.${shardIndexOf(r.labels)}` : r.id.toString('hex');
}

function filePathOf(dataDir: string, r: Named): string {
  const hex = r.id.toString('hex');
  return isShardRecord(r.type) ? shardFilePath(dataDir, hex, shardIndexOf(r.labels)) : blobFilePath(dataDir, hex);
}

export async function fileIntact(dataDir: string, record: ScannedRecord): Promise<boolean> {
  try {
    const st = await fsp.stat(filePathOf(dataDir, { type: record.header.type, id: record.header.id, labels: record.labels }));
    return st.size >= record.header.size;
  } catch {
    return false;
  }
}

/** A deleted own-file blob's (or column's) file goes before the index commit, so no crash can orphan it. */
export async function unlinkDeletedFiles(dataDir: string, index: BlobIndex, records: readonly Named[]): Promise<void> {
  for (const r of records) {
    if (!isDeleteRecord(r.type)) continue;
    const entry = isShardRecord(r.type) ? index.getShard(shardKey(r.id, shardIndexOf(r.labels))) : index.get(r.id);
    if (entry?.location === Location.FILE) await fsp.rm(filePathOf(dataDir, r), { force: true });
  }
}

/**
 * The file a tombstone's blob (or column) has, if it has one: its path and a promise of its
 * removal. Looks the index up on the call, so call it before the tombstone is staged; the log
 * waits for the removal before it acknowledges the tombstone (a store of the same id after the
 * delete must not see its new file go) and before the index commit that forgets the entry.
 */
export function unlinkFileOf(dataDir: string, index: BlobIndex, r: Named): Promise<void> | undefined {
  if (!isDeleteRecord(r.type)) return undefined;
  const entry = isShardRecord(r.type) ? index.getShard(shardKey(r.id, shardIndexOf(r.labels))) : index.get(r.id);
  if (entry?.location !== Location.FILE) return undefined;
  return fsp.rm(filePathOf(dataDir, r), { force: true });
}
