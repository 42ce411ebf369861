/**
 * Columns that streamed in before their blob's id was known (docs/erasure-coding.md): each
 * arrived whole and checked, its bytes durable in a temp file, and waits here for its seal, which
 * names the blob and commits it as a column of it. A column whose seal does not come within
 * `ttlMs` (the coordinator died, or gave the store up) is dropped with its file; so are all of them
 * when the node stops. None is ever visible before its seal.
 */
import { BlobstoreError, invalidArgument } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { ColumnHeader, ColumnWriter } from './column-writer.js';

interface Waiting {
  readonly writer: ColumnWriter;
  readonly timer: NodeJS.Timeout;
}

const keyOf = (placement: Buffer, index: number): string => `${placement.toString('hex')}:${index}`;

export class WaitingColumns {
  private readonly columns = new Map<string, Waiting>();

  constructor(
    /** setting ecWaitingColumnTtlMs */
    private readonly ttlMs: number,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.columns.size;
  }

  /** A complete column waits for its seal (one before it under the same key goes). */
  hold(placement: Buffer, index: number, writer: ColumnWriter): void {
    const key = keyOf(placement, index);
    this.drop(key);
    const timer = setTimeout(() => {
      if (this.columns.get(key)?.writer !== writer) return;
      this.log.warn({ placement: placement.toString('hex'), column: index }, 'a streamed column got no seal in time: dropped');
      this.drop(key);
    }, this.ttlMs);
    timer.unref();
    this.columns.set(key, { writer, timer });
  }

  /**
   * Commits the waiting column as `header` names it (the blob's id, metadata and checksum), once
   * it is the column that streamed in: the same placement key, index and layout.
   */
  async seal(placement: Buffer, index: number, header: ColumnHeader): Promise<{ created: boolean }> {
    const key = keyOf(placement, index);
    const waiting = this.columns.get(key);
    if (!waiting) throw new BlobstoreError('not_found', `no streamed column ${index} of placement ${placement.toString('hex')} waits here (its seal came too late, or the node restarted)`);
    const before = waiting.writer.header;
    if (header.index !== index || !header.placement?.equals(placement) || header.policy !== before.policy
      || header.shardBytes !== before.shardBytes || header.blobBytes !== before.blobBytes) {
      throw invalidArgument(`the seal of column ${index} of placement ${placement.toString('hex')} describes another column`);
    }
    clearTimeout(waiting.timer);
    this.columns.delete(key);
    return waiting.writer.commit(header);
  }

  /** The store was given up: the column goes. */
  discard(placement: Buffer, index: number): void {
    this.drop(keyOf(placement, index));
  }

  /** The node stops: every waiting column goes (its seal could not be taken any more). */
  close(): void {
    for (const key of [...this.columns.keys()]) this.drop(key);
  }

  private drop(key: string): void {
    const waiting = this.columns.get(key);
    if (!waiting) return;
    clearTimeout(waiting.timer);
    this.columns.delete(key);
    void waiting.writer.abort();
  }
}
