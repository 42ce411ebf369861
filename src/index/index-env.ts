/**
 * The LMDB environment of the index, opened alike by the node (blob-index.ts) and by the index
 * journal's merge thread (merge-worker.ts), which lmdb-js gives the same environment.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { type Database, open, type RootDatabase } from 'lmdb';
import { HostError } from '../util/host-error.js';

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
  checkMetaPages(path);
  // overlappingSync: a commit resolves before its flush; callers that need durability await flushed().
  const root = open({ path, compression: false, maxDbs: 16, overlappingSync: true, mapSize: 1024 ** 3, ...(pageBytes ? { pageSize: pageBytes } : {}) });
  return {
    root,
    blobs: root.openDB<Buffer, Buffer>({ name: 'blobs', keyEncoding: 'binary', encoding: 'binary' }),
    journal: root.openDB<Buffer, number>({ name: 'journal', encoding: 'binary' }),
  };
}

/** LMDB's meta page: its page header's flags (P_META), then the meta's magic and the page size. */
const META_FLAG_AT = 18;
const P_META = 0x08;
const MAGIC_AT = 24;
const MAGIC = 0xbeefc0de;
/** The free-pages tree's md_pad, where LMDB keeps the page size. */
const PAGE_SIZE_AT = 48;

/**
 * Refuses an index whose two meta pages are not LMDB's (a damaged disk, a file overwritten):
 * LMDB takes the page size from them and, given garbage, ends the process with SIGSEGV and
 * nothing logged. The log and the data are untouched by this; moving the index aside lets the
 * node rebuild it from the segment log at its next start.
 */
function checkMetaPages(dir: string): void {
  const file = join(dir, 'data.mdb');
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return; // no index yet: LMDB makes one
  }
  try {
    const head = Buffer.alloc(64);
    const damaged = (why: string): HostError =>
      new HostError(`the index ${file} is damaged (${why}); the blobs are in the segment log: move ${dir} aside and start again, and the node rebuilds the index from the log`);
    if (readSync(fd, head, 0, 64, 0) === 0) return; // empty: made anew
    const metaOk = (b: Buffer): boolean => (b.readUInt16LE(META_FLAG_AT) & P_META) !== 0 && b.readUInt32LE(MAGIC_AT) === MAGIC;
    if (!metaOk(head)) throw damaged('its first meta page is not LMDB\'s');
    const pageSize = head.readUInt32LE(PAGE_SIZE_AT);
    if (pageSize < 4096 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) throw damaged(`its meta page gives a page size of ${pageSize}`);
    const second = Buffer.alloc(64);
    if (readSync(fd, second, 0, 64, pageSize) < 64 || !metaOk(second)) throw damaged('its second meta page is not LMDB\'s');
  } finally {
    closeSync(fd);
  }
}
