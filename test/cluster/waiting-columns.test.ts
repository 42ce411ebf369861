/**
 * WaitingColumns, the holder's end of a streamed EC store: a complete column waits for the seal
 * that names its blob; the seal commits it only when it describes that column; a column without
 * a seal within the TTL, a discarded one and every one at close are dropped (aborted), never
 * committed.
 */
import { describe, expect, it } from 'vitest';
import type { ColumnHeader, ColumnWriter } from '../../src/cluster/column-writer.js';
import { WaitingColumns } from '../../src/cluster/waiting-columns.js';
import { silentLogger } from '../../src/log/logger.js';
import { waitFor } from '../helpers/wait.js';

const P = Buffer.from('0f'.repeat(16), 'hex');
const ID = Buffer.from('a1'.repeat(16), 'hex');

function header(index: number, over: Partial<ColumnHeader> = {}): ColumnHeader {
  return {
    id: ID, index, policy: 4, shardBytes: 1 << 20, blobBytes: 70 << 20, blobChecksum: Buffer.alloc(32, 0xa1), blobLabels: Buffer.alloc(0), createdAtNs: 1n, placement: P, ...over,
  };
}

/** A column writer that records what happens to it. */
function fakeWriter(index: number): ColumnWriter & { committed: ColumnHeader[]; aborted: number } {
  const w = {
    header: { ...header(index), id: P, blobChecksum: Buffer.alloc(32) },
    committed: [] as ColumnHeader[],
    aborted: 0,
    commit(h: ColumnHeader) {
      this.committed.push(h);
      return Promise.resolve({ created: true });
    },
    abort() {
      this.aborted++;
      return Promise.resolve();
    },
  };
  return w as unknown as ColumnWriter & { committed: ColumnHeader[]; aborted: number };
}

const log = silentLogger();

describe('WaitingColumns', () => {
  it('commits a waiting column with the header its seal brings, once', async () => {
    const waiting = new WaitingColumns(60_000, log);
    const w = fakeWriter(2);
    waiting.hold(P, 2, w);
    expect(waiting.size).toBe(1);
    expect(await waiting.seal(P, 2, header(2))).toEqual({ created: true });
    expect(w.committed[0]!.id.equals(ID)).toBe(true);
    expect(waiting.size).toBe(0);
    await expect(waiting.seal(P, 2, header(2))).rejects.toMatchObject({ kind: 'not_found' });
  });

  it('refuses a seal that describes another column, and keeps the column waiting', async () => {
    const waiting = new WaitingColumns(60_000, log);
    const w = fakeWriter(1);
    waiting.hold(P, 1, w);
    await expect(waiting.seal(P, 1, header(1, { blobBytes: 71 << 20 }))).rejects.toMatchObject({ kind: 'invalid_argument' });
    await expect(waiting.seal(P, 1, header(2))).rejects.toMatchObject({ kind: 'invalid_argument' });
    await expect(waiting.seal(P, 1, header(1, { placement: ID }))).rejects.toMatchObject({ kind: 'invalid_argument' });
    expect(w.committed).toHaveLength(0);
    expect(waiting.size).toBe(1);
    waiting.close();
    expect(w.aborted).toBe(1);
  });

  it('drops a column whose seal does not come within the TTL, and one discarded', async () => {
    const waiting = new WaitingColumns(50, log);
    const late = fakeWriter(0);
    const given = fakeWriter(3);
    waiting.hold(P, 0, late);
    waiting.hold(P, 3, given);
    waiting.discard(P, 3);
    expect(given.aborted).toBe(1);
    await waitFor(() => late.aborted === 1, { what: 'the column without a seal dropped' });
    expect(waiting.size).toBe(0);
    await expect(waiting.seal(P, 0, header(0))).rejects.toMatchObject({ kind: 'not_found' });
    expect(late.committed).toHaveLength(0);
  });

  it('a column streamed again under the same key replaces the one before', () => {
    const waiting = new WaitingColumns(60_000, log);
    const first = fakeWriter(5);
    const second = fakeWriter(5);
    waiting.hold(P, 5, first);
    waiting.hold(P, 5, second);
    expect(first.aborted).toBe(1);
    expect(waiting.size).toBe(1);
    waiting.close();
    expect(second.aborted).toBe(1);
  });
});
