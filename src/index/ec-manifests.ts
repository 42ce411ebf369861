/**
 * Manifests of erasure-coded blobs stored as they streamed in (`ecm`, docs/erasure-coding.md):
 * on the first m + 1 owners of a blob's id, where its columns are (the placement key they were
 * placed by before the id was known) and the blob's metadata. Durable once put() resolves.
 */
import type { Database, RootDatabase } from 'lmdb';

export interface EcManifest {
  /** The key the columns are placed by (16 bytes). */
  placement: Buffer;
  policy: number;
  size: number;
  shardBytes: number;
  /** BLAKE3-256 of the blob (its id is the first 16 bytes). */
  checksum: Buffer;
  /** The blob's encoded labels. */
  labels: Buffer;
  /** Nanoseconds, as a decimal string (LMDB's encoding keeps no bigint). */
  createdAtNs: string;
}

export interface EcManifests {
  get(id: Buffer): EcManifest | undefined;
  /** Durable once it resolves; true when it was not here. The same manifest again writes nothing. */
  put(id: Buffer, manifest: EcManifest): Promise<boolean>;
  /** Every manifest's id and policy, in id order from `start` (inclusive), until `visit` returns false. */
  scan(start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean): void;
  remove(id: Buffer): Promise<void>;
  readonly count: number;
}

export function ecManifests(root: RootDatabase): EcManifests {
  const db: Database<EcManifest, Buffer> = root.openDB<EcManifest, Buffer>({ name: 'ecm', keyEncoding: 'binary' });
  return {
    get: (id: Buffer) => {
      const m = db.get(id.subarray(0, 16));
      return m && { ...m, placement: Buffer.from(m.placement), checksum: Buffer.from(m.checksum), labels: Buffer.from(m.labels) };
    },
    put: async (id: Buffer, manifest: EcManifest) => {
      const key = Buffer.from(id.subarray(0, 16));
      const had = db.get(key);
      // Handoff offers a manifest to owners that may hold it already: no write, no flush then.
      if (had && Buffer.from(had.placement).equals(manifest.placement) && Buffer.from(had.checksum).equals(manifest.checksum)) return false;
      await db.put(key, manifest);
      await root.flushed;
      return had === undefined;
    },
    scan: (start: Buffer | undefined, visit: (id: Buffer, policy: number) => boolean) => {
      for (const { key, value } of db.getRange(start ? { start } : {})) {
        if (!visit(key, value.policy)) return;
      }
    },
    remove: async (id: Buffer) => {
      await db.remove(Buffer.from(id.subarray(0, 16)));
      await root.flushed;
    },
    get count(): number {
      return db.getCount();
    },
  };
}
