/**
 * Whole-index scans by background work (anti-entropy's trees, handoff's count of copies not
 * owned) a slice at a time: one synchronous scan of a 400k-id index held a node's event loop for
 * about 1 s here, and the cluster's nodes ran theirs at the same moments.
 */

/** Ids visited between two turns of the event loop. */
export const SCAN_SLICE_IDS = 8192;

/** One of the index's scans: ids from `start` (inclusive) in order, until `visit` returns false. */
export type IndexScan<A extends unknown[]> = (start: Buffer | undefined, visit: (id: Buffer, ...rest: A) => boolean) => void;

/**
 * Visits every id `scan` yields, SCAN_SLICE_IDS per turn of the event loop, until `visit`
 * returns false: each slice starts again after the last id of the one before (entries of that
 * id are skipped: the visitors count an id once, an EC blob's columns included). Ids stored
 * meanwhile may be seen or not: what a scan finds is the index during the scan.
 */
export async function scanInSlices<A extends unknown[]>(
  scan: IndexScan<A>,
  visit: (id: Buffer, ...rest: A) => boolean | void,
  /** Told the last id visited each time the scan lets the event loop turn. */
  paused?: (at: Buffer) => void,
): Promise<void> {
  let from: Buffer | undefined;
  for (;;) {
    let seen = 0;
    let skipping = from !== undefined;
    let next: Buffer | undefined;
    let stopped = false;
    const resume = from;
    scan(resume, (id, ...rest) => {
      if (skipping && id.equals(resume!)) return true;
      skipping = false;
      if (visit(id, ...rest) === false) {
        stopped = true;
        return false;
      }
      if (++seen < SCAN_SLICE_IDS) return true;
      next = Buffer.from(id);
      return false;
    });
    if (stopped || next === undefined) return;
    from = next;
    paused?.(next);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
