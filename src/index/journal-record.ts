/**
 * A record of the index journal (blob-journal.ts): the blob record changes of one index commit,
 * one after another.
 *
 *   change: [kind u8: 1 put, 0 removal] [id 16 bytes] [length u32 LE] [record: entry.ts layout, length bytes]
 */

/** Bytes before a change's record. */
export const CHANGE_HEAD_BYTES = 1 + 16 + 4;

/** Calls `visit` with each change of a journal record (views of it). */
export function forEachChange(value: Uint8Array, visit: (id: Buffer, record: Buffer | null) => void): void {
  const b = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  for (let at = 0; at < b.length; ) {
    const kind = b[at]!;
    const length = b.readUInt32LE(at + 17);
    const id = b.subarray(at + 1, at + 17);
    at += CHANGE_HEAD_BYTES;
    visit(id, kind === 1 ? b.subarray(at, at + length) : null);
    at += length;
  }
}

/**
 * forEachChange by offsets: `visit(src, idAt, recordAt, length, arg)` with `length` -1 for a
 * removal; no views are made.
 */
export function forEachChangeAt<T>(src: Buffer, visit: (src: Buffer, idAt: number, recordAt: number, length: number, arg: T) => void, arg: T): void {
  for (let at = 0; at < src.length; ) {
    const kind = src[at]!;
    const length = src.readUInt32LE(at + 17);
    visit(src, at + 1, at + CHANGE_HEAD_BYTES, kind === 1 ? length : -1, arg);
    at += CHANGE_HEAD_BYTES + length;
  }
}

/** Writes a change's head at `at`; its record (`length` bytes) goes right after. */
export function writeChangeHead(out: Buffer, at: number, kind: number, id: Uint8Array, length: number): void {
  out[at] = kind;
  for (let i = 0; i < 16; i++) out[at + 1 + i] = id[i]!;
  out.writeUInt32LE(length, at + 17);
}

/** Writes a whole change (a put of `record`, or a removal when null) at `at`; returns where the next goes. */
export function writeChange(out: Buffer, at: number, id: Uint8Array, record: Uint8Array | null): number {
  const length = record?.length ?? 0;
  writeChangeHead(out, at, record === null ? 0 : 1, id, length);
  if (record !== null) out.set(record, at + CHANGE_HEAD_BYTES);
  return at + CHANGE_HEAD_BYTES + length;
}
