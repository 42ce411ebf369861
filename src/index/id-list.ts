/**
 * A page of the ids held here, in byte order: whole blobs and blobs a shard column of which is
 * held here, each once, staged ones included.
 */
import type { IndexEntry } from './entry.js';
import type { Staged } from './staged.js';

export interface ListPage {
  ids: Buffer[];
  hasMore: boolean;
}

const FF = Buffer.from([0xff]);

/**
 * Ids in byte order after `after` (exclusive) whose hex form starts with `prefix`, from the blob
 * records' keys and the shard columns' (an id and a column index) from a start key on.
 */
export function listPage(
  prefix: string, after: Buffer | undefined, limit: number,
  blobKeys: (start: Buffer) => Iterator<Buffer>, shardKeys: (start: Buffer) => Iterator<Buffer>,
): ListPage {
  const prefixStart = Buffer.from(prefix.padEnd(32, '0').slice(0, 32), 'hex');
  // A cursor before the prefix's first id (from a listing of another prefix, or none) starts at the prefix.
  const from = after && Buffer.compare(after, prefixStart) >= 0 ? after : undefined;
  const start = from ?? prefixStart;
  // Column keys (id + index) sort right after their id: from the id's last column on.
  const shardStart = from ? Buffer.concat([from, FF]) : start;
  const blobs = blobKeys(start);
  const shards = shardKeys(shardStart);
  const next = (it: Iterator<Buffer>): Buffer | undefined => {
    const r = it.next();
    return r.done ? undefined : Buffer.from(r.value.subarray(0, 16));
  };
  let b = next(blobs);
  let s = next(shards);
  const ids: Buffer[] = [];
  let hasMore = false;
  for (;;) {
    if (from && b?.equals(from)) b = next(blobs);
    const cmp = b && s ? Buffer.compare(b, s) : b ? -1 : s ? 1 : 0;
    if (!b && !s) break;
    const id = cmp <= 0 ? b! : s!;
    if (!id.toString('hex').startsWith(prefix)) break;
    if (ids.length === limit) {
      hasMore = true;
      break;
    }
    ids.push(id);
    // Skip every other key of the same id (the blob and its columns, or several columns).
    while (b && b.equals(id)) b = next(blobs);
    while (s && s.equals(id)) s = next(shards);
  }
  return { ids, hasMore };
}

export function* keysOf(entries: Iterable<{ key: Buffer }>): Generator<Buffer> {
  for (const { key } of entries) yield key;
}

/** The keys of an LMDB range from `start` merged with the staged ones (a staged removal hides its key). */
export function* mergedKeys(base: Iterable<Buffer>, staged: Staged<IndexEntry>, start: Buffer): Generator<Buffer> {
  if (staged.size === 0) {
    yield* base;
    return;
  }
  const extra = staged.sortedFrom(start);
  let i = 0;
  for (const key of base) {
    for (; i < extra.length && Buffer.compare(extra[i]!.key, key) <= 0; i++) {
      if (extra[i]!.slot.value !== null) yield extra[i]!.key;
    }
    if (i > 0 && extra[i - 1]!.key.equals(key)) continue;
    yield key;
  }
  for (; i < extra.length; i++) if (extra[i]!.slot.value !== null) yield extra[i]!.key;
}
