/**
 * What a queue of blobs kept in the index answers a reader (the replication queue, the EC repair
 * queue): how many wait, a page of them in id order, one entry, and its removal once done.
 */
export interface BlobQueue<E> {
  readonly depth: number;
  /** Entries by id after `after` (exclusive), at most `limit`. */
  page(limit: number, after?: Buffer): { id: Buffer; entry: E }[];
  get(id: Buffer): E | undefined;
  remove(id: Buffer): Promise<void>;
}
