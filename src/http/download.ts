/**
 * Sending bodies with uWS backpressure. This uWS build keeps the FIRST onWritable handler a
 * response registers, so each sender registers one handler and serves every chunk from mutable
 * pending state (a handler per chunk would re-send a recycled buffer).
 */
import { ClientGone } from '../errors/client-gone.js';
import type { Exchange } from './reply.js';

export type Writer = (x: Exchange) => void;

const gone = (): Error => new ClientGone();

/** A body of known length, sent with tryEnd (Content-Length is written by uWS). */
export class BodySender {
  private pending: { chunk: Buffer; startOffset: number; resolve: () => void; reject: (e: Error) => void } | undefined;
  private registered = false;

  constructor(
    private readonly x: Exchange,
    private readonly total: number,
  ) {}

  /** Resolves when uWS has taken all of `chunk` (the buffer may be reused after that). */
  send(chunk: Buffer, head: Writer | undefined): Promise<void> {
    const { x } = this;
    if (x.aborted) return Promise.reject(gone());
    const res = x.res;
    // Body offset where this chunk begins; onWritable reports how far uWS has come since.
    const startOffset = res.getWriteOffset();
    let ok = false;
    let done = false;
    res.cork(() => {
      head?.(x);
      [ok, done] = res.tryEnd(chunk, this.total);
    });
    if (done) x.done = true;
    if (ok || done) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.pending = { chunk, startOffset, resolve, reject };
      x.onAbort = () => this.pending?.reject(gone());
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
    if (finished) this.x.done = true;
    if (wrote || finished) {
      this.pending = undefined;
      this.x.onAbort = undefined;
      p.resolve();
    }
    return wrote;
  };
}

/**
 * A body of `total` bytes that `read` hands over chunk by chunk, the head written with the first.
 * After the first byte the status is gone: a failure then cuts the body short rather than let it
 * end as if whole (never wrong bytes under a 200); before it, the error is the caller's to answer.
 */
export async function sendBody(
  x: Exchange, total: number, head: Writer, read: (sink: (chunk: Buffer, index: number) => Promise<void>) => Promise<void>,
): Promise<void> {
  const sender = new BodySender(x, total);
  let sent = false;
  try {
    await read(async (chunk, i) => {
      if (x.aborted) throw gone();
      await sender.send(chunk, i === 0 ? head : undefined);
      sent = true;
    });
  } catch (err) {
    if (sent && !x.aborted && !x.done) {
      // The client sees a body cut short; the node's log says why.
      x.log.warn({ err }, `an answer of ${total} bytes was cut short after it began: ${(err as Error).message}`);
      x.done = true;
      x.res.close();
      return;
    }
    throw err;
  }
}

/**
 * A body of unknown length (chunked transfer encoding), for streams. uWS copies whatever the
 * socket does not take at once into its per-connection backpressure buffer; data goes out in
 * slices of SLICE_BYTES, each only once the previous one has left, so that buffer stays under one
 * slice per slow reader (64 KiB to 2 MiB slices measured the same throughput).
 */
const SLICE_BYTES = 256 * 1024;

export class ChunkedSender {
  private waiting: { resolve: () => void; reject: (e: Error) => void } | undefined;
  private registered = false;

  constructor(private readonly x: Exchange) {}

  async write(data: Buffer, head?: Writer): Promise<void> {
    for (let at = 0; at < data.length; at += SLICE_BYTES) {
      await this.writeSlice(data.subarray(at, at + SLICE_BYTES), at === 0 ? head : undefined);
    }
  }

  private writeSlice(data: Buffer, head?: Writer): Promise<void> {
    const { x } = this;
    if (x.aborted) return Promise.reject(gone());
    let ok = false;
    x.res.cork(() => {
      head?.(x);
      ok = x.res.write(data);
    });
    if (ok) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      x.onAbort = () => this.waiting?.reject(gone());
      if (!this.registered) {
        this.registered = true;
        x.res.onWritable(this.onWritable);
      }
    });
  }

  end(data: Buffer | string, head?: Writer): void {
    const { x } = this;
    if (x.aborted || x.done) return;
    x.done = true;
    x.res.cork(() => {
      head?.(x);
      x.res.end(data);
    });
  }

  private readonly onWritable = (): boolean => {
    const w = this.waiting;
    this.waiting = undefined;
    this.x.onAbort = undefined;
    w?.resolve();
    return true;
  };
}
