/**
 * Checks the protobuf wire encoding of a request before protobufjs decodes it. protobufjs reads a
 * known field with whatever wire type arrives (a bool sent as bytes is read as a varint and the
 * rest is misparsed) and throws on truncation, which grpc-js would answer INTERNAL. Here every
 * known field must carry its declared wire type (or the packed form of a repeated scalar),
 * lengths must fit, strings must be UTF-8, embedded messages are checked the same way, and
 * unknown fields are skipped (proto3: ignored) once their own encoding is sound. A problem is
 * reported as text; the caller answers INVALID_ARGUMENT.
 *
 *   tag = varint(field << 3 | wire)   wire 0 varint, 1 fixed64, 2 length-delimited,
 *                                     3/4 group start/end (unknown fields only), 5 fixed32
 */
import { isUtf8 } from 'node:buffer';

/** What a message expects of one field. */
interface FieldRule {
  readonly name: string;
  readonly wire: number;
  /** A repeated scalar may also arrive packed (wire type 2). */
  readonly packable: boolean;
  readonly utf8: boolean;
  /** Full name of the embedded message type, resolved after every type is known. */
  message: string | undefined;
}

export type MessageRules = Map<number, FieldRule>;

/** The subset of a google.protobuf.DescriptorProto that proto-loader exposes as plain objects. */
export interface FieldDescriptor {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}

export interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType: MessageDescriptor[];
}

const WIRE_OF: Record<string, number> = {
  TYPE_INT32: 0, TYPE_INT64: 0, TYPE_UINT32: 0, TYPE_UINT64: 0, TYPE_SINT32: 0, TYPE_SINT64: 0, TYPE_BOOL: 0, TYPE_ENUM: 0,
  TYPE_FIXED64: 1, TYPE_SFIXED64: 1, TYPE_DOUBLE: 1,
  TYPE_FIXED32: 5, TYPE_SFIXED32: 5, TYPE_FLOAT: 5,
  TYPE_STRING: 2, TYPE_BYTES: 2, TYPE_MESSAGE: 2,
  TYPE_GROUP: 3,
};

/** Nesting of embedded messages and unknown groups a request may have (ours nest 3 deep). */
const MAX_DEPTH = 32;

/** Wire rules of every message type, by full name (`blobstore.v1.PutChunk`). */
export class WireRules {
  private readonly types = new Map<string, MessageRules>();

  /** Adds a message type and its nested types (map entries are nested types). */
  add(fullName: string, descriptor: MessageDescriptor): void {
    if (this.types.has(fullName)) return;
    const rules: MessageRules = new Map();
    for (const f of descriptor.field) {
      const wire = WIRE_OF[f.type];
      if (wire === undefined) throw new Error(`${fullName}.${f.name}: unsupported field type ${f.type}`);
      rules.set(f.number, {
        name: f.name,
        wire,
        packable: f.label === 'LABEL_REPEATED' && wire !== 2 && wire !== 3,
        utf8: f.type === 'TYPE_STRING',
        message: f.type === 'TYPE_MESSAGE' ? `${fullName}\u0000${f.typeName}` : undefined,
      });
    }
    this.types.set(fullName, rules);
    for (const nested of descriptor.nestedType) this.add(`${fullName}.${nested.name}`, nested);
  }

  /** Resolves type names as protoc does: innermost scope first (call once every type is added). */
  link(): void {
    for (const rules of this.types.values()) {
      for (const rule of rules.values()) {
        if (rule.message === undefined || !rule.message.includes('\u0000')) continue;
        const [scope, typeName] = rule.message.split('\u0000') as [string, string];
        rule.message = this.resolve(scope, typeName);
      }
    }
  }

  private resolve(scope: string, typeName: string): string {
    if (typeName.startsWith('.')) return typeName.slice(1);
    for (let s = scope; ; s = s.slice(0, Math.max(s.lastIndexOf('.'), 0))) {
      const candidate = s === '' ? typeName : `${s}.${typeName}`;
      if (this.types.has(candidate)) return candidate;
      if (s === '') throw new Error(`unresolved message type ${typeName} in ${scope}`);
    }
  }

