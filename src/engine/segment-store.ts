/**
 * Segment files: `segments/00000001.seg`, ... Each is created at its full size (sparse, by
 * ftruncate), so appends never grow the file, and gets real blocks (fallocate) a step at a time
 * ahead of the log's tail (log.ts), so no write into it can fail for space. With logSpace=zeroed
 * and an O_DIRECT descriptor (logWrites=direct) each step is also written with zeros past the page
 * cache, so the log's batches overwrite written blocks and their fdatasync commits no extent
 * change (PostgreSQL zero-fills its WAL files for the same reason: wal_init_zero). Through the
 * page cache the zeros cost more than they save (~15k against ~17k PUT/s once, docs/adr/0012-hot-path.md).
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import type { DiskSpace } from './disk-space.js';
import { allocate, fsyncDir } from './fs-util.js';

export interface OpenSegment {
  readonly id: number;
  readonly handle: fsp.FileHandle;
  readonly fd: number;
  readonly sizeBytes: number;
  /** The same file opened O_DIRECT, for the log's writes (openDirect); undefined when not asked for or refused. */
  direct?: fsp.FileHandle;
}

export class SegmentStore {
  private readonly dir: string;

  constructor(
    dataDir: string,
    private readonly segmentSizeBytes: number,
    /** Setting logWrites is direct: the log's segments get an O_DIRECT descriptor (openDirect). */
    private readonly directWrites = false,
    /** Setting logSpace is zeroed: allocated steps are written with zeros through that descriptor. */
    private readonly zeroFill = false,
  ) {
    this.dir = join(dataDir, 'segments');
  }

  path(id: number): string {
    return join(this.dir, `${String(id).padStart(8, '0')}.seg`);
  }

  /** Ids of the segment files present, ascending. */
  async list(): Promise<number[]> {
    const names = await fsp.readdir(this.dir);
    return names
      .filter((n) => /^\d{8}\.seg$/.test(n))
      .map((n) => Number(n.slice(0, 8)))
      .sort((a, b) => a - b);
  }

  async open(id: number): Promise<OpenSegment> {
    const handle = await fsp.open(this.path(id), fsc.O_RDWR);
    const { size } = await handle.stat();
    return { id, handle, fd: handle.fd, sizeBytes: size };
  }

  /**
   * Gives the segment the log appends to its O_DIRECT descriptor, with directWrites and where the
   * file system takes it (tmpfs and some others refuse O_DIRECT: the log writes through the page cache there).
   */
  async openDirect(segment: OpenSegment): Promise<void> {
    if (!this.directWrites || fsc.O_DIRECT === undefined || segment.direct !== undefined) return;
    segment.direct = await fsp.open(this.path(segment.id), fsc.O_WRONLY | fsc.O_DIRECT).catch(() => undefined);
  }

  /** Closes the segment's descriptors (errors ignored: nothing is written through them after the last sync). */
  static async close(segment: OpenSegment): Promise<void> {
    await Promise.all([segment.handle.close().catch(() => undefined), segment.direct?.close().catch(() => undefined)]);
  }

  /** Creates segment `id` at its full size and opens it. */
  async create(id: number): Promise<OpenSegment> {
    const handle = await fsp.open(this.path(id), fsc.O_RDWR | fsc.O_CREAT | fsc.O_EXCL, 0o644);
    await handle.truncate(this.segmentSizeBytes);
    await handle.sync();
    await handle.close();
    await fsyncDir(this.dir);
    return this.open(id);
  }

  /**
   * Gives the segment real blocks from `from`: between `minBytes` and `wantBytes`, and returns how
   * many. Space for stores is taken from the data headroom (507 when there is none);
   * `maintenance` (tombstones, relocations) may use the reserve, and frees the ballast if the disk
   * has run out: a whole step if the disk has it, else just enough.
   */
  async allocateTail(segment: OpenSegment, from: number, minBytes: number, wantBytes: number, maintenance: boolean, space: DiskSpace): Promise<number> {
    const direct = this.zeroFill ? segment.direct : undefined;
    if (maintenance) {
      await space.makeRoom(minBytes);
      const got = await allocate(segment.handle, from, wantBytes, direct).then(() => wantBytes, () => 0);
      if (got > 0) return got;
      await allocate(segment.handle, from, minBytes, direct);
      return minBytes;
    }
    const taken = space.takeForData(minBytes, wantBytes);
    try {
      await allocate(segment.handle, from, taken, direct);
    } finally {
      space.written(taken);
    }
    return taken;
  }

  async remove(id: number): Promise<void> {
    await fsp.rm(this.path(id), { force: true });
    await fsyncDir(this.dir);
  }
}
