/**
 * The files that own-file records (PUT_FILE, SHARD_FILE) name, as recovery and the log's commits
 * need them: whether a recorded file made it to disk whole, and unlinking the files of deleted
 * blobs and columns before the index commit that forgets them (so no crash can orphan a file).
 */
import { promises as fsp } from 'node:fs';
import type { BlobIndex } from '../index/blob-index.js';
import { Location } from '../index/entry.js';
import { blobFilePath } from './blob-file.js';
import { isDeleteRecord, isFileRecord, isShardRecord } from './record.js';
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

/**
 * Before a replay's index commit: the file of each replayed delete goes, so no crash can orphan
 * it, unless a later replayed record stores the same key again. A key is a file when the index
 * says so or when a file record of the replay stored it before the delete (its store and delete
 * both past the checkpoint: the index has never seen it).
 */
export async function unlinkReplayedDeletes(dataDir: string, index: BlobIndex, replayed: readonly Named[]): Promise<void> {
  const lastFilePut = new Map<string, number>();
  replayed.forEach((r, i) => isFileRecord(r.type) && lastFilePut.set(fileKeyOf(r), i));
  const storedAsFile = new Set<string>();
  for (const [i, r] of replayed.entries()) {
    const key = fileKeyOf(r);
    if (isFileRecord(r.type)) storedAsFile.add(key);
    if (!isDeleteRecord(r.type) || (lastFilePut.get(key) ?? -1) > i) continue;
    const entry = isShardRecord(r.type) ? index.getShard(shardKey(r.id, shardIndexOf(r.labels))) : index.get(r.id);
    if (entry?.location === Location.FILE || storedAsFile.has(key)) await fsp.rm(filePathOf(dataDir, r), { force: true });
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