  rules(fullName: string): MessageRules {
    const rules = this.types.get(fullName);
    if (!rules) throw new Error(`unknown message type ${fullName}`);
    return rules;
  }

  /** undefined when `bytes` is a well-formed `fullName`, else what is wrong with it. */
  check(fullName: string, bytes: Buffer): string | undefined {
    try {
      this.walk(this.rules(fullName), bytes, 0, bytes.length, 0);
      return undefined;
    } catch (err) {
      if (err instanceof WireError) return err.message;
      throw err;
    }
  }

  private walk(rules: MessageRules, buf: Buffer, start: number, end: number, depth: number): number {
    if (depth > MAX_DEPTH) throw new WireError('messages nested too deeply');
    const cursor = { pos: start };
    while (cursor.pos < end) {
      const tag = readVarint(buf, cursor, end);
      const field = Math.floor(tag / 8);
      const wire = tag % 8;
      if (field === 0 || field > 0x1fffffff) throw new WireError(`invalid field number ${field}`);
      const rule = rules.get(field);
      if (rule && wire !== rule.wire && !(rule.packable && wire === 2)) {
        throw new WireError(`field ${rule.name} (${field}) has wire type ${wire}, expected ${rule.wire}`);
      }
      if (wire === 2) {
        const length = readVarint(buf, cursor, end);
        if (length > end - cursor.pos) throw new WireError(`field ${rule?.name ?? field} is truncated`);
        const at = cursor.pos;
        cursor.pos += length;
        if (rule?.message !== undefined) this.walk(this.rules(rule.message), buf, at, at + length, depth + 1);
        else if (rule?.utf8 && !isUtf8(buf.subarray(at, at + length))) throw new WireError(`field ${rule.name} is not valid UTF-8`);
      } else {
        skipScalar(buf, cursor, end, wire, field, depth);
      }
    }
    if (cursor.pos !== end) throw new WireError('message is truncated');
    return cursor.pos;
  }
}

class WireError extends Error {}

interface Cursor {
  pos: number;
}

/** A varint of at most 10 bytes; values above 2^53 lose precision, which no check here needs. */
function readVarint(buf: Buffer, cursor: Cursor, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (cursor.pos >= end) throw new WireError('varint is truncated');
    const byte = buf[cursor.pos++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
  throw new WireError('varint longer than 10 bytes');
}

function skipScalar(buf: Buffer, cursor: Cursor, end: number, wire: number, field: number, depth: number): void {
  switch (wire) {
    case 0:
      readVarint(buf, cursor, end);
      return;
    case 1:
    case 5: {
      const size = wire === 1 ? 8 : 4;
      if (end - cursor.pos < size) throw new WireError(`field ${field} is truncated`);
      cursor.pos += size;
      return;
    }
    case 3:
      skipGroup(buf, cursor, end, field, depth + 1);
      return;
    case 4:
      throw new WireError(`unexpected end of group ${field}`);
    default:
      throw new WireError(`invalid wire type ${wire} (field ${field})`);
  }
}

/** Skips an unknown group up to its matching end-group tag. */
function skipGroup(buf: Buffer, cursor: Cursor, end: number, group: number, depth: number): void {
  if (depth > MAX_DEPTH) throw new WireError('groups nested too deeply');
  for (;;) {
    if (cursor.pos >= end) throw new WireError(`group ${group} is not closed`);
    const tag = readVarint(buf, cursor, end);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === 4) {
      if (field !== group) throw new WireError(`group ${group} closed as ${field}`);
      return;
    }
    if (wire === 2) {
      const length = readVarint(buf, cursor, end);
      if (length > end - cursor.pos) throw new WireError(`field ${field} is truncated`);
      cursor.pos += length;
    } else {
      skipScalar(buf, cursor, end, wire, field, depth);
    }
  }
}
