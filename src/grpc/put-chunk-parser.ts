/**
 * A PutChunk message taken piece by piece as its DATA frames arrive (direct-call.ts's
 * MessagePieces), so its data field goes to the blob writer without the message being assembled
 * first: each piece of the data field is handed on as a view of the frame, and only the other
 * fields (id, final, policy, labels, unknown fields: a few bytes) are copied, into `rest`. At the
 * message's end `rest` is the message without its data field, which the hardened decoder
 * (proto.ts) checks and decodes as it would the whole message.
 *
 *   tag varint -> field 2, wire type 2, first in this message: length varint; when it fits in
 *                 the message, the next `length` bytes are data (streamed), else the field and
 *                 the rest of the message are copied verbatim (the decoder reports the lie)
 *              -> any other field: copied with its value (varint, fixed 8/4, length-delimited)
 *              -> anything unusual (a group, wire type 6/7, a varint over 10 bytes): the rest of
 *                 the message is copied verbatim and the decoder judges it
 *
 * A data field streamed is never taken back: a second data field in the same message stays in
 * `rest`, and the caller refuses the message (proto3 would keep the last; nothing here can).
 */

/** Where the parser is inside the current field. */
const enum State {
  Tag,
  Varint,
  Fixed,
  LengthOfField,
  FieldBody,
  LengthOfData,
  DataBody,
  Verbatim,
}

/** The bytes of a tag and a length varint at most (10 + 10). */
const HEAD_MAX = 20;
const VARINT_MAX = 10;
const DATA_TAG = (2 << 3) | 2;

export class PutChunkParser {
  /** The message without its streamed data field; reused, grown when a message needs more. */
  private rest = Buffer.allocUnsafeSlow(256);
  private restLength = 0;
  /** Bytes of the current message not yet seen. */
  private remaining = 0;
  private state = State.Tag;
  /** The varint being read (a tag, or a tag and a length): kept until it is known where it goes. */
  private readonly head = Buffer.alloc(HEAD_MAX);
  private headLength = 0;
  /** Where the varint being read starts in `head` (after the tag, when reading a length). */
  private varintStart = 0;
  /** Bytes left of a fixed-size value, a field body or the data. */
  private need = 0;
  /** This message's data field went to `data` (then a second one stays in rest). */
  streamed = false;

  /** A message of `length` bytes starts. */
  begin(length: number): void {
    this.remaining = length;
    this.restLength = 0;
    this.state = State.Tag;
    this.headLength = 0;
    this.varintStart = 0;
    this.need = 0;
    this.streamed = false;
  }

  /**
   * The next bytes of the message (never more than it has left); `data` gets each piece of the
   * data field, as a view valid only during the call.
   */
  piece(bytes: Buffer, data: (piece: Buffer) => void): void {
    if (bytes.length > this.remaining) throw new RangeError('PutChunkParser: more bytes than the message has');
    let at = 0;
    const end = bytes.length;
    while (at < end) {
      switch (this.state) {
        case State.Verbatim:
          this.keep(bytes, at, end);
          this.remaining -= end - at;
          at = end;
          break;
        case State.DataBody: {
          const n = Math.min(this.need, end - at);
          this.need -= n;
          this.remaining -= n;
          data(bytes.subarray(at, at + n));
          at += n;
          if (this.need === 0) this.state = State.Tag;
          break;
        }
        case State.Fixed:
        case State.FieldBody: {
          const n = Math.min(this.need, end - at);
          this.keep(bytes, at, at + n);
          this.need -= n;
          this.remaining -= n;
          at += n;
          if (this.need === 0) this.state = State.Tag;
          break;
        }
        case State.Varint: {
          const byte = bytes[at++]!;
          this.remaining--;
          this.keepByte(byte);
          if (byte < 0x80) this.state = State.Tag;
          else if (++this.need > VARINT_MAX) this.state = State.Verbatim;
          break;
        }
        default: {
          // Tag, LengthOfField, LengthOfData: one varint byte into head.
          const byte = bytes[at++]!;
          this.remaining--;
          this.head[this.headLength++] = byte;
          if (byte >= 0x80) {
            if (this.headLength - this.varintStart >= VARINT_MAX) this.toVerbatim();
            break;
          }
          this.varintDone();
        }
      }
    }
  }

  /** The message is complete: the bytes the decoder is to check (a view, valid until the next begin). */
  end(): Buffer {
    // A message that ended inside a varint: what was read goes to the decoder, which reports it.
    if (this.headLength > 0) this.flushHead();
    return this.rest.subarray(0, this.restLength);
  }

  private varintDone(): void {
    const value = readVarint(this.head, this.varintStart, this.headLength);
    switch (this.state) {
      case State.Tag: {
        const wire = value % 8;
        const field = Math.floor(value / 8);
        if (value === DATA_TAG && !this.streamed) {
          this.state = State.LengthOfData;
          this.varintStart = this.headLength;
          return;
        }
        if (field === 0 || field > 0x1fffffff) return this.toVerbatim();
        if (wire === 0) {
          this.flushHead();
          this.state = State.Varint;
          this.need = 0;
        } else if (wire === 1 || wire === 5) {
          this.flushHead();
          this.state = State.Fixed;
          this.need = wire === 1 ? 8 : 4;
        } else if (wire === 2) {
          this.state = State.LengthOfField;
          this.varintStart = this.headLength;
        } else {
          this.toVerbatim();
        }
        return;
      }
      case State.LengthOfField:
        if (value > this.remaining) return this.toVerbatim();
        this.flushHead();
        this.need = value;
        this.state = value > 0 ? State.FieldBody : State.Tag;
        return;
      case State.LengthOfData:
        if (value > this.remaining) return this.toVerbatim();
        // The tag and length are not kept: rest is the message without this field.
        this.headLength = 0;
        this.varintStart = 0;
        this.streamed = true;
        this.need = value;
        this.state = value > 0 ? State.DataBody : State.Tag;
        return;
      default:
        throw new Error(`PutChunkParser: varint in state ${this.state}`);
    }
  }

  private toVerbatim(): void {
    this.flushHead();
    this.state = State.Verbatim;
  }

  private flushHead(): void {
    this.keep(this.head, 0, this.headLength);
    this.headLength = 0;
    this.varintStart = 0;
  }

  private keepByte(byte: number): void {
    this.reserve(1);
    this.rest[this.restLength++] = byte;
  }

  private keep(from: Buffer, start: number, end: number): void {
    const n = end - start;
    if (n === 0) return;
    this.reserve(n);
    this.rest.fill(from.subarray(start, end), this.restLength, this.restLength + n);
    this.restLength += n;
  }

  private reserve(n: number): void {
    if (this.restLength + n <= this.rest.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(this.rest.length * 2, this.restLength + n));
    this.rest.copy(grown, 0, 0, this.restLength);
    this.rest = grown;
  }
}

/** A complete varint in buf[start, end) (its last byte < 0x80, at most 10 bytes). */
function readVarint(buf: Buffer, start: number, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = start; i < end; i++) {
    value += (buf[i]! & 0x7f) * scale;
    scale *= 128;
  }
  return value;
}
