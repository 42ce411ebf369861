/**
 * The thread of FileReader (file-reader.ts): reads the files of a job into the job's shared
 * buffer as a batch body (readFrames), and answers once per job.
 */
import { parentPort } from 'node:worker_threads';
import { type Framed, readFrames } from './file-read.js';

export interface ReadJob {
  id: number;
  files: string[];
  sizes: number[];
  buffer: SharedArrayBuffer;
}

export interface ReadDone extends Framed {
  id: number;
}

parentPort!.on('message', (job: ReadJob) => {
  const framed = readFrames(job.files, job.sizes, new Uint8Array(job.buffer));
  parentPort!.postMessage({ id: job.id, ...framed } satisfies ReadDone);
});
