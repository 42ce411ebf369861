/**
 * Serving a blob stored in its own file: 1 MiB chunks read ahead from disk, each checked against
 * its digest before any of it is written, sent with uWS backpressure (tryEnd/onWritable). A chunk
 * that fails its check ends the connection: the client sees a short body, never wrong bytes.
 */
import { promises as fsp } from 'node:fs';
import { BlobstoreError } from '../errors/errors.js';
import { type BlobFileLayout, chunkIntact, readLayout } from '../engine/blob-file.js';
import type { BlobMeta, Engine } from '../engine/engine.js';
import { type Exchange } from './reply.js';

type Writer = (x: Exchange) => void;

/** Chunks read ahead of the one being sent (1 MiB each, from the buffer pool). */
const READ_AHEAD = 4;

/**
 * Sends a body of `total` bytes chunk by chunk with backpressure. This uWS build keeps the first
 * onWritable handler a response registers, so one handler per response serves every chunk from
 * the mutable `pending` state (a handler per chunk would re-send a recycled buffer).
 */
class BodySender {
  private pending: { chunk: Buffer; startOffset: number; resolve: () => void; reject: (e: Error) => void } | undefined;
  private registered = false;

  constructor(
    private readonly x: Exchange,
    private readonly total: number,
  ) {}

  /** Resolves when uWS has taken all of `chunk` (the buffer may be reused after that). */
  send(chunk: Buffer, head: Writer | undefined): Promise<void> {
    const { x } = this;
    if (x.aborted) return Promise.reject(new Error('client went away'));
    const res = x.res;
    // Body offset where this chunk begins; onWritable reports how far uWS has come since.
    const startOffset = res.getWriteOffset();
    let ok = false;
    let done = false;
    res.cork(() => {
      head?.(x);
      [ok, done] = res.tryEnd(chunk, this.total);
    });
    if (ok || done) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.pending = { chunk, startOffset, resolve, reject };
      x.onAbort = () => this.pending?.reject(new Error('client went away'));
      if (!this.registered) {
        this.registered = true;
        res.onWritable(this.onWritable);
      }
    });
  }

  private readonly onWritable = (offset: number): boolean => {
    const p = this.pending;
    if (!p) return true;
    const [wrote, finished] = this.x.res.tryEnd(p.chunk.subarray(offset - p.startOffset), this.total);
    if (wrote || finished) {
      this.pending = undefined;
      this.x.onAbort = undefined;
      p.resolve();
    }
    return wrote;
  };
}

async function readChunk(handle: fsp.FileHandle, buf: Buffer, layout: BlobFileLayout, index: number): Promise<Buffer> {
  const at = index * layout.chunkBytes;
  const length = Math.min(layout.chunkBytes, layout.size - at);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, at + done);
    if (bytesRead === 0) throw new BlobstoreError('corruption', 'blob file is shorter than its footer says');
    done += bytesRead;
  }
  return buf.subarray(0, length);
}

/** Streams a file blob; `head` writes the status line and headers before the first byte. */
/**
 * Streams a file blob; `head` writes the status line and headers before the first byte. Up to
 * READ_AHEAD chunks are read while earlier ones are verified and sent, so a cold read keeps
 * several requests at the disk.
 */
export async function sendBlobFile(x: Exchange, engine: Engine, meta: BlobMeta, head: Writer): Promise<void> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(engine.filePath(meta), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw engine.corruption(meta);
    throw err;
  }
  const buffers: Buffer[] = [];
  const reads: Promise<Buffer>[] = [];
  try {
    const layout = await readLayout(handle, meta.size).catch((err: unknown) => {
      throw err instanceof BlobstoreError ? engine.corruption(meta) : err;
    });
    const count = Math.ceil(layout.size / layout.chunkBytes);
    for (let i = 0; i < Math.min(READ_AHEAD, count); i++) buffers.push(await engine.pool.acquire());
    const sender = new BodySender(x, layout.size);
    const startRead = (i: number): void => {
      const read = readChunk(handle, buffers[i % buffers.length]!, layout, i);
      read.catch(() => undefined); // awaited in turn, or settled in finally
      reads[i % buffers.length] = read;
    };
    for (let i = 0; i < buffers.length; i++) startRead(i);
    for (let i = 0; i < count; i++) {
      const chunk = await reads[i % buffers.length]!;
      if (!(await chunkIntact(layout, i, chunk, engine.digestChunk))) {
        const err = engine.corruption(meta);
        if (i === 0) throw err;
        if (!x.aborted) x.res.close();
        return;
      }
      if (x.aborted) return;
      await sender.send(chunk, i === 0 ? head : undefined);
      // This chunk's buffer is free again: read the one READ_AHEAD chunks on into it.
      if (i + buffers.length < count) startRead(i + buffers.length);
    }
    x.done = true;
  } finally {
    // Reads ahead may still be filling buffers: let them settle before the buffers go back.
    await Promise.allSettled(reads);
    await handle.close();
    for (const b of buffers) engine.pool.release(b);
  }
}
