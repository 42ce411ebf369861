/**
 * Read handles for segment files. Small records are read on the calling thread when the page
 * cache holds them: a pread of a few KiB from memory costs less than a thread-pool hop
 * (docs/adr/0012-hot-path.md: ~33k GET/s prototype). The read asks the kernel not to wait for the disk
 * (preadv2 RWF_NOWAIT, native/src/binding_fs.c): bytes that are not in memory are read in the
 * thread pool instead, so a cold read on a slow disk stalls no other request. Segments are also
 * mapped (up to readMapSegments): once such a read has found a record's pages in memory, the
 * record is copied from the mapping, with no system call, until the kernel is seen to give pages
 * back (native/src/binding_map.c, page-evictions.ts; docs/adr/0024-mapped-reads.md). Larger
 * records always go through the pool; a segment being removed waits for reads in progress.
 */
import { closeSync, fstatSync, openSync, read, readSync, constants as fsc } from 'node:fs';
import { type EcAddon, native } from '../ec/native.js';
import { BlobstoreError } from '../errors/errors.js';
import type { SegmentStore } from './segment-store.js';
import { ScratchViews } from '../util/scratch-views.js';
import { pageAligned } from '../util/aligned-buffer.js';
import { PageEvictions } from './page-evictions.js';

const EAGAIN = 11;
/** What a kernel without preadv2 (before 4.6) or a file or kernel without RWF_NOWAIT for reads answers. */
const NO_NOWAIT = new Set([38 /* ENOSYS */, 95 /* EOPNOTSUPP */]);

type NoWaitRead = (fd: number, buffer: Uint8Array, length: number, position: number) => number;

/** The addon, or null without it: small reads then block, and nothing is mapped. */
function addonOrNull(): EcAddon | null {
  try {
    return native();
  } catch {
    return null;
  }
}

/** The addon's preadNoWait, or null without the addon: reads of small records then block. */
function noWaitRead(): NoWaitRead | null {
  const addon = addonOrNull();
  return addon !== null && typeof addon.preadNoWait === 'function' ? (fd, buffer, length, position) => addon.preadNoWait(fd, buffer, length, position) : null;
}

/** The addon's mapped reads, or null without the addon. */
function mapAddon(): Pick<EcAddon, 'mapOpen' | 'mapRead' | 'mapClose' | 'mapRecheck'> | null {
  const addon = addonOrNull();
  return addon !== null && typeof addon.mapRead === 'function' ? addon : null;
}

/** The process's watch for pages the kernel gives back (the addon's marks are the process's). */
let evictions: PageEvictions | undefined;

/** The process's watch, once a reader has mapped (tests wait for its rechecks). */
export function pageEvictions(): PageEvictions | undefined {
  return evictions;
}

/** How segments are mapped for reads (settings readMapSegments, readMapCheckMs). */
export interface MapOptions {
  /** Segments mapped at most; 0: none. */
  readonly segments: number;
  readonly checkMs: number;
}

export class SegmentReader {
  private readonly fds = new Map<number, number>();
  /** Mapping handles by segment; -1: not mapped (refused, or over the limit). */
  private readonly maps = new Map<number, number>();
  private readonly mapper: ReturnType<typeof mapAddon>;
  private readonly pins = new Map<number, number>();
  private readonly unpinned = new Map<number, () => void>();

  constructor(
    private readonly store: SegmentStore,
    /** Reads up to this size run on the calling thread (setting syncReadMaxBytes). */
    readonly syncReadMaxBytes: number,
    private readonly mapOptions: MapOptions = { segments: 0, checkMs: 1000 },
  ) {
    // Page-aligned: a record that starts on a page (the first of a direct-written batch) copies
    // into it at full speed (util/aligned-buffer.ts).
    this.scratch = pageAligned(syncReadMaxBytes);
    this.scratchViews = new ScratchViews(this.scratch);
    const mapper = mapOptions.segments > 0 ? mapAddon() : null;
    evictions ??= mapper ? new PageEvictions(() => mapper.mapRecheck()) : undefined;
    this.mapper = mapper && evictions?.join(mapOptions.checkMs) ? mapper : null;
    this.mapping = this.mapper !== null;
  }

  /** Small reads go through mappings (false without the addon, with readMapSegments 0, or once the kernel refuses RWF_NOWAIT). */
  private mapping: boolean;

  /** Segments mapped now (at most readMapSegments). */
  private mapped = 0;
  private closed = false;

