/**
 * Reads of small blobs held in segments (inline): every read verified before a byte is handed
 * on, small ones on the calling thread when the page cache holds them, verified records kept in
 * the read cache (verified-cache.ts) and answered from it by id alone.
 */
import type { BlobMeta } from '../blob/meta.js';
import type { BlobstoreError } from '../errors/errors.js';
import { blake3 } from '../hash/blake3.js';
import { crc32c } from '../hash/crc32c.js';
import type { BlobIndex } from '../index/blob-index.js';
import { entryDataCrc, Location } from '../index/entry.js';
import { ticks } from '../metrics/clock.js';
import type { Recorder } from '../metrics/recorder.js';
import { HEADER_BYTES } from './record.js';
import type { SegmentReader } from './segment-reader.js';
import type { CachedRecord, VerifiedCache } from './verified-cache.js';

/** Whether an inline blob's bytes are the ones its index entry names: its CRC-32C where the entry has one, else BLAKE3. */
export function inlineIntact(data: Uint8Array, dataCrc: number | undefined, checksum: Buffer): boolean {
  return dataCrc !== undefined ? crc32c(data) === dataCrc : blake3(data).equals(checksum);
}

export class InlineReader {
  constructor(
    private readonly reader: Pick<SegmentReader, 'read' | 'readSmallScratch'>,
    private readonly cache: VerifiedCache,
    private readonly index: Pick<BlobIndex, 'get' | 'peek'>,
    private readonly recorder: Recorder,
    /** Records up to this size are read on the calling thread when in memory (setting syncReadMaxBytes). */
    private readonly syncReadMaxBytes: number,
    /** A corrupt copy was found: the error to throw (counted once). */
    private readonly corruption: (meta: BlobMeta) => BlobstoreError,
  ) {}

  /**
   * The bytes of an inline blob, verified against the checksum; corrupt copies are never returned.
   * A read counts for the read cache as readSync's do, wherever the bytes came from (a blob
   * written past the page cache is read from the disk the first time).
   */
  async read(meta: BlobMeta): Promise<Buffer> {
    const readStart = ticks();
    const data = await this.reader.read(meta.segment, meta.offset + HEADER_BYTES + meta.labels.length, meta.size);
    this.recorder.stage('read', readStart);
    this.verified(meta, data);
    if (meta.size <= this.syncReadMaxBytes && this.cache.enabled) {
      // Only if it is still the blob's record: a delete staged during the read has invalidated
      // the cache already, and the cache answers by id alone (cachedRecord).
      const now = this.index.get(meta.id);
      if (now !== undefined && now.location === Location.SEGMENT && now.segment === meta.segment && now.offset === meta.offset) this.cache.admit(meta, data);
    }
    return data;
  }

  /**
   * read() on the calling thread, for records small enough to read synchronously whose bytes
   * are in memory (undefined otherwise: read() reads them in the thread pool). The bytes are a
   * view of a scratch buffer or of the read cache, valid until the next call: copy them out at
   * once (uWS's end() does), so no buffer is allocated per read. What is read and verified here
   * goes into the read cache (verified-cache.ts), and a cached record is answered from it.
   */
  readSync(meta: BlobMeta): Buffer | undefined {
    if (meta.size > this.syncReadMaxBytes) return undefined;
    const cached = this.cache.getMeta(meta);
    if (cached) return cached.data;
    const readStart = ticks();
    const data = this.reader.readSmallScratch(meta.segment, meta.offset + HEADER_BYTES + meta.labels.length, meta.size);
    // Not in memory: the long way reads it in the thread pool.
    if (data === undefined) return undefined;
    this.recorder.stage('read', readStart);
    this.verifiedRead(meta, data);
    return this.cache.admit(meta, data)?.data ?? data;
  }

  /**
   * The verified record of a small blob stored here in a segment: from the read cache by its id
   * (allocating nothing, reading no index: `id` may be a scratch buffer), or read and verified now
   * (the index record read in place), and kept if the cache takes it; one it does not keep
   * is a transient record, valid until the next call. undefined when it is not such a blob, when
   * the cache is off, and for a copy that fails its check: the long path (readSync) finds
   * that again, counts it and answers for it.
   */
  cachedRecord(id: Buffer): CachedRecord | undefined {
    if (!this.cache.enabled) return undefined;
    const kept = this.cache.getById(id);
    if (kept !== undefined) return kept;
    const raw = this.index.peek(id);
    if (raw === undefined) return undefined;
    const hit = this.cache.get(id, raw);
    if (hit !== undefined || raw[0] !== Location.SEGMENT) return hit;
    // entry.ts layout, read before anything else reads the index (raw is lmdb-js's reused buffer).
    const size = raw.readUInt32LE(16);
    if (raw.readUInt32LE(20) !== 0 || size > this.cache.recordMaxBytes) return undefined;
    const policy = raw[1]!;
    const at = raw.readUInt32LE(8) + raw.readUInt32LE(12) * 2 ** 32 + HEADER_BYTES + raw.readUInt16LE(2);
    const crc = entryDataCrc(raw);
    const readStart = ticks();
    const data = this.reader.readSmallScratch(raw.readUInt32LE(4), at, size);
    if (data === undefined) return undefined;
    const verifyStart = this.recorder.stage('read', readStart);
    const intact = crc >= 0 ? crc32c(data) === crc : this.cache.missedChecksumIs(blake3(data));
    this.recorder.stage('verify', verifyStart);
    return intact ? this.cache.admitMissed(policy, data) : undefined;
  }

  /**
   * A small blob's bytes just read from disk for a GET, checked with the CRC-32C its index entry
   * carries (a tenth of BLAKE3's cost; docs/adr/0012-hot-path.md), or with BLAKE3 when the entry has
   * none. Everything else that reads a blob (replication, the scrubber, streams) checks BLAKE3.
   */
  private verifiedRead(meta: BlobMeta, data: Buffer): Buffer {
    const verifyStart = ticks();
    const intact = inlineIntact(data, meta.dataCrc, meta.checksum);
    this.recorder.stage('verify', verifyStart);
    if (!intact) throw this.corruption(meta);
    return data;
  }

  private verified(meta: BlobMeta, data: Buffer): Buffer {
    const verifyStart = ticks();
    const intact = blake3(data).equals(meta.checksum);
    this.recorder.stage('verify', verifyStart);
    if (!intact) throw this.corruption(meta);
    return data;
  }
}
