/**
 * The data directory: its format version, node ID, cursor secret and single-process lock.
 *
 *   <dir>/FORMAT      {"format":1,"nodeId":...}   <dir>/LOCK     symlink to the pid of the process using it
 *   <dir>/secret      32 random bytes (list cursors)  <dir>/index/  LMDB
 *   <dir>/segments/   segment files               <dir>/blobs/xx/  large blobs, one file each
 *   <dir>/tmp/        uploads in progress (removed at start)
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config/load.js';
import { fsyncDir } from './fs-util.js';

/**
 * 2: the index keeps blob records in a journal before merging them (src/index/
 * blob-journal.ts), and entries may carry a CRC-32C; a build that reads format 1 only would miss
 * the journaled records, so it is refused.
 * 3: new blob files keep their chunks' chaining values in the blob's BLAKE3
 * tree (blob-file.ts, file version 2); a build that knows format 2 only would take such a file
 * for a corrupt one, so it is refused. Older dirs are taken and marked 3 (their files still read).
 * 4: log batches end with a PAD record on a 4 KiB boundary (record.ts); a build that
 * knows format 3 only would take the PAD for the end of the log and lose what follows it, so it
 * is refused. Older dirs are taken and marked 4: their log goes on in a new segment (log.ts).
 */
export const FORMAT_VERSION = 4;
/** Formats this build opens (the older ones are marked FORMAT_VERSION when opened). */
const READABLE_FORMATS: readonly unknown[] = [1, 2, 3, 4];

export interface DataDir {
  readonly path: string;
  readonly nodeId: string;
  readonly secret: Buffer;
  unlock(): Promise<void>;
}

/** A process that exists and is not a zombie (a killed node not yet reaped holds nothing). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/**
 * The pid holding the lock: the target of the LOCK symlink, or the content of a LOCK file left by
 * an older version; 0 when unreadable.
 */
async function lockHolder(lockPath: string): Promise<number> {
  const text = await fsp.readlink(lockPath).catch(() => fsp.readFile(lockPath, 'utf8').catch(() => ''));
  return Number(text.trim()) || 0;
}

/**
 * Takes the lock: LOCK is a symlink whose target is our pid, made by one atomic symlink(2). A
 * short symlink lives in its inode and needs no data block, so the lock is taken even on a disk
 * filled to the last byte. A lock left by a dead process is taken over.
 */
async function lock(dir: string): Promise<void> {
  const lockPath = join(dir, 'LOCK');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fsp.symlink(String(process.pid), lockPath);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await lockHolder(lockPath);
    if (holder > 0 && (holder === process.pid || isAlive(holder))) {
      throw new ConfigError(`data dir ${dir} is in use by another blobstore process (pid ${holder})`);
    }
    await fsp.rm(lockPath, { force: true });
  }
  throw new ConfigError(`data dir ${dir}: could not take the lock`);
}

async function writeAtomic(path: string, data: string | Buffer, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  const handle = await fsp.open(tmp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fsp.rename(tmp, path);
}

/** Opens (creating when new) and locks the data dir; refuses unknown formats and other nodes' dirs. */
export async function openDataDir(path: string, nodeId: string): Promise<DataDir> {
  await fsp.mkdir(path, { recursive: true });
  await lock(path);
  try {
    const formatPath = join(path, 'FORMAT');
    let format: { format?: unknown; nodeId?: unknown } | undefined;
    try {
      format = JSON.parse(await fsp.readFile(formatPath, 'utf8')) as typeof format;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ConfigError(`data dir ${path}: FORMAT file is unreadable (${(err as Error).message})`);
      }
    }
    if (format === undefined) {
      for (const sub of ['index', 'segments', 'blobs', 'tmp']) await fsp.mkdir(join(path, sub), { recursive: true });
      await writeAtomic(join(path, 'secret'), randomBytes(32), 0o600);
      await writeAtomic(formatPath, JSON.stringify({ format: FORMAT_VERSION, nodeId, createdAt: new Date().toISOString() }) + '\n', 0o644);
      await fsyncDir(path);
    } else if (!READABLE_FORMATS.includes(format.format)) {
      throw new ConfigError(
        `data dir ${path} has on-disk format ${JSON.stringify(format.format)}; this blobstore reads formats ${READABLE_FORMATS.join(' and ')}`,
      );
    } else if (format.nodeId !== nodeId) {
      throw new ConfigError(
        `data dir ${path} belongs to node ${JSON.stringify(format.nodeId)}, not ${JSON.stringify(nodeId)}: set NodeID to match or use another data dir`,
      );
    } else if (format.format !== FORMAT_VERSION) {
      // Marked before anything of the new format is written: an older build refuses it from now on.
      await writeAtomic(formatPath, JSON.stringify({ ...format, format: FORMAT_VERSION, upgradedAt: new Date().toISOString() }) + '\n', 0o644);
      await fsyncDir(path);
    }
    const secret = await fsp.readFile(join(path, 'secret'));
    return { path, nodeId, secret, unlock: () => fsp.rm(join(path, 'LOCK'), { force: true }) };
  } catch (err) {
    await fsp.rm(join(path, 'LOCK'), { force: true });
    throw err;
  }
}

/** Removes uploads a crash left behind. */
export async function removeStrayTemps(path: string): Promise<number> {
  const tmp = join(path, 'tmp');
  const names = await fsp.readdir(tmp).catch(() => [] as string[]);
  for (const name of names) await fsp.rm(join(tmp, name), { force: true, recursive: true });
  return names.length;
}

