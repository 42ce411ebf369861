/**
 * Blobs in files of their own: an upload is written to tmp/ (hashed as it goes, blob-file.ts),
 * then moved into place under its id's lock, its directory fsynced, and recorded in the log; a
 * copy of stored bytes is dropped instead.
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { idOfDigest } from '../blob/id.js';
import { LOCAL_STORE, type PutResult, type StoreOrigin } from '../blob/meta.js';
import type { Policy } from '../blob/policy.js';
import { BlobstoreError } from '../errors/errors.js';
import type { Recorder } from '../metrics/recorder.js';
import { blobFilePath, type ChunkCv, BlobFileWriter, type FileSink } from './blob-file.js';
import type { DiskSpace } from './disk-space.js';
import { fsyncDir, mkdirDurable } from './fs-util.js';
import type { AppendRecord } from './log-record.js';
import { RecordFlag, RecordType } from './record.js';
import { nowNs } from './wall-clock.js';

/** The record flags a store's origin asks for. */
export const flagsOf = (origin: StoreOrigin): number => (origin.replicate ? RecordFlag.REPLICATE : 0);

/** A sink handed back to commit must be one this engine made (begin). */
export function ownFile(file: FileSink): BlobFileWriter {
  if (!(file instanceof BlobFileWriter)) throw new BlobstoreError('internal', 'a file sink the local store did not make was committed');
  return file;
}

export interface LargeBlobDeps {
  readonly dataPath: string;
  readonly chunkCv: ChunkCv;
  readonly space: DiskSpace;
  readonly recorder: Recorder;
  /** Files of each kind written past the page cache (settings blobFileWrites, columnFileWrites: direct). */
  readonly direct: Readonly<Record<FileKind, boolean>>;
  /** Runs `fn` after every earlier operation on the same id has finished (id-locks.ts). */
  exclusive<T>(id: Buffer, fn: () => Promise<T>): Promise<T>;
  /** The id is stored here. */
  has(id: Buffer): boolean;
  appendRecord: AppendRecord;
}

/** What a file of its own holds: a large blob (or a replica of one), or an erasure-coded column. */
export type FileKind = 'blob' | 'column';

export class LargeBlobs {
  /** Uploads whose temp file may still exist. */
  private readonly uploads = new Set<BlobFileWriter>();

  constructor(private readonly deps: LargeBlobDeps) {}

  /** Starts a streamed upload to its own file; finish it with commit() (a column: commitShardFile) or abort it. */
  async begin(kind: FileKind = 'blob'): Promise<FileSink> {
    const { dataPath, chunkCv, space, recorder, direct } = this.deps;
    const writer = new BlobFileWriter(dataPath, chunkCv, space, recorder, this.uploads, direct[kind]);
    await writer.open();
    return writer;
  }

  /** Moves a finished upload into place and records it; deduplicates against stored bytes. */
  commit(file: FileSink, checksum: Buffer, policy: Policy, labels: Buffer, origin: StoreOrigin = LOCAL_STORE): Promise<PutResult> {
    const writer = ownFile(file);
    const id = idOfDigest(checksum);
    const size = writer.size;
    return this.deps.exclusive(id, async () => {
      if (this.deps.has(id)) {
        await writer.abort();
        return { id, size, created: false };
      }
      const target = blobFilePath(this.deps.dataPath, id.toString('hex'));
      await mkdirDurable(join(target, '..'));
      await fsp.rename(writer.tmpPath, target);
      writer.committed();
      await fsyncDir(join(target, '..'));
      const done = await this.deps.appendRecord({
        type: RecordType.PUT_FILE, policy, labelsLength: labels.length, dataLength: 0, relocatedFromSegment: 0, relocatedFromOffset: 0,
        size, createdAtNs: origin.createdAtNs ?? nowNs(), id, checksum, labels, data: undefined, flags: flagsOf(origin),
      }, true, true);
      return { id, size, created: !done.existed };
    });
  }

  /** Uploads cut by a shutdown may still be removing their temp files: waits for that. */
  async abortAll(): Promise<void> {
    await Promise.allSettled([...this.uploads].map((w) => w.abort()));
  }
}
