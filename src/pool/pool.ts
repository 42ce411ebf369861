/**
 * The node's worker pool (Piscina). It takes work only in 1 MiB chunks: a task costs ~65-130 us
 * here, BLAKE3 of 4 KiB ~3 us, so small requests are hashed inline (decisions.md §10).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { blake3 } from '../hash/blake3.js';
import type { DigestTask } from './worker.js';

/** Tasks that may wait for a thread; beyond it the caller hashes inline instead of queueing. */
const QUEUE_MAX = 256;

/** The compiled worker, also when this module runs from src/ (tests). */
function workerFilename(): string {
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return join(dirname(here), 'worker.js');
  let dir = dirname(here);
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return join(dir, 'dist', 'src', 'pool', 'worker.js');
}

export class WorkerPool {
  private readonly piscina: Piscina;

  constructor(threads: number) {
    this.piscina = new Piscina({ filename: workerFilename(), minThreads: threads, maxThreads: threads, maxQueue: QUEUE_MAX });
  }

  /** BLAKE3 of `chunk` on a worker thread; inline when the chunk is not in shared memory or the queue is full. */
  digest(chunk: Buffer): Promise<Buffer> {
    if (!(chunk.buffer instanceof SharedArrayBuffer) || this.piscina.queueSize >= QUEUE_MAX) {
      return Promise.resolve(blake3(chunk));
    }
    const task: DigestTask = { buffer: chunk.buffer, offset: chunk.byteOffset, length: chunk.length };
    return this.piscina.run(task).then((d: Uint8Array) => Buffer.from(d.buffer, d.byteOffset, d.byteLength));
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
