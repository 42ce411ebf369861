/**
 * The index commit of a group of plain 4 KiB puts (BlobIndex.commit): in a child transaction on
 * the event loop, or gathered and queued to lmdb-js's write thread (addsOnly). What matters on a
 * loaded node is the event loop's share, so this reports the main thread's CPU per record
 * (/proc/self/task/<pid>/stat) as well as the process's, over an index preloaded with
 * PRELOAD entries (random 16-byte keys, as BLAKE3 ids are). The sides alternate, ROUNDS each.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTINGS } from '../../src/config/settings.js';
import { BlobIndex, type Checkpoint } from '../../src/index/blob-index.js';
import type { IndexEntry } from '../../src/index/entry.js';
import { emit, envInt, log, median, removeDir, round, tempDir } from './lib.js';

const BENCH = 'index-commit';
const PRELOAD = envInt('BENCH_INDEX_PRELOAD', 200_000);
const GROUP = envInt('BENCH_INDEX_GROUP', 64);
const GROUPS = envInt('BENCH_INDEX_GROUPS', 400);
const ROUNDS = envInt('BENCH_REPEATS', 3);

/** The main thread's user + system CPU in microseconds (clock ticks of 10 ms: measure seconds, not ms). */
function mainThreadCpuUs(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const CHECKSUM = randomBytes(32);
const NO_LABELS = Buffer.alloc(0);
const entryOf = (n: number): IndexEntry => ({
  location: 1, policy: 1, segment: 1, offset: n * 4224, size: 4096, createdAtNs: BigInt(n), checksum: CHECKSUM, labels: NO_LABELS,
});

async function main(): Promise<void> {
  const dir = tempDir('index-commit');
  const index = new BlobIndex(join(dir, 'index'), { pageBytes: SETTINGS.indexPageBytes.default() });
  let lsn = 1;
  const commitGroup = (ids: Buffer[], addsOnly: boolean): Promise<void> => {
    const checkpoint: Checkpoint = { segment: 1, offset: lsn * 4224, nextLsn: lsn + ids.length };
    lsn += ids.length;
    return index.commit(checkpoint, (w) => {
      for (const id of ids) {
        w.put(id, entryOf(lsn));
        w.space(1).totalBytes += 4224;
      }
    }, addsOnly);
  };
  try {
    for (let done = 0; done < PRELOAD; done += 1000) await commitGroup(Array.from({ length: 1000 }, () => randomBytes(16)), true);
    await index.flushed();
    log(`${BENCH}: preloaded ${PRELOAD} entries; ${ROUNDS} rounds of ${GROUPS} commits of ${GROUP} records per side`);
    const runs: Record<'transaction' | 'gathered', { mainUs: number; processUs: number }[]> = { transaction: [], gathered: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of ['transaction', 'gathered'] as const) {
        const groups = Array.from({ length: GROUPS }, () => Array.from({ length: GROUP }, () => randomBytes(16)));
        const main0 = mainThreadCpuUs();
        const cpu0 = process.cpuUsage();
        for (const ids of groups) await commitGroup(ids, side === 'gathered');
        await index.flushed();
        const cpu = process.cpuUsage(cpu0);
        const records = GROUPS * GROUP;
        runs[side].push({ mainUs: (mainThreadCpuUs() - main0) / records, processUs: (cpu.user + cpu.system) / records });
      }
    }
    for (const side of ['transaction', 'gathered'] as const) {
      emit({
        bench: BENCH, metric: `${side}_main_thread_us_per_record`, value: round(median(runs[side].map((r) => r.mainUs)), 2), unit: 'us',
        process_us_per_record: round(median(runs[side].map((r) => r.processUs)), 2), group: GROUP, preload: PRELOAD, runs: runs[side].map((r) => round(r.mainUs, 2)),
      });
    }
    const ratio = median(runs.gathered.map((r, i) => r.mainUs / runs.transaction[i]!.mainUs));
    emit({ bench: BENCH, metric: 'gathered_vs_transaction_main_thread', value: round(ratio), unit: 'ratio' });
  } finally {
    await index.close();
    removeDir(dir);
  }
}

await main();
