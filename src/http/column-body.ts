/**
 * The body of PUT /internal/v1/shards/{id}/{index} (internal-routes.ts): a column's bytes, then
 * its 32-byte checksum, then (when its head says so) every column's checksum of the blob, then (a
 * streamed column) its seal: the blob's metadata as header lines. The bytes are copied once out
 * of uWS's buffer into pooled 1 MiB chunks and handed whole to the ColumnWriter (which writes
 * them in place); the request is paused while the disk is behind. The checksum is checked when
 * the column is committed.
 */
import { invalidArgument } from '../errors/errors.js';
import type { BufferPool } from '../pool/buffer-pool.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { ColumnHeader, ColumnWriter } from '../cluster/column-writer.js';
import type { FlowControl } from '../service/blob-writer.js';
import type { BodySink } from './intake.js';
import { copyBytes } from '../util/copy-bytes.js';

const CHECKSUM_BYTES = 32;

const fromPool = (chunk: Buffer): boolean => chunk.buffer instanceof SharedArrayBuffer && chunk.length === CHUNK_BYTES;

export class ColumnBody implements BodySink {
  lastActivityMs = Date.now();
  private received = 0;
  private chunk: Buffer | undefined;
  private chunkLength = 0;
  /** The column's checksum, then the blob's column checksums (`checksums` of them). */
  private readonly trailer: Buffer;
  private trailerLength = 0;
  /** The seal's bytes, after the checksum (a streamed column). */
  private readonly sealParts: Buffer[] = [];
  private sealLength = 0;
  /** Writes to the column, one after another. */
  private chain: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private paused = false;
  private failed: unknown;

  constructor(
    private readonly writer: ColumnWriter,
    private readonly columnBytes: number,
    private readonly pool: BufferPool,
    private readonly flow: FlowControl,
    /**
     * How long the body may stay quiet: a streamed column (sealed later) gets nothing while the
     * client's bytes go to the other columns of the stripe, so it waits longer than a client's body.
     */
    readonly idleTimeoutMs?: number,
    /** A streamed column: its body ends with a seal of at least 1 and at most this many bytes (0: none). */
    private readonly sealMaxBytes = 0,
    /** How many column checksums follow the column's own (0: none; else the blob's k + m). */
    checksums = 0,
  ) {
    this.trailer = Buffer.alloc(CHECKSUM_BYTES * (1 + checksums));
  }

  private get checksum(): Buffer {
    return this.trailer.subarray(0, CHECKSUM_BYTES);
  }

  private get checksums(): Buffer | undefined {
    return this.trailer.length > CHECKSUM_BYTES ? this.trailer.subarray(CHECKSUM_BYTES) : undefined;
  }

  write(bytes: Uint8Array, isLast: boolean): void {
    this.lastActivityMs = Date.now();
    if (this.failed) throw this.failed;
    let at = 0;
    while (at < bytes.length) {
      if (this.received < this.columnBytes) {
        this.chunk ??= this.pool.tryAcquire() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
        const n = Math.min(bytes.length - at, CHUNK_BYTES - this.chunkLength, this.columnBytes - this.received);
        // A native memcpy: set() into a pool chunk (a SharedArrayBuffer) copies with V8's relaxed
        // byte moves, several times slower.
        copyBytes(at === 0 && n === bytes.length ? bytes : bytes.subarray(at, at + n), this.chunk, this.chunkLength);
        this.chunkLength += n;
        this.received += n;
        at += n;
        if (this.chunkLength === CHUNK_BYTES || this.received === this.columnBytes) this.submit();
        continue;
      }
      const n = Math.min(bytes.length - at, this.trailer.length - this.trailerLength);
      if (n === 0) {
        if (this.sealLength + bytes.length - at > this.sealMaxBytes) {
          throw invalidArgument(this.sealMaxBytes === 0 ? 'shard column: more bytes than the column and its checksums' : `shard column: a seal over ${this.sealMaxBytes} bytes`);
        }
        // uWS reuses the bytes it hands over: the seal's are copied.
        this.sealParts.push(Buffer.from(bytes.subarray(at)));
        this.sealLength += bytes.length - at;
        break;
      }
      this.trailer.set(bytes.subarray(at, at + n), this.trailerLength);
      this.trailerLength += n;
      at += n;
    }
    if (isLast && (this.received < this.columnBytes || this.trailerLength < this.trailer.length || (this.sealMaxBytes > 0 && this.sealLength === 0))) {
      throw invalidArgument(`shard column: the body ended after ${this.received} of ${this.columnBytes} bytes (and ${this.trailerLength} of the checksums' ${this.trailer.length}${this.sealMaxBytes > 0 ? ', before its seal' : ''})`);
    }
  }

  private submit(): void {
    const chunk = this.chunk!;
    const length = this.chunkLength;
    this.chunk = undefined;
    this.chunkLength = 0;
    this.inFlight++;
    if (this.inFlight >= this.writer.writesInFlight && !this.paused) {
      this.paused = true;
      this.flow.pause();
    }
    const release = (): void => {
      if (fromPool(chunk)) this.pool.release(chunk);
    };
    this.chain = this.chain.then(() => this.writer.write(chunk.subarray(0, length), release)).catch((err: unknown) => {
      release();
      this.failed ??= err;
    }).finally(() => {
      this.inFlight--;
      if (this.paused && this.inFlight < this.writer.writesInFlight) {
        this.paused = false;
        this.flow.resume();
      }
    });
  }

  /**
   * A streamed column: every byte is in and its checksum holds; committed as `sealed` says of its
   * seal (the header naming the blob).
   */
  async seal(sealed: (seal: string) => ColumnHeader): Promise<{ created: boolean }> {
    await this.chain;
    if (this.failed) throw this.failed;
    const header = sealed(Buffer.concat(this.sealParts, this.sealLength).toString('latin1'));
    await this.writer.complete(this.checksum, this.checksums);
    return this.writer.commit(header);
  }

  /** Every byte is in: the column committed once its checksum holds. */
  async finish(): Promise<{ created: boolean }> {
    await this.chain;
    if (this.failed) throw this.failed;
    return this.writer.finish(this.checksum, this.checksums);
  }

  async discard(): Promise<void> {
    await this.chain.catch(() => undefined);
    if (this.chunk && fromPool(this.chunk)) this.pool.release(this.chunk);
    this.chunk = undefined;
    await this.writer.abort();
  }
}
