/**
 * Read-back of the log's staged batches into the page cache (direct writes only: a buffered
 * write leaves them there). Each read-back is a device request (a VM exit to submit, a read,
 * page-cache pages to insert): one per ~1 MiB (setting logReadBackBytes) costs the pool threads
 * what one per batch did for a few dozen KiB. The range gathered, [start, end) of one segment, is
 * taken along by the next batch written (after its own write and sync), or sent in a job of its
 * own once it is due and no batch comes.
 */
import type { BatchWriter } from './fs-util.js';
import type { OpenSegment } from './segment-store.js';

export class ReadBack {
  private segment: OpenSegment | undefined = undefined;
  private start = 0;
  private end = 0;
  /** The next batch written takes the range along, or send() sends it alone. */
  due = false;

  constructor(
    /** Bytes gathered before the range is due; 0: no read-back. */
    private readonly limitBytes: number,
    /** The addon's writer, which reads back (null without the addon: no direct writes either). */
    private readonly sink: Pick<BatchWriter, 'readBack'> | null,
  ) {}

  /**
   * Adds a staged batch's blocks, [start, end) of `segment`. A batch of a sealed segment (not
   * `active`) is read back at once: its descriptor is closed once its batches are committed,
   * after the read-back's job started (the thread pool starts jobs in order), never before.
   */
  gather(segment: OpenSegment, start: number, end: number, active: OpenSegment): void {
    if (this.limitBytes <= 0 || segment.direct === undefined || this.sink === null) return;
    if (segment !== this.segment || start !== this.end) {
      this.send();
      this.segment = segment;
      this.start = start;
    }
    this.end = end;
    if (this.end - this.start >= this.limitBytes || segment !== active) this.due = true;
  }

  /** Nothing is in flight: no batch may come soon to take the range along. */
  idle(): void {
    if (this.end > this.start) this.due = true;
  }

  /** The descriptor, position and length a batch's job takes along (while `due`). */
  get fd(): number {
    return this.segment!.fd;
  }

  get position(): number {
    return this.start;
  }

  get length(): number {
    return this.end - this.start;
  }

  /** Sends the range, if any, in a thread-pool job of its own. */
  send(): void {
    if (this.end > this.start && this.sink !== null) this.sink.readBack(this.segment!.fd, this.start, this.end - this.start);
    this.taken();
  }

  /** The range went (with a batch's job, or alone). */
  taken(): void {
    this.segment = undefined;
    this.start = 0;
    this.end = 0;
    this.due = false;
  }
}
