/**
 * The index journal's merge, on a thread of its own (blob-journal.ts): the node hands over each
 * id's latest committed change up to an LSN, in id order, and they are written into `blobs`, a
 * slice of the id space per transaction; the answer comes once that is flushed. lmdb-js shares
 * the process's environment with this thread, so its transactions take turns with the node's
 * commits for LMDB's one writer lock.
 *
 *   node ──{ changes }──▶ slices into blobs ──▶ flushed ──{ merged }──▶ node: journal[<= lsn]
 *                                                                       removed, table dropped
 */
import { parentPort, workerData } from 'node:worker_threads';
import { forEachChange } from './journal-record.js';
import { openIndexEnv } from './index-env.js';

export interface MergeRequest {
  /** The changes to merge (journal-record.ts layout), in id order, each id once: handed over. */
  changes: ArrayBuffer;
  count: number;
  sliceRecords: number;
}

export type MergeAnswer = { merged: number } | { error: string };

const { path } = workerData as { path: string };
const env = openIndexEnv(path);

parentPort!.on('message', (request: MergeRequest) => {
  void merge(request).then(
    (merged) => parentPort!.postMessage({ merged } satisfies MergeAnswer),
    (err: Error) => parentPort!.postMessage({ error: err.stack ?? String(err) } satisfies MergeAnswer),
  );
});

/**
 * Writes the changes into `blobs`, a slice per transaction; the journal records that held them
 * are removed by the node once this is flushed (blob-journal.ts).
 */
async function merge({ changes, count, sliceRecords }: MergeRequest): Promise<number> {
  const ids: Buffer[] = [];
  const records: (Buffer | null)[] = [];
  forEachChange(new Uint8Array(changes), (id, record) => {
    ids.push(id);
    records.push(record);
  });
  if (ids.length !== count) throw new Error(`merge: ${ids.length} changes read, ${count} sent`);
  for (let from = 0; from < ids.length; from += sliceRecords) {
    env.root.transactionSync(() => {
      for (let i = from; i < Math.min(ids.length, from + sliceRecords); i++) {
        const record = records[i]!;
        if (record === null) env.blobs.removeSync(ids[i]!);
        else env.blobs.putSync(ids[i]!, record);
      }
    });
  }
  await env.root.flushed;
  return ids.length;
}
