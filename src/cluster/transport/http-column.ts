/**
 * Shard columns over the peers' API listeners (the data plane, as large replicas go: http-put.ts):
 * every column a node sends (a store's, a repair's, a handoff's) is a PUT /internal/v1/shards/{id}/{index}, the blob's
 * metadata and the column's place in headers, the column's bytes written from the encoder's cells
 * (no framing copy; a Content-Length body on a kept connection, or chunked when it ends in a seal:
 * http-put.ts), then its 32-byte BLAKE3 checksum as the body's last bytes (the
 * checksum is known only once the last cell is hashed), then, when the head's
 * X-Blobstore-Column-Checksums says so (the blob's k + m), every column's checksum of the blob,
 * which the column keeps and a rebuilt column must match. The peer answers {"created", "declined"}
 * once the column is durable. With `X-Blobstore-Seal: in-body` (a store that streams before its id
 * is known) the path names the placement key, the metadata headers carry only the size and policy,
 * and the body's last bytes, after the checksum, are the blob's metadata as the header lines of
 * wire-meta.ts: the seal, which names the blob once its last byte is hashed. The peer commits the
 * column as the seal says, once it is complete and checked, and answers as above.
 */
import type { ColumnHeader } from '../column-writer.js';
import { DIGEST_BYTES } from '../../hash/blake3.js';
import { bodyFraming, HttpPut, type HttpPeer } from './http-put.js';
import type { KeptConnections } from './kept-connections.js';
import { type PeerLink, SECRET_METADATA } from './peer-link.js';
import { columnBlobMeta, metaHeaderLines, type WireMeta } from '../wire-meta.js';

export const INTERNAL_SHARD_PATH = '/internal/v1/shards/';
/** The number of column checksums a column's body brings after its own (absent: none), as uWS names it. */
export const COLUMN_CHECKSUMS_HEADER = 'x-blobstore-column-checksums';

/** The path of column `index` of blob `id` on a peer's API listener. */
export function shardPath(id: Buffer, index: number): string {
  return `${INTERNAL_SHARD_PATH}${id.toString('hex')}/${index}`;
}

function columnHead(target: HttpPeer, h: ColumnHeader, columnBytes: number, repair: boolean, secret: string, sealInBody: boolean, checksums: number, framing: string): string {
  return `PUT ${shardPath(h.id, h.index)} HTTP/1.1\r\nHost: ${target.address}\r\n${framing}`
    + (secret === '' ? '' : `${SECRET_METADATA}: ${secret}\r\n`)
    + metaHeaderLines(columnBlobMeta(h))
    + `X-Blobstore-Shard-Size: ${h.shardBytes}\r\nX-Blobstore-Column-Size: ${columnBytes}\r\n`
    + (repair ? 'X-Blobstore-Repair: 1\r\n' : '') + (sealInBody ? 'X-Blobstore-Seal: in-body\r\n' : '')
    + (checksums > 0 ? `X-Blobstore-Column-Checksums: ${checksums}\r\n` : '') + '\r\n';
}

/** One column streamed to a peer's API listener. */
export class HttpColumnSender {
  private readonly leg: HttpPut;
  private readonly checksums: number;

  constructor(
    target: HttpPeer,
    header: ColumnHeader,
    columnBytes: number,
    /**
     * `streamed`: sealed in its body (its stalls time out after `timeoutMs`, its answer after
     * `answerTimeoutMs`); `checksums`: how many column checksums finish() sends (0: none).
     */
    options: { repair: boolean; link: PeerLink; kept: KeptConnections; timeoutMs: number; checksums: number; streamed?: { answerTimeoutMs: number } },
  ) {
    this.checksums = options.checksums;
    // A seal's length is known only at the end: a streamed column goes chunked.
    const framing = bodyFraming(options.streamed ? undefined : columnBytes + DIGEST_BYTES * (1 + options.checksums));
    const head = columnHead(target, header, columnBytes, options.repair, options.link.secret, options.streamed !== undefined, options.checksums, framing.header);
    this.leg = new HttpPut(target, head, { timeoutMs: options.timeoutMs, kept: options.kept, length: framing.length, streamed: options.streamed });
  }

  /** `fail` runs once if the column's request fails (the peer refused, went away or timed out). */
  onFailure(fail: (err: Error) => void): void {
    void this.leg.done.then(() => {
      if (this.leg.failure) fail(this.leg.failure);
    });
  }

  /** Sends the next cell; resolves while the socket has room. `done` once the kernel has the bytes. */
  write(cell: Buffer, done: () => void = () => undefined): Promise<void> {
    return this.leg.write(cell, done) ? Promise.resolve() : this.leg.writable();
  }

  /**
   * The column's checksum as the body's last bytes, then the blob's column checksums (as many as
   * the head said), then a streamed column's seal; resolves once the peer holds the column
   * durably (or declined a repair).
   */
  async finish(columnChecksum: Buffer, columnChecksums?: Buffer, seal?: WireMeta): Promise<{ created: boolean; declined: boolean }> {
    if ((columnChecksums?.length ?? 0) !== this.checksums * DIGEST_BYTES) {
      this.abort();
      throw new Error(`column checksums of ${columnChecksums?.length ?? 0} bytes, the column's head announced ${this.checksums}`);
    }
    this.leg.write(columnChecksum, () => undefined);
    if (columnChecksums) this.leg.write(columnChecksums, () => undefined);
    if (seal) this.leg.write(Buffer.from(metaHeaderLines(seal), 'latin1'), () => undefined);
    this.leg.end();
    await this.leg.done;
    if (this.leg.failure) throw this.leg.failure;
    const answer = JSON.parse(this.leg.answer || '{}') as { created?: boolean; declined?: boolean };
    return { created: answer.created === true, declined: answer.declined === true };
  }

  abort(): void {
    this.leg.cancel(new Error('column store abandoned'));
  }

  get target(): string {
    return this.leg.peer.nodeId;
  }
}
