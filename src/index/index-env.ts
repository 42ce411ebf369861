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

/**
 * Opens (or creates) the index at `path`. `pageBytes` is the page size of an index created here
 * (setting indexPageBytes; undefined: LMDB's own, for an index known to exist); one that exists
 * keeps the page size it was made with. Each commit writes back LMDB's list of free pages, whose
 * length grows with the pages a journal merge rewrites: at 4 KiB pages its upkeep took 4% of a
 * node's CPU after 3M stores and grew on, at 16 KiB 0.1% (docs/adr/0032-index-pages.md).
 */
export function openIndexEnv(path: string, pageBytes?: number): IndexEnv {
  // overlappingSync: a commit resolves before its flush; callers that need durability await flushed().
  const root = open({ path, compression: false, maxDbs: 12, overlappingSync: true, mapSize: 1024 ** 3, ...(pageBytes ? { pageSize: pageBytes } : {}) });
  return {
    root,
    blobs: root.openDB<Buffer, Buffer>({ name: 'blobs', keyEncoding: 'binary', encoding: 'binary' }),
    journal: root.openDB<Buffer, number>({ name: 'journal', encoding: 'binary' }),
  };
}
