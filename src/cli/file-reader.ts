/**
 * Batches of small files read on a thread of their own, straight into their batch body, while
 * the command's thread sends the batches before them: their open, read and close calls were a
 * third of `put`'s CPU on the thread that also drives the connections. One message each way per
 * batch; the bodies' buffers are reused (a fresh one per batch cost a page fault per 4 KiB on
 * first touch, in kernel time).
 *
 *   read(files) ──▶ worker: frame head, then open/read/close into the shared buffer, per file
 *               ──▶ the body (frames of the files read) and, per file, why it could not be read
 */
import { Worker } from 'node:worker_threads';
import { compiledPath } from '../util/repo-root.js';
import { type Framed, framedBytes, readFrames } from './file-read.js';
import type { ReadDone, ReadJob } from './file-reader-worker.js';

export interface ReadBatch extends Framed {
  /** The batch body: `count` frames. */
  body: Buffer;
  /** The body is no longer needed (its request was answered): its buffer serves a later batch. */
  release(): void;
}

export class FileReader {
  private readonly worker: Worker | undefined;
  private readonly waiting = new Map<number, { resolve: (done: ReadDone) => void; reject: (err: Error) => void }>();
  private readonly free: SharedArrayBuffer[] = [];
  private nextId = 0;

  /** `threaded`: read on a thread of its own (worth its start when there are several batches). */
  constructor(threaded: boolean) {
    if (!threaded) return;
    this.worker = new Worker(compiledPath('cli', 'file-reader-worker.js'));
    this.worker.on('message', (done: ReadDone) => {
      const w = this.waiting.get(done.id);
      this.waiting.delete(done.id);
      w?.resolve(done);
    });
    this.worker.on('error', (err) => this.failAll(err));
    this.worker.on('exit', () => this.failAll(new Error('the file reader thread stopped')));
  }

  async read(files: readonly string[], sizes: readonly number[]): Promise<ReadBatch> {
    const need = framedBytes(sizes);
    const at = this.free.findIndex((b) => b.byteLength >= need);
    const buffer = at >= 0 ? this.free.splice(at, 1)[0]! : new SharedArrayBuffer(need);
    let framed: Framed;
    if (this.worker) {
      const job: ReadJob = { id: this.nextId++, files: [...files], sizes: [...sizes], buffer };
      framed = await new Promise<ReadDone>((resolve, reject) => {
        this.waiting.set(job.id, { resolve, reject });
        this.worker!.postMessage(job);
      });
    } else {
      framed = readFrames(files, sizes, new Uint8Array(buffer));
    }
    return { ...framed, body: Buffer.from(buffer, 0, framed.bytes), release: () => void this.free.push(buffer) };
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
