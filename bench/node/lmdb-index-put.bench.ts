/**
 * LMDB index put (lmdb-js, the index's options: no compression, overlappingSync): 16-byte keys,
 * 64-byte values. Batched: 1000 async puts issued together share one commit (await the last);
 * awaited: each put its own commit, awaited before the next; awaited + flushed: also waits for the
 * flush to disk (what a durable 2xx needs); putSync: a synchronous transaction per put.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { open } from 'lmdb';
import { emit, removeDir, round, tempDir } from './lib.js';
import { runMicro, type MicroTask } from './micro.js';

const BENCH = 'lmdb-index-put';
const BATCH = 1000;

async function main(): Promise<void> {
  const dir = tempDir('lmdb');
  const root = open({ path: join(dir, 'index'), compression: false, maxDbs: 8, overlappingSync: true, mapSize: 1024 ** 3 });
  const db = root.openDB<Buffer, Buffer>({ name: 'blobs', keyEncoding: 'binary', encoding: 'binary' });
  const value = randomBytes(64);
  const key = (): Buffer => randomBytes(16);
  try {
    const tasks: MicroTask[] = [
      {
        name: 'batched async',
        opsPerIteration: BATCH,
        fn: async () => {
          let last: Promise<boolean> | undefined;
          for (let i = 0; i < BATCH; i++) last = db.put(key(), value);
          await last;
        },
      },
      {
        name: 'batched async + flushed',
        opsPerIteration: BATCH,
        fn: async () => {
          let last: Promise<boolean> | undefined;
          for (let i = 0; i < BATCH; i++) last = db.put(key(), value);
          await last;
          await root.flushed;
        },
      },
      { name: 'awaited single', fn: () => db.put(key(), value) },
      {
        name: 'awaited single + flushed',
        fn: async () => {
          await db.put(key(), value);
          await root.flushed;
        },
      },
      { name: 'putSync', fn: () => db.putSync(key(), value) },
    ];
    const results = await runMicro(tasks);
    for (const r of results) {
      emit({
        bench: BENCH, metric: r.name.replaceAll(' + ', '_').replaceAll(' ', '_'), value: round(r.opsPerS, 0), unit: 'puts/s',
        us_per_put: round(r.usPerOp, 3), rme_pct: round(r.rmePercent, 1), ...(r.name.startsWith('batched') ? { batch: BATCH } : {}),
      });
    }
  } finally {
    await root.close();
    removeDir(dir);
  }
}

await main();
