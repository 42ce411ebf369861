/**
 * Sequential reader of a segment's records, for recovery (from the checkpoint on) and compaction
 * (a whole sealed segment). It stops at the first bytes that are not a whole record with the
 * expected sequence number: a torn or never-written tail. PAD records are stepped over.
 */
import type { FileHandle } from 'node:fs/promises';
import { blake3 } from '../hash/blake3.js';
import { HEADER_BYTES, isInlineRecord, type RecordHeader, RecordType, readHeader, recordLength } from './record.js';

export interface ScannedRecord {
  header: RecordHeader;
  labels: Buffer;
  /** Inline bytes; a view into the scan buffer, valid until the callback returns. */
  data: Buffer | undefined;
  offset: number;
  length: number;
}

/** A scan reads a segment this much at a time (or one largest record, if larger: scanBufferBytes). */
const SCAN_READ_BYTES = 8 * 1024 * 1024;

/** The scan buffer of recovery and compaction: room for SCAN_READ_BYTES and for the largest record. */
export function scanBufferBytes(largestRecord: number): number {
  return Math.max(SCAN_READ_BYTES, largestRecord);
}

export interface ScanOptions {
  /** First lsn accepted: exactly this one when `exact`, else any at least this. */
  firstLsn: number;
  exact: boolean;
  /** Verify inline data against its checksum (recovery); a mismatch ends the scan. */
  verifyData: boolean;
  bufferBytes: number;
}

export interface ScanEnd {
  /** Offset just past the last whole record. */
  endOffset: number;
  /** Sequence number of the last whole record, or 0 when there was none. */
  lastLsn: number;
}

export async function scanSegment(
  handle: FileHandle,
  sizeBytes: number,
  startOffset: number,
  options: ScanOptions,
  onRecord: (record: ScannedRecord) => Promise<void> | void,
): Promise<ScanEnd> {
  const buf = Buffer.allocUnsafe(options.bufferBytes);
  let bufStart = startOffset;
  let bufLength = 0;
  let at = startOffset;
  let lastLsn = 0;
  for (;;) {
    let rel = at - bufStart;
    // Refill when the next header, or the whole record, is not in the buffer.
    const need = async (bytes: number): Promise<boolean> => {
      if (rel + bytes <= bufLength) return true;
      if (at + bytes > sizeBytes || bytes > buf.length) return false;
      const { bytesRead } = await handle.read(buf, 0, Math.min(buf.length, sizeBytes - at), at);
      bufStart = at;
      bufLength = bytesRead;
      rel = 0;
      return bytes <= bufLength;
    };
    if (!(await need(HEADER_BYTES))) break;
    let header = readHeader(buf, rel, bufLength - rel);
    if (header && bufLength - rel < HEADER_BYTES + header.labelsLength) {
      if (!(await need(HEADER_BYTES + header.labelsLength))) break;
      header = readHeader(buf, rel, bufLength - rel);
    }
    if (!header) break;
    const expected = lastLsn === 0 ? options.firstLsn : lastLsn + 1;
    if (lastLsn === 0 && !options.exact ? header.lsn < expected : header.lsn !== expected) break;
    const length = recordLength(header.labelsLength, header.dataLength);
    if (!(await need(length))) break;
    if (header.type === RecordType.PAD) {
      lastLsn = header.lsn;
      at += length;
      continue;
    }
    const labels = Buffer.from(buf.subarray(rel + HEADER_BYTES, rel + HEADER_BYTES + header.labelsLength));
    let data: Buffer | undefined;
    if (isInlineRecord(header.type)) {
      data = buf.subarray(rel + HEADER_BYTES + header.labelsLength, rel + HEADER_BYTES + header.labelsLength + header.dataLength);
      if (data.length !== header.size) break;
      if (options.verifyData && !blake3(data).equals(header.checksum)) break;
    }
    await onRecord({ header, labels, data, offset: at, length });
    lastLsn = header.lsn;
    at += length;
  }
  return { endOffset: at, lastLsn };
}
