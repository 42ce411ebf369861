/**
 * Keys that sort by time: when (Unix ms, 8 bytes big-endian) ‖ id. A table keyed so beside a
 * table keyed by id is pruned from its oldest entries, reading only those, a page per
 * transaction, rather than by a scan of every entry on the event loop.
 */
import type { Database, RootDatabase } from 'lmdb';

export const TIME_BYTES = 8;
/** Keys a prune removes in one transaction (a few ms of the event loop). */
const PRUNE_PAGE = 1024;

export function timeKey(atMs: number, id?: Buffer): Buffer {
  const at = Math.max(0, Math.floor(atMs));
  const key = Buffer.alloc(TIME_BYTES + (id?.length ?? 0));
  key.writeUInt32BE(Math.floor(at / 2 ** 32), 0);
  key.writeUInt32BE(at % 2 ** 32, 4);
  id?.copy(key, TIME_BYTES);
  return key;
}

export function timeOf(key: Buffer): number {
  return key.readUInt32BE(0) * 2 ** 32 + key.readUInt32BE(4);
}

/**
 * Removes the keys of `byTime` from the oldest on, while `take` (asked once per key, in order)
 * says so; `each` runs inside the transaction that removes its key, to remove what the key
 * stands for where it still does.
 */
export async function pruneOldest(
  root: RootDatabase, byTime: Database<boolean, Buffer>, take: (atMs: number) => boolean, each: (id: Buffer, atMs: number) => void,
): Promise<void> {
  for (;;) {
    const keys: Buffer[] = [];
    for (const key of byTime.getKeys({ limit: PRUNE_PAGE })) {
      if (!take(timeOf(key))) break;
      keys.push(Buffer.from(key));
    }
    if (keys.length === 0) return;
    await root.transaction(() => {
      for (const key of keys) {
        each(key.subarray(TIME_BYTES), timeOf(key));
        byTime.removeSync(key);
      }
    });
    if (keys.length < PRUNE_PAGE) return;
  }
}
