/**
 * The rows an EC store encodes into (src/ec/striper.ts RowPool) come from the node's pool of 1 MiB
 * buffers where it has them, and go back to it once the store is over: a store of a few MiB then
 * allocates nothing. A row a sink still holds at the end is not given back.
 */
import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../src/pool/buffer-pool.js';
import { CELL_BYTES, StripeLayout } from '../../src/ec/layout.js';
import { encodeRows, memorySource, RowPool } from '../../src/ec/striper.js';
import { encode } from '../../src/ec/codec.js';
import { patternBytes } from '../helpers/blobs.js';

describe('the rows of an EC encode', () => {
  it('are borrowed from the node\'s pool, encode the same as fresh ones, and go back at the end', async () => {
    const pool = new BufferPool(32);
    // One stripe whose shards are shorter than a cell: one row of 75,000-byte cells in 1 MiB buffers.
    const layout = new StripeLayout(4, 2, CELL_BYTES, 300_000);
    const data = patternBytes(layout.blobBytes, 31);
    const rows = new RowPool(layout.shards, CELL_BYTES, 2, pool);
    const seen = new Set<Buffer>();
    for await (const row of encodeRows(memorySource(data), layout, rows.take)) {
      for (const b of row.buffers) seen.add(b);
      expect(row.buffers.every((b) => b.buffer instanceof SharedArrayBuffer), 'cells in the pool\'s shared buffers').toBe(true);
      const parity = [0, 1].map(() => Buffer.alloc(row.cells[0]!.length));
      encode(4, 2, row.cells.slice(0, 4).map((c) => Buffer.from(c)), parity);
      expect(row.cells.slice(4).map((c) => Buffer.from(c))).toEqual(parity);
      rows.handOut(row.buffers, 1);
      rows.release(row.buffers);
    }
    expect(seen.size).toBe(6);
    expect(pool.inUse).toBe(6);
    rows.close();
    expect(pool.inUse).toBe(0);
  });

  it('keeps back a row still out at the end, and allocates its own when the pool is empty', async () => {
    const pool = new BufferPool(8);
    const rows = new RowPool(6, CELL_BYTES, 2, pool);
    const [first, second] = [await rows.take(), await rows.take()];
    // Eight of the pool's buffers for twelve cells: the last four are the row pool's own.
    expect([...first, ...second].filter((b) => b.buffer instanceof SharedArrayBuffer)).toHaveLength(8);
    expect(pool.inUse).toBe(8);
    rows.handOut(first, 1);
    rows.release(first);
    rows.handOut(second, 1);
    rows.close();
    // The first row's six went back; the second's two are still held by its sink.
    expect(pool.inUse).toBe(2);
  });
});
