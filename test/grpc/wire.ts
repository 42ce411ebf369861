/**
 * gRPC's wire written by hand, for tests that frame messages themselves: protobuf varints and
 * length-delimited fields, and the 5-byte length prefix of a message on its stream.
 */

/** A protobuf varint's bytes. */
export function varint(v: number): number[] {
  const out: number[] = [];
  for (; v >= 0x80; v = Math.floor(v / 128)) out.push((v & 0x7f) | 0x80);
  out.push(v);
  return out;
}

/** A length-delimited field (wire type 2): tag, length, bytes. */
export const bytesField = (field: number, value: Buffer): Buffer => Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(value.length)]), value]);

/** A message as it goes on a gRPC stream: its flags byte (1: compressed), its length, its bytes. */
export function frame(message: Buffer, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}
