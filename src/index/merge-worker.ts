/**
 * The index journal's merge, on a thread of its own (blob-journal.ts): the node hands over a
 * frozen table of changes (each id's latest), and they are sorted and written into `blobs` in id
 * order, a slice of the id space per transaction; the answer comes once that is flushed. lmdb-js shares
 * the process's environment with this thread, so its transactions take turns with the node's
 * commits for LMDB's one writer lock.
 *
 *   node ──{ frozen table }──▶ sort ──▶ slices into blobs ──▶ flushed ──{ merged }──▶ node:
 *                                          journal records merged removed, the frozen table emptied
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type ExportedSlots, ExportedEntries } from './id-table.js';
import { openIndexEnv } from './index-env.js';

/** A frozen table's entries (IdTable.exportSlots: each id once, in no order), handed over. */
export interface MergeRequest extends ExportedSlots {
  sliceRecords: number;
  /** Wait between slices, so the node's own commits get LMDB's writer lock (ms). */
  slicePauseMs: number;
}

export type MergeAnswer = { merged: number } | { error: string };

const { path } = workerData as { path: string };
// The node created the index before this thread starts: it keeps the page size it was made with.
const env = openIndexEnv(path);

parentPort!.on('message', (request: MergeRequest) => {
  void merge(request).then(
    (merged) => parentPort!.postMessage({ merged } satisfies MergeAnswer),
    (err: Error) => parentPort!.postMessage({ error: err.stack ?? String(err) } satisfies MergeAnswer),
  );
});

/**
 * Writes the changes into `blobs` in id order, a slice per transaction; the journal records that
 * held them are removed by the node once this is flushed (blob-journal.ts).
 */
async function merge(request: MergeRequest): Promise<number> {
  // In id order, so that each slice is a run of neighbouring ids: its leaf pages take many records each.
  // Copied into this thread's own memory first, in one pass each: lmdb-js takes a value's address
  // from its ArrayBuffer, which the table's shared memory is not (id-table.ts).
  const changes = new ExportedEntries({ ids: new Uint8Array(request.ids), valueAt: new Int32Array(request.valueAt), values: new Uint8Array(request.values) });
  for (let from = 0; from < changes.count; from += request.sliceRecords) {
    // A mutex hands no turns: the thread that releases it takes it again before a waiter wakes.
    if (from > 0 && request.slicePauseMs > 0) await new Promise((resolve) => setTimeout(resolve, request.slicePauseMs));
    env.root.transactionSync(() => {
      for (let i = from; i < Math.min(changes.count, from + request.sliceRecords); i++) {
        const record = changes.record(i);
        if (record === null) env.blobs.removeSync(changes.id(i));
        else env.blobs.putSync(changes.id(i), record);
      }
    });
  }
  await env.root.flushed;
  return changes.count;
}
