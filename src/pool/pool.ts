/**
 * The process's worker pool (Piscina): BLAKE3 chaining values and digests of 1 MiB chunks, verified chunk reads of
 * blob files and Reed-Solomon tasks run on the same threads (the worker file exports them all).
 * It takes work only in 1 MiB pieces: a task costs ~65-130 us here, BLAKE3 of 4 KiB ~3 us, so
 * small requests are hashed inline (docs/adr/0012-hot-path.md). Sized by the settings poolThreads and
 * poolQueueMax.
 */
import { Piscina } from 'piscina';
import { SETTINGS } from '../config/settings.js';
import type { EcTask } from '../ec/worker.js';
import { blake3 } from '../hash/blake3.js';
import { compiledPath } from '../util/repo-root.js';
import { chunkCvOf } from '../hash/blake3-tree.js';
import type { CvTask, DigestTask, ReadChunkTask } from './worker.js';

export class WorkerPool {
  private readonly piscina: Piscina;

  constructor(
    threads: number = SETTINGS.poolThreads.default(),
    /** Tasks that may wait for a thread: beyond, a digest runs inline and an EC task is refused. */
    private readonly queueMax: number = SETTINGS.poolQueueMax.default(),
  ) {
    this.piscina = new Piscina({ filename: compiledPath('pool', 'worker.js'), minThreads: threads, maxThreads: threads, maxQueue: queueMax });
  }

  /** BLAKE3 of `chunk` on a worker thread; inline when the chunk is not in shared memory or the queue is full. */
  digest(chunk: Buffer): Promise<Buffer> {
    if (!(chunk.buffer instanceof SharedArrayBuffer) || this.piscina.queueSize >= this.queueMax) {
      return Promise.resolve(blake3(chunk));
    }
    const task: DigestTask = { buffer: chunk.buffer, offset: chunk.byteOffset, length: chunk.length };
    return this.piscina.run(task, { name: 'digest' }).then((d: Uint8Array) => Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  }

  /** The chunk's chaining value at `offset` of its blob (blake3-tree.ts; withRoot: its own digest after it), on a worker thread; inline as digest(). */
  chunkCv(chunk: Buffer, offset: number, withRoot: boolean): Promise<Buffer> {
    if (!(chunk.buffer instanceof SharedArrayBuffer) || this.piscina.queueSize >= this.queueMax) {
      return Promise.resolve(chunkCvOf(chunk, offset, withRoot));
    }
    const task: CvTask = { buffer: chunk.buffer, offset: chunk.byteOffset, length: chunk.length, at: offset, withRoot };
    return this.piscina.run(task, { name: 'cv' }).then((d: Uint8Array) => Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  }

  /**
   * Reads `length` bytes of file `fd` at `position` into `chunk` and checks them against `digest`,
   * on a worker thread: one hop for the read and its check, so the check runs as far ahead as
   * the read. undefined when the chunk is not in shared memory or the queue is full (the caller
   * reads on the thread pool and hashes here). `tree`: the digest is the chunk's chaining value in
   * its blob's tree (a format-2 file), else the chunk's own BLAKE3 digest.
   */
  readChunk(fd: number, chunk: Buffer, position: number, length: number, digest: Buffer, tree: boolean, root: boolean): Promise<[number, number, number]> | undefined {
    if (!(chunk.buffer instanceof SharedArrayBuffer) || this.piscina.queueSize >= this.queueMax) return undefined;
    const task: ReadChunkTask = { fd, position, length, buffer: chunk.buffer, offset: chunk.byteOffset, digest, tree, root };
    return this.piscina.run(task, { name: 'readChunk' }) as Promise<[number, number, number]>;
  }

  /** A Reed-Solomon task (src/ec/async.ts) on a worker thread: its native status. */
  ec(task: EcTask): Promise<number> {
    return this.piscina.run(task, { name: 'ec' }) as Promise<number>;
  }

  /** For metrics: threads, tasks waiting, and the share of thread time spent on tasks since start. */
  stats(): { threads: number; queueDepth: number; utilisation: number } {
    const p = this.piscina;
    return { threads: p.threads.length, queueDepth: p.queueSize, utilisation: p.utilization };
  }

  close(): Promise<void> {
    return this.piscina.destroy();
  }
}
