/**
 * Segment space ahead of the log's tail. The active segment gets real blocks (fallocate, and with
 * logSpace=zeroed zeros written past the page cache: SegmentStore.allocateTail) a step at a time
 * (setting segmentAllocBytes), the next step taken once less than half of one is left, so records
 * seldom wait for it; records go in only below `end`. One step at a time: records that fit below
 * `end` go on meanwhile.
 */
import type { DiskSpace } from './disk-space.js';
import type { LogRecord } from './log-record.js';
import type { OpenSegment, SegmentStore } from './segment-store.js';

/** Allocation steps are whole multiples of this (file systems allocate in pages or blocks). */
const ALLOC_ALIGN_BYTES = 64 * 1024;
const alignUp = (n: number, to: number): number => Math.ceil(n / to) * to;

export class LogSpace {
  /** The segment has real blocks up to here. */
  private allocatedEnd: number;
  /** An allocation step is under way. */
  private allocating = false;
  /** The last step taken ahead of need failed: the next is taken only when records need it. */
  private aheadRefused = false;

  constructor(
    private readonly store: Pick<SegmentStore, 'allocateTail'>,
    private readonly disk: DiskSpace,
    /** Bytes of a step (setting segmentAllocBytes). */
    private readonly stepBytes: number,
    /** The segment records go into, and where its records end. */
    private segment: OpenSegment,
    tail: number,
    /** Runs after every step, whether it got the space or not: records may go on. */
    private readonly stepped: () => void,
    /**
     * Space for the head of the queue could not be had: the records waiting for it are refused
     * (507), except maintenance records when `keepMaintenance`.
     */
    private readonly refuse: (err: unknown, keepMaintenance: boolean) => void,
  ) {
    // What lies past the tail at start is unknown (recovery gave it back): allocate from the tail.
    this.allocatedEnd = tail;
  }

  /** Where the segment's real blocks end. */
  get end(): number {
    return this.allocatedEnd;
  }

  /** A step is under way (it writes through the segment's descriptors). */
  get busy(): boolean {
    return this.allocating;
  }

  /** Records go into a new segment now, from its start. */
  restart(segment: OpenSegment): void {
    this.segment = segment;
    this.allocatedEnd = 0;
  }

  /**
   * Takes the next step while less than half a step is left ahead of `tail`, so records seldom
   * wait for one (with logSpace=zeroed a step is written with zeros too: ~2 ms per 4 MiB here). A
   * whole step or nothing: when the disk cannot give it, records ask again once they need the
   * space (extend), and are refused then if it is not there.
   */
  ahead(tail: number): void {
    if (this.allocating || this.aheadRefused) return;
    const room = this.segment.sizeBytes - this.allocatedEnd;
    if (room <= 0 || this.allocatedEnd - tail >= this.stepBytes / 2) return;
    const bytes = Math.min(room, this.stepBytes);
    this.step(bytes, bytes, false, this.refusedAhead);
  }

  /** A bound function, not an arrow in ahead(): a closure there makes its context on every call, for every pump. */
  private readonly refusedAhead = (): void => {
    this.aheadRefused = true;
  };

  /**
   * Allocates space for `head` (`length` bytes from `tail`, and a step beyond it). A store at the
   * head may not take the reserve: when the disk cannot give it, every store waiting is refused
   * (507) and the maintenance records behind them get their turn.
   */
  extend(head: LogRecord, tail: number, length: number): void {
    const room = this.segment.sizeBytes - this.allocatedEnd;
    const minBytes = Math.min(room, alignUp(tail + length - this.allocatedEnd, ALLOC_ALIGN_BYTES));
    const wantBytes = Math.max(minBytes, Math.min(room, this.stepBytes));
    this.step(minBytes, wantBytes, head.maintenance, (err) => this.refuse(err, !head.maintenance));
  }

  /** Gives the segment real blocks from `end`, then runs `stepped`. */
  private step(minBytes: number, wantBytes: number, maintenance: boolean, failed: (err: unknown) => void): void {
    this.allocating = true;
    const segment = this.segment;
    const from = this.allocatedEnd;
    this.store.allocateTail(segment, from, minBytes, wantBytes, maintenance, this.disk).then(
      (got) => {
        this.aheadRefused = false;
        if (this.segment === segment) this.allocatedEnd = from + got;
      },
      failed,
    ).finally(() => {
      this.allocating = false;
      this.stepped();
    });
  }
}