  /** Segment `segment`'s mapping (opened on its first read), or -1. */
  private mapOf(segment: number, fd: number): number {
    let handle = this.maps.get(segment);
    if (handle === undefined) {
      handle = this.mapped < this.mapOptions.segments ? this.mapper!.mapOpen(fd, fstatSync(fd).size) : -1;
      if (handle >= 0) this.mapped++;
      else handle = -1;
      this.maps.set(segment, handle);
    }
    return handle;
  }

  private fd(segment: number): number {
    let fd = this.fds.get(segment);
    if (fd === undefined) {
      fd = openSync(this.store.path(segment), fsc.O_RDONLY);
      this.fds.set(segment, fd);
    }
    return fd;
  }

  /** One buffer for every synchronous read whose bytes are copied out before the next one. */
  private readonly scratch: Buffer;
  /** Views of `scratch` by length: a small GET's read allocates none. */
  private readonly scratchViews: ScratchViews;

  /** How small reads run on this thread; null once the addon or the kernel cannot read without waiting. */
  private noWait: NoWaitRead | null = noWaitRead();

  /**
   * A small read on the calling thread (at most syncReadMaxBytes) into `into`: false when the
   * page cache does not hold all of the bytes (read() reads them in the pool).
   */
  private readInMemory(segment: number, position: number, length: number, into: Buffer): boolean {
    if (length === 0) return true;
    const fd = this.fd(segment);
    const map = this.mapping ? this.mapOf(segment, fd) : -1;
    if (map >= 0) {
      const n = this.mapper!.mapRead(map, fd, into, length, position);
      if (n === length) return true;
      // Mapped reads learn what is in memory from reads that do not wait: none without them.
      if (NO_NOWAIT.has(-n)) this.mapping = false;
      // Not all in memory, the end of the file, or a page the mapping could not have (EIO): the
      // pool's read tells which, off the event loop.
      return false;
    }
    if (this.noWait !== null) {
      const n = this.noWait(fd, into, length, position);
      if (n === length) return true;
      // A part in memory, or the end of the file: the pool's read tells which.
      if (n >= 0 || n === -EAGAIN) return false;
      // Refused here: plain reads from now on. Any other failure: the plain read reports it as Node does.
      if (NO_NOWAIT.has(-n)) this.noWait = null;
    }
    const n = readSync(fd, into, 0, length, position);
    if (n !== length) throw shortRead(segment, position, length, n);
    return true;
  }

  /**
   * A small read on the calling thread into the shared scratch buffer (valid only until the next
   * call); undefined when the bytes are not all in memory: read them with read().
   */
  readSmallScratch(segment: number, position: number, length: number): Buffer | undefined {
    return this.readInMemory(segment, position, length, this.scratch) ? this.scratchViews.of(length) : undefined;
  }

  async read(segment: number, position: number, length: number): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(length);
    if (length <= this.syncReadMaxBytes && this.readInMemory(segment, position, length, buf)) return buf;
    const fd = this.fd(segment);
    this.pins.set(segment, (this.pins.get(segment) ?? 0) + 1);
    try {
      const n = await new Promise<number>((resolve, reject) =>
        read(fd, buf, 0, length, position, (err, bytes) => (err ? reject(err) : resolve(bytes))),
      );
      if (n !== length) throw shortRead(segment, position, length, n);
      return buf;
    } finally {
      const left = this.pins.get(segment)! - 1;
      if (left === 0) {
        this.pins.delete(segment);
        this.unpinned.get(segment)?.();
      } else this.pins.set(segment, left);
    }
  }

  /** Closes the segment's handle once no read holds it (before the file is removed). */
  async release(segment: number): Promise<void> {
    if (this.pins.has(segment)) await new Promise<void>((resolve) => this.unpinned.set(segment, resolve));
    this.unpinned.delete(segment);
    this.unmap(segment);
    const fd = this.fds.get(segment);
    if (fd !== undefined) closeSync(fd);
    this.fds.delete(segment);
  }

  private unmap(segment: number): void {
    const handle = this.maps.get(segment);
    if (handle !== undefined && handle >= 0) {
      this.mapper!.mapClose(handle);
      this.mapped--;
    }
    this.maps.delete(segment);
  }

  close(): void {
    for (const segment of [...this.maps.keys()]) this.unmap(segment);
    if (this.mapper !== null && !this.closed) evictions?.leave();
    this.closed = true;
    // A read after close maps nothing again (no watch would recheck it).
    this.mapping = false;
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}

/** The segment holds fewer bytes than its index record names: the stored copy is damaged. */
function shortRead(segment: number, position: number, length: number, got: number): BlobstoreError {
  return new BlobstoreError('corruption', `short read in segment ${segment} at ${position}: ${got} of ${length} bytes`);
}
