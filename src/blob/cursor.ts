/**
 * List cursors: opaque, node-bound and tamper-evident. A cursor is the last id of the previous
 * page, MACed with the node's secret and ID: base64url(id · HMAC-SHA256(secret, nodeId · id)[0..16]).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../errors/errors.js';

const ID_BYTES = 16;
const MAC_BYTES = 16;

export class CursorCodec {
  constructor(
    private readonly secret: Buffer,
    private readonly nodeId: string,
  ) {}

  private mac(id: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(this.nodeId).update(id).digest().subarray(0, MAC_BYTES);
  }

  encode(lastId: Buffer): string {
    return Buffer.concat([lastId, this.mac(lastId)]).toString('base64url');
  }

  /** The id a cursor continues after; 400 "invalid cursor" for anything this node did not issue. */
  decode(cursor: string): Buffer {
    const raw = /^[A-Za-z0-9_\-+/]*={0,2}$/.test(cursor) ? Buffer.from(cursor, 'base64url') : Buffer.alloc(0);
    if (raw.length !== ID_BYTES + MAC_BYTES) throw invalidArgument('invalid cursor');
    const id = raw.subarray(0, ID_BYTES);
    if (!timingSafeEqual(raw.subarray(ID_BYTES), this.mac(id))) throw invalidArgument('invalid cursor');
    return Buffer.from(id);
  }
}
