/**
 * The EC repair queue (`ecq`): the blobs whose shard columns need repair (a store that lost up to
 * m shard stores, a read or scrub that found one missing or corrupt), kept until the repair is
 * done. Each change is a transaction of its own, durable once it resolves.
 */
import type { Database, RootDatabase } from 'lmdb';
import type { BlobQueue } from './blob-queue.js';

/** A blob whose shard columns need repair: its policy, and when it was queued. */
export interface EcRepairEntry {
  policy: number;
  queuedAtMs: number;
  /** Why (a failed shard store, a missing or corrupt column found by a read or the scrubber). */
  reason: string;
  /** Bytes the repair is estimated to rebuild (0: not known until it looks). */
  bytes?: number;
  /** The key the blob's columns are placed by, when not its id (a blob stored as it streamed in). */
  placement?: Buffer;
}

/** The EC repair queue (durable once put() resolves). */
export interface EcRepairQueue extends BlobQueue<EcRepairEntry> {
  put(id: Buffer, entry: EcRepairEntry): Promise<void>;
}

export function ecRepairQueue(root: RootDatabase): EcRepairQueue {
  const db: Database<EcRepairEntry, Buffer> = root.openDB<EcRepairEntry, Buffer>({ name: 'ecq', keyEncoding: 'binary' });
  return {
    get depth(): number {
      return db.getCount();
    },
    page: (limit: number, after?: Buffer) => {
      const out: { id: Buffer; entry: EcRepairEntry }[] = [];
      for (const { key, value } of db.getRange({ start: after, limit: limit + 1 })) {
        if (after && (key as Buffer).equals(after)) continue;
        if (out.length === limit) break;
        out.push({ id: Buffer.from(key as Buffer), entry: value });
      }
      return out;
    },
    get: (id: Buffer) => db.get(id),
    put: async (id: Buffer, entry: EcRepairEntry) => {
      await db.put(id, entry);
      await root.flushed;
    },
    remove: async (id: Buffer) => void (await db.remove(id)),
  };
}
