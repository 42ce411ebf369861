/**
 * PutChunkParser (src/grpc/put-chunk-parser.ts): a PutChunk fed in pieces gives its data field's
 * bytes as they come and keeps the other fields, byte for byte, for the hardened decoder; cut at
 * every byte boundary (two pieces) and in 1-byte pieces it gives the same. A data length that
 * lies, a second data field, groups and truncated fields leave the decoder to judge the
 * message as it would the whole one.
 */
import { describe, expect, it } from 'vitest';
import { PutChunkParser } from '../../src/grpc/put-chunk-parser.js';
import { MalformedMessage, serverDefinition } from '../../src/proto/loader.js';
import type { PutChunk } from '../../src/proto/messages.js';
import { bytesField } from './wire.js';

const decode = serverDefinition('BlobService').PutStream!.requestDeserialize as (b: Buffer) => PutChunk | MalformedMessage;

const ID = Buffer.alloc(16, 0xab);
const idField = bytesField(1, bytesField(1, ID)); // id: BlobID {id}
const finalField = Buffer.from([0x18, 1]);
const policyField = Buffer.from([0x20, 1]);
const labelsField = bytesField(5, Buffer.concat([bytesField(1, Buffer.from('team')), bytesField(2, Buffer.from('ingest'))]));
const unknownVarint = Buffer.from([0x30, 0xff, 0xff, 0x03]); // field 6, varint
const unknownFixed64 = Buffer.from([0x39, 1, 2, 3, 4, 5, 6, 7, 8]); // field 7
const unknownFixed32 = Buffer.from([0x45, 1, 2, 3, 4]); // field 8
const unknownBytes = bytesField(9, Buffer.from('unknown'));
const data = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + 3) & 0xff));

interface Parsed {
  data: Buffer;
  rest: Buffer;
  streamed: boolean;
}

/** Feeds `message` in the given pieces; the data given out and the bytes kept. */
function parse(parser: PutChunkParser, message: Buffer, pieces: number[]): Parsed {
  parser.begin(message.length);
  const got: Buffer[] = [];
  let at = 0;
  for (const size of pieces) {
    parser.piece(message.subarray(at, at + size), (p) => got.push(Buffer.from(p)));
    at += size;
  }
  expect(at).toBe(message.length);
  return { data: Buffer.concat(got), rest: Buffer.from(parser.end()), streamed: parser.streamed };
}

/** Every way to cut `message` in two, and 1-byte pieces: each must parse as it does whole. */
function everyCut(message: Buffer): Parsed {
  const parser = new PutChunkParser();
  const whole = parse(parser, message, [message.length]);
  for (let cut = 0; cut <= message.length; cut++) {
    expect(parse(parser, message, [cut, message.length - cut])).toEqual(whole);
  }
  expect(parse(parser, message, Array<number>(message.length).fill(1))).toEqual(whole);
  return whole;
}

