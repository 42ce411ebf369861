/** The index journal's table (src/index/id-table.ts): latest record per id, in id order on demand. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type ExportedSlots, ExportedEntries, IdTable } from '../../src/index/id-table.js';

/** Visits the entries of exported slots, in the order ExportedEntries gives them. */
function forEachExported(slots: ExportedSlots, visit: (id: Buffer, record: Buffer | null) => void): void {
  const entries = new ExportedEntries(slots);
  for (let i = 0; i < entries.count; i++) visit(entries.id(i), entries.record(i));
}

const id = (...head: number[]): Buffer => Buffer.concat([Buffer.from(head), Buffer.alloc(16 - head.length, 0x11)]);
const rec = (text: string): Buffer => Buffer.from(text);

describe('IdTable', () => {
  it('keeps the latest record or removal of each id, and says when an id is not there', () => {
    const t = new IdTable(4);
    t.set(id(1), rec('one'), 5);
    t.set(id(2), rec('two'), 6);
    t.set(id(1), rec('uno'), 7);
    t.set(id(3), null, 8);
    expect(t.get(id(1))?.toString()).toBe('uno');
    expect(t.get(id(2))?.toString()).toBe('two');
    expect(t.get(id(3))).toBeNull();
    expect(t.get(id(4))).toBeUndefined();
    expect(t.lsnOf(id(1))).toBe(7);
    expect(t.lsnOf(id(4))).toBe(-1);
    expect(t.size).toBe(3);
  });

  it('answers from a scratch copy (one Buffer per length, valid until the next get), a long record from a view of its own', () => {
    const t = new IdTable(4);
    t.set(id(1), rec('first'), 1);
    t.set(id(2), rec('other'), 2);
    const long = randomBytes(5000);
    t.set(id(3), long, 3);
    const a = t.get(id(1))!;
    expect(a.toString()).toBe('first');
    const b = t.get(id(2))!;
    // Same length, same object: the next get wrote over the first answer.
    expect(b).toBe(a);
    expect(a.toString()).toBe('other');
    const c = t.get(id(3))!;
    expect(c.equals(long)).toBe(true);
    expect(t.get(id(1))!.toString()).toBe('first');
    expect(c.equals(long)).toBe(true);
  });

  it('grows past its first size without losing anything (ids differing only past their first word too)', () => {
    const t = new IdTable(16);
    const ids: Buffer[] = [];
    for (let i = 0; i < 5000; i++) ids.push(i % 2 === 0 ? randomBytes(16) : Buffer.concat([Buffer.from([9, 9, 9, 9]), randomBytes(12)]));
    ids.forEach((x, i) => t.set(x, rec(`r${i}`), i));
    expect(t.size).toBe(5000);
    ids.forEach((x, i) => expect(t.get(x)?.toString()).toBe(`r${i}`));
  });

  it('visits ids in byte order from a start (inclusive), across buckets', () => {
    const t = new IdTable();
    const ids = Array.from({ length: 3000 }, () => randomBytes(16));
    ids.forEach((x, i) => t.set(x, i % 7 === 0 ? null : rec(`r${i}`), i));
    const sorted = [...ids].sort(Buffer.compare);
    const all = [...t.from(undefined)].map((e) => Buffer.from(e.id));
    expect(all).toEqual(sorted);
    const start = sorted[1234]!;
    const tail = [...t.from(start)].map((e) => Buffer.from(e.id));
    expect(tail).toEqual(sorted.slice(1234));
    // A start between two ids begins at the next one.
    const between = Buffer.from(start);
    between[15] = between[15]! ^ 0x01;
    const expected = sorted.filter((x) => Buffer.compare(x, between) >= 0);
    expect([...t.from(between)].map((e) => Buffer.from(e.id))).toEqual(expected);
    // Records and removals come with their ids.
    for (const e of t.from(undefined)) {
      const i = ids.findIndex((x) => x.equals(e.id));
      expect(e.record === null ? null : e.record.toString()).toBe(i % 7 === 0 ? null : `r${i}`);
      expect(e.lsn).toBe(i);
    }
  });

  it('hands them over in id order (what the merge writes), ids that share their first bytes too', () => {
    const t = new IdTable();
    const ids = Array.from({ length: 3000 }, () => randomBytes(16));
    // Crowded buckets: many ids with the same first two bytes, some alike up to the last byte.
    for (let i = 0; i < 200; i++) ids.push(Buffer.concat([Buffer.from([0xab, 0xcd]), randomBytes(14)]));
    for (let i = 0; i < 20; i++) ids.push(Buffer.concat([Buffer.alloc(15, 0x42), Buffer.from([255 - i * 7])]));
    ids.forEach((x, i) => t.set(x, i % 3 === 0 ? null : rec(`r${i}`), i));
    const seen: string[] = [];
    forEachExported(t.exportSlots(), (id) => seen.push(id.toString('hex')));
    expect(seen).toEqual([...ids].sort(Buffer.compare).map((x) => x.toString('hex')));
    const entries = new ExportedEntries(t.exportSlots());
    expect(entries.count).toBe(ids.length);
    const first = ids.indexOf([...ids].sort(Buffer.compare)[0]!);
    expect(entries.record(0)?.toString() ?? null).toBe(first % 3 === 0 ? null : `r${first}`);
  });

  it('hands its entries to another thread in shared memory (no copy), and empties in place', () => {
    const t = new IdTable();
    const ids = Array.from({ length: 500 }, () => randomBytes(16));
    ids.forEach((x, i) => t.set(x, i % 5 === 0 ? null : rec(`r${i}`), i));
    t.set(ids[1]!, rec('again'), 900);
    const slots = t.exportSlots();
    for (const a of [slots.ids, slots.valueAt, slots.values]) expect(a.buffer).toBeInstanceOf(SharedArrayBuffer);
    const seen = new Map<string, string | null>();
    forEachExported(slots, (id, record) => seen.set(id.toString('hex'), record === null ? null : record.toString()));
    expect(seen.size).toBe(500);
    ids.forEach((x, i) => expect(seen.get(x.toString('hex'))).toBe(i === 1 ? 'again' : i % 5 === 0 ? null : `r${i}`));
    // They are the table's own: emptied with it (the journal clears a table only once its merge is done).
    t.clear();
    expect(t.size).toBe(0);
    expect(t.get(ids[2]!)).toBeUndefined();
    expect([...t.from(undefined)]).toEqual([]);
    let after = 0;
    forEachExported(slots, () => after++);
    expect(after).toBe(0);
    t.set(ids[3]!, rec('new'), 1000);
    expect(t.get(ids[3]!)?.toString()).toBe('new');
    expect(t.size).toBe(1);
  });
});
