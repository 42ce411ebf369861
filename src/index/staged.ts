/**
 * A keyspace's staged values, the seam between the overlay (overlay.ts) and its keyspaces (a Map
 * by key string, or StagedIds for the blobs): what the index reads and merges through.
 */
export interface Slot<T> {
  value: T | null;
  lsn: number;
  /** Queue slots: the LMDB transaction of the record has written the value (later changes go their own way). */
  written: boolean;
  /** Queue slots: LMDB held no entry for the key when it was staged (removed before it is written, nothing is written). */
  absent?: boolean;
}

/** Staged values of one keyspace: what the index reads and merges through. */
export interface Staged<T> {
  readonly size: number;
  /** The key's slot (may be a reused object: read it before the next lookup). */
  lookup(key: Buffer): Slot<T> | undefined;
  set(key: Buffer, value: T | null, lsn: number): void;
  sortedFrom(start: Buffer | undefined): { key: Buffer; slot: Slot<T> }[];
  dropThrough(lsn: number): void;
}