describe('PutChunkParser', () => {
  it('gives the data field as it comes and keeps every other field for the decoder, wherever the pieces are cut', () => {
    const d = data(300);
    const message = Buffer.concat([idField, unknownVarint, bytesField(2, d), unknownFixed64, finalField, policyField, labelsField, unknownFixed32, unknownBytes]);
    const parsed = everyCut(message);
    expect(parsed.streamed).toBe(true);
    expect(parsed.data.equals(d)).toBe(true);
    expect(parsed.rest.equals(Buffer.concat([idField, unknownVarint, unknownFixed64, finalField, policyField, labelsField, unknownFixed32, unknownBytes]))).toBe(true);
    const rest = decode(parsed.rest) as PutChunk;
    expect(rest.data).toBeUndefined();
    expect(rest.id?.id?.equals(ID)).toBe(true);
    expect(rest.final).toBe(true);
    expect(rest.policy).toBe(1);
    expect(rest.labels).toEqual({ team: 'ingest' });
  });

  it('a message with only data, with empty data, or with no data field at all', () => {
    expect(everyCut(bytesField(2, data(5)))).toEqual({ data: data(5), rest: Buffer.alloc(0), streamed: true });
    expect(everyCut(Buffer.concat([bytesField(2, Buffer.alloc(0)), finalField]))).toEqual({ data: Buffer.alloc(0), rest: finalField, streamed: true });
    expect(everyCut(finalField)).toEqual({ data: Buffer.alloc(0), rest: finalField, streamed: false });
    expect(everyCut(Buffer.alloc(0))).toEqual({ data: Buffer.alloc(0), rest: Buffer.alloc(0), streamed: false });
  });

  it('a data field of 1 MiB (a 3-byte length) cut anywhere in its tag or length', () => {
    const d = data(1024 * 1024);
    const message = Buffer.concat([bytesField(2, d), finalField]);
    const parser = new PutChunkParser();
    for (let cut = 0; cut <= 8; cut++) {
      const parsed = parse(parser, message, [cut, 70_000 - cut, message.length - 70_000]);
      expect(parsed.data.equals(d)).toBe(true);
      expect(parsed.rest.equals(finalField)).toBe(true);
    }
  });

  it('a data length that lies (longer than the message): nothing streamed, the message kept whole, the decoder refuses it', () => {
    const message = Buffer.concat([idField, Buffer.from([0x12, 50]), data(10)]);
    const parsed = everyCut(message);
    expect(parsed).toEqual({ data: Buffer.alloc(0), rest: message, streamed: false });
    expect(decode(parsed.rest)).toBeInstanceOf(MalformedMessage);
    expect((decode(parsed.rest) as MalformedMessage).problem).toMatch(/field data is truncated/);
  });

  it('a data length shorter than what follows: the bytes after it are fields, judged by the decoder', () => {
    const message = Buffer.concat([Buffer.from([0x12, 3]), data(3), Buffer.from([0x12, 0x05, 1, 2])]);
    const parsed = everyCut(message);
    expect(parsed.data.equals(data(3))).toBe(true);
    // The second "data" field claims 5 bytes where 2 remain: kept verbatim, malformed.
    expect(parsed.rest.equals(Buffer.from([0x12, 0x05, 1, 2]))).toBe(true);
    expect(decode(parsed.rest)).toBeInstanceOf(MalformedMessage);
  });

  it('a second data field stays in what is kept, so the caller sees both', () => {
    const message = Buffer.concat([bytesField(2, data(4)), bytesField(2, data(6)), finalField]);
    const parsed = everyCut(message);
    expect(parsed.streamed).toBe(true);
    expect(parsed.data.equals(data(4))).toBe(true);
    expect((decode(parsed.rest) as PutChunk).data?.equals(data(6))).toBe(true);
  });

  it('a group, a bad wire type or a field number 0: the rest of the message is kept verbatim', () => {
    const group = Buffer.from([0x53, 0x08, 0x01, 0x54]); // field 10 start-group, {1: 1}, end-group
    const withGroup = Buffer.concat([finalField, group, bytesField(2, data(7))]);
    const parsed = everyCut(withGroup);
    expect(parsed).toEqual({ data: Buffer.alloc(0), rest: withGroup, streamed: false });
    expect((decode(parsed.rest) as PutChunk).data?.equals(data(7))).toBe(true);
    for (const bad of [Buffer.from([0x1e, 1]), Buffer.from([0x02, 1, 0])]) {
      const message = Buffer.concat([bad, bytesField(2, data(3))]);
      expect(everyCut(message)).toEqual({ data: Buffer.alloc(0), rest: message, streamed: false });
      expect(decode(message)).toBeInstanceOf(MalformedMessage);
    }
  });

  it('a message that ends inside a tag, a length or a value: what came is kept and the decoder reports it', () => {
    for (const cutShort of [Buffer.from([0x92]), Buffer.from([0x12, 0x80]), Buffer.from([0x0a, 18, 0x0a]), Buffer.from([0x39, 1, 2]), Buffer.from([0x30, 0xff])]) {
      const parsed = everyCut(cutShort);
      expect(parsed.data.length).toBe(0);
      expect(parsed.rest.equals(cutShort)).toBe(true);
      expect(decode(parsed.rest)).toBeInstanceOf(MalformedMessage);
    }
  });

  it('a varint of more than 10 bytes is kept verbatim', () => {
    const message = Buffer.concat([Buffer.from([0x30, ...Array<number>(11).fill(0xff), 0x01]), bytesField(2, data(3))]);
    const parsed = everyCut(message);
    expect(parsed).toEqual({ data: Buffer.alloc(0), rest: message, streamed: false });
    expect(decode(parsed.rest)).toBeInstanceOf(MalformedMessage);
  });

  it('a tag in a non-minimal encoding is still the data field', () => {
    const message = Buffer.concat([Buffer.from([0x92, 0x00, 4]), data(4), finalField]);
    expect(everyCut(message)).toEqual({ data: data(4), rest: finalField, streamed: true });
  });

  it('refuses more bytes than the message has', () => {
    const parser = new PutChunkParser();
    parser.begin(2);
    expect(() => parser.piece(Buffer.alloc(3), () => undefined)).toThrow(RangeError);
  });
});
