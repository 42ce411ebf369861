/**
 * The LMDB environment of the index, opened alike by the node (blob-index.ts) and by the index
 * journal's merge thread (merge-worker.ts), which lmdb-js gives the same environment.
 */
import { type Database, open, type RootDatabase } from 'lmdb';

export interface IndexEnv {
  root: RootDatabase;
  /** Blob records by id (entry.ts layout). */
  blobs: Database<Buffer, Buffer>;
  /** The index journal's records by the LSN of their commit (blob-journal.ts). */
  journal: Database<Buffer, number>;
}

export function openIndexEnv(path: string): IndexEnv {
  // overlappingSync: a commit resolves before its flush; callers that need durability await flushed().
  const root = open({ path, compression: false, maxDbs: 12, overlappingSync: true, mapSize: 1024 ** 3 });
  return {
    root,
    blobs: root.openDB<Buffer, Buffer>({ name: 'blobs', keyEncoding: 'binary', encoding: 'binary' }),
    journal: root.openDB<Buffer, number>({ name: 'journal', encoding: 'binary' }),
  };
}
