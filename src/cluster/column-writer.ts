/**
 * Writes one shard column into the local store as its cells arrive, in order: a column small
 * enough for a segment record gathers in memory; a larger one goes to a file in whole 1 MiB chunks
 * (the file's chunk digests are per 1 MiB, so cells of other sizes are gathered into chunks). The
 * column's checksum is checked before it is committed; nothing stays behind when it does not match
 * or the column is abandoned.
 */
import type { NodeConfig } from '../config/settings.js';
import { invalidArgument } from '../errors/errors.js';
import { CHUNK_BYTES } from '../blob/chunk.js';
import { columnChecksumAt, type ShardHeaderInfo, type ShardWrite } from '../blob/shard.js';
import { ecScheme } from '../ec/layout.js';
import type { FileSink, LocalStore } from '../service/local-store.js';

const noop = (): void => undefined;

/** Chunk writes of one column under way at most; beyond, write() waits (backpressure). */

export type ColumnHeader = ShardHeaderInfo;

export class ColumnWriter {
  private inline: Buffer | undefined;
  private file: FileSink | undefined;
  private opening: Promise<FileSink> | undefined;
  /** The chunk being gathered (file columns). */
  private chunk: Buffer | undefined;
  private chunkLength = 0;
  private writes: Promise<void>[] = [];
  /** The column's checksum, once complete, and every column's as its store computed them. */
  private checksum: Buffer | undefined;
  private checksums: Buffer | undefined;
  received = 0;
  /** Chunk writes under way at most (setting chunkWritesInFlight); the column's body pauses beyond. */
  readonly writesInFlight: number;

  constructor(
    private readonly store: LocalStore,
    config: NodeConfig,
    readonly header: ColumnHeader,
    readonly columnBytes: number,
  ) {
    this.writesInFlight = config.chunkWritesInFlight;
    if (columnBytes <= config.smallBlobMaxBytes) this.inline = Buffer.allocUnsafe(columnBytes);
    else store.checkSpace(columnBytes);
  }

  private what(): string {
    return `shard ${this.header.index} of ${this.header.id.toString('hex')}`;
  }

  /**
   * Takes the next bytes of the column; resolves when it can take more. `done` runs once the cell's
   * bytes are no longer needed: a whole 1 MiB cell is written in place (no copy), so only after its
   * write; any other is copied first.
   */
  async write(cell: Buffer, done: () => void = noop): Promise<void> {
    if (this.received + cell.length > this.columnBytes) {
      done();
      throw invalidArgument(`${this.what()}: more bytes than the column's ${this.columnBytes}`);
    }
    if (this.inline) {
      cell.copy(this.inline, this.received);
      this.received += cell.length;
      done();
      return;
    }
    try {
      this.file ??= await (this.opening ??= this.store.beginFile('column'));
    } catch (err) {
      done();
      throw err;
    }
    let handed = false;
    for (let at = 0; at < cell.length;) {
      if (this.chunkLength === 0 && cell.length - at >= CHUNK_BYTES) {
        handed = true;
        this.received += CHUNK_BYTES;
        await this.push(cell.subarray(at, at + CHUNK_BYTES), done);
        at += CHUNK_BYTES;
        continue;
      }
      this.chunk ??= Buffer.allocUnsafe(CHUNK_BYTES);
      const n = Math.min(cell.length - at, CHUNK_BYTES - this.chunkLength);
      cell.copy(this.chunk, this.chunkLength, at, at + n);
      this.chunkLength += n;
      at += n;
      this.received += n;
      if (this.chunkLength === CHUNK_BYTES) await this.flushChunk();
    }
    if (!handed) done();
  }

  private async flushChunk(): Promise<void> {
    const chunk = this.chunk!.subarray(0, this.chunkLength);
    this.chunk = undefined;
    this.chunkLength = 0;
    await this.push(chunk);
  }

  private async push(chunk: Buffer, written: () => void = noop): Promise<void> {
    const write = this.file!.write(chunk);
    void write.then(written, written);
    write.catch(() => undefined); // awaited in turn or in finish/abort
    this.writes.push(write);
    if (this.writes.length >= this.writesInFlight) await this.writes.shift();
  }

  /**
   * All bytes came: checks them against `columnChecksum` and commits the column durably, with the
   * blob's `columnChecksums` when they are known (ShardInfo.columnChecksums).
   */
  async finish(columnChecksum: Buffer, columnChecksums?: Buffer): Promise<{ created: boolean }> {
    await this.complete(columnChecksum, columnChecksums);
    return this.commit(this.header);
  }

  /**
   * All bytes came: checks them against `columnChecksum` (which must be this column's entry of
   * `columnChecksums`); a file column's bytes are then durable in its temp file. The column is
   * not visible until commit().
   */
  async complete(columnChecksum: Buffer, columnChecksums?: Buffer): Promise<void> {
    if (this.received !== this.columnBytes) {
      await this.abort();
      throw invalidArgument(`${this.what()}: ${this.received} bytes, the column has ${this.columnBytes}`);
    }
    if (columnChecksums !== undefined) {
      const scheme = ecScheme(this.header.policy);
      if (!scheme || columnChecksums.length !== (scheme.k + scheme.m) * 32 || !columnChecksumAt(columnChecksums, this.header.index).equals(columnChecksum)) {
        await this.abort();
        throw invalidArgument(`${this.what()}: its checksum is not the one the blob's column checksums give it`);
      }
    }
    this.checksum = columnChecksum;
    this.checksums = columnChecksums;
    if (this.inline) return;
    try {
      this.file ??= await (this.opening ??= this.store.beginFile('column'));
      if (this.chunkLength > 0) await this.flushChunk();
      await Promise.all(this.writes.splice(0));
      const digest = await this.file.finish();
      if (!digest.equals(columnChecksum)) throw invalidArgument(`${this.what()}: bytes do not match the column's checksum`);
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /**
   * Commits the completed column durably as `header` says: the header it was opened with, or
   * (a column stored as its blob streamed in) the one its seal brings, which names the blob.
   */
  async commit(header: ColumnHeader): Promise<{ created: boolean }> {
    if (this.checksum === undefined) throw invalidArgument(`${this.what()}: committed before it was complete`);
    const w: ShardWrite = { ...header, columnChecksum: this.checksum, ...(this.checksums ? { columnChecksums: this.checksums } : {}) };
    if (this.inline) return this.store.putShardInline(w, this.inline);
    try {
      return await this.store.commitShardFile(this.file!, w);
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  async abort(): Promise<void> {
    await Promise.allSettled(this.writes.splice(0));
    const file = this.file ?? (await this.opening?.catch(() => undefined));
    await file?.abort();
    this.inline = undefined;
  }
}
