/**
 * Protobuf wire bytes built by hand, and fast-check arbitraries of BlobService requests: mostly
 * the right fields with hostile values, then damaged on the wire (wrong wire types, truncation,
 * huge lengths, invalid UTF-8, unknown and duplicate fields, runaway varints).
 *
 *   tag = varint(field << 3 | wire)   wire 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
 */
import './fc-config.js';
import fc from 'fast-check';

export type PbValue = bigint | Buffer | PbField[];
export interface PbField {
  n: number;
  wire: number;
  v: PbValue;
}

export function varint(x: bigint): Buffer {
  let v = BigInt.asUintN(64, x);
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
}

export function encode(fields: PbField[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of fields) {
    parts.push(varint(BigInt(f.n) * 8n + BigInt(f.wire)));
    const body = Array.isArray(f.v) ? encode(f.v) : f.v;
    if (f.wire === 0) parts.push(typeof body === 'bigint' ? varint(body) : varint(BigInt(body.length)));
    else if (f.wire === 1 || f.wire === 5) {
      const width = f.wire === 1 ? 8 : 4;
      const b = Buffer.alloc(width);
      if (typeof body === 'bigint') {
        const full = Buffer.alloc(8);
        full.writeBigUInt64LE(BigInt.asUintN(64, body));
        full.copy(b, 0, 0, width);
      } else body.copy(b, 0, 0, width);
      parts.push(b);
    } else {
      const bytes = typeof body === 'bigint' ? varint(body) : body;
      parts.push(varint(BigInt(bytes.length)), bytes);
    }
  }
  return Buffer.concat(parts);
}

/** Reads the top-level fields of a message (enough to check a PutResponse). */
export function decodeTop(buf: Buffer): Map<number, Buffer | bigint> {
  const out = new Map<number, Buffer | bigint>();
  let at = 0;
  const readVarint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[at++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < buf.length) {
    const tag = readVarint();
    const n = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (wire === 0) out.set(n, readVarint());
    else if (wire === 2) {
      const len = Number(readVarint());
      out.set(n, buf.subarray(at, at + len));
      at += len;
    } else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

// ---- arbitraries ----

const bytesOf = (max: number): fc.Arbitrary<Buffer> => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b));

const idBytes: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 5, arbitrary: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b)) },
  { weight: 2, arbitrary: bytesOf(40) },
);

/** Ids of blobs stored before the run (set by the suite). */
export const knownIdBytes: Buffer[] = [];

const blobId: fc.Arbitrary<PbField[]> = fc.oneof(
  { weight: 3, arbitrary: idBytes.map((id) => [{ n: 1, wire: 2, v: id }]) },
  { weight: 3, arbitrary: fc.nat().map((i) => [{ n: 1, wire: 2, v: knownIdBytes[i % Math.max(1, knownIdBytes.length)] ?? Buffer.alloc(16) }]) },
  { weight: 1, arbitrary: fc.constant<PbField[]>([]) },
);

const policy: fc.Arbitrary<bigint> = fc.oneof(
  fc.integer({ min: 0, max: 5 }).map(BigInt),
  fc.constantFrom(-1n, 6n, 255n, 2n ** 31n, 2n ** 63n, 2n ** 64n - 1n),
);

/** UTF-8 most of the time; sometimes bytes that are not. */
const text = (max: number): fc.Arbitrary<Buffer> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: max }).map((s) => Buffer.from(s, 'utf8')) },
    { weight: 1, arbitrary: fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82]).map((b) => Buffer.from(b)) },
  );

const labels: fc.Arbitrary<PbField[]> = fc.array(
  fc.tuple(fc.oneof(fc.string({ unit: fc.constantFrom(...'abc09._/-'), minLength: 1, maxLength: 12 }).map((s) => Buffer.from(s)), text(20)), text(30)).map(
    ([k, v]): PbField => ({ n: 0, wire: 2, v: [{ n: 1, wire: 2, v: k }, { n: 2, wire: 2, v: v }] }),
  ),
  { maxLength: 4 },
);
const withNumber = (fields: PbField[], n: number): PbField[] => fields.map((f) => ({ ...f, n }));

const data: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 6, arbitrary: bytesOf(2000) },
  { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 400_000 }).map((n) => Buffer.alloc(n, n & 0xff)) },
);

const opt = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined, freq: 3 });
const fields = (...list: (PbField | PbField[] | undefined)[]): PbField[] => list.flat().filter((f): f is PbField => f !== undefined);

export const requests = {
  Put: fc.tuple(opt(data), opt(policy), opt(labels)).map(([d, p, l]) =>
    fields(d && { n: 1, wire: 2, v: d }, p !== undefined ? { n: 2, wire: 0, v: p } : undefined, l && withNumber(l, 3)),
  ),
  Get: blobId.map((id) => [{ n: 1, wire: 2, v: id }]),
  Stat: blobId.map((id) => [{ n: 1, wire: 2, v: id }]),
  Delete: blobId.map((id) => [{ n: 1, wire: 2, v: id }]),
  GetStream: blobId.map((id) => [{ n: 1, wire: 2, v: id }]),
  List: fc.tuple(opt(bytesOf(80)), opt(fc.oneof(fc.integer().map(BigInt), fc.constantFrom(-1n, 2n ** 32n, 2n ** 64n - 1n))), opt(text(40))).map(([c, l, p]) =>
    fields(c && { n: 1, wire: 2, v: c }, l !== undefined ? { n: 2, wire: 0, v: l } : undefined, p && { n: 3, wire: 2, v: p }),
  ),
  PutChunk: fc.tuple(opt(blobId), opt(data), opt(fc.oneof(fc.constantFrom(0n, 1n), fc.constantFrom(2n, 2n ** 63n))), opt(policy), opt(labels)).map(([id, d, f, p, l]) =>
    fields(id && { n: 1, wire: 2, v: id }, d && { n: 2, wire: 2, v: d }, f !== undefined ? { n: 3, wire: 0, v: f } : undefined, p !== undefined ? { n: 4, wire: 0, v: p } : undefined, l && withNumber(l, 5)),
  ),
};

/** Damage on the wire, applied to an encoded message. */
export type Damage =
  | { kind: 'none' }
  | { kind: 'truncate'; at: number }
  | { kind: 'wire'; index: number; wire: number }
  | { kind: 'append'; field: PbField }
  | { kind: 'huge-length'; n: number }
  | { kind: 'runaway-varint'; n: number }
  | { kind: 'group'; n: number }
  | { kind: 'random'; bytes: Buffer }
  | { kind: 'deep'; depth: number };

export const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  { weight: 10, arbitrary: fc.constant<Damage>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.nat().map((at): Damage => ({ kind: 'truncate', at })) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wire' as const), index: fc.nat(), wire: fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 7) }) },
  {
    weight: 2,
    arbitrary: fc
      .record({ n: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 2 ** 29 - 1 })), wire: fc.constantFrom(0, 1, 2, 5), v: fc.oneof(bytesOf(20).map((b): PbValue => b), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })) })
      .map((field): Damage => ({ kind: 'append', field })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((n): Damage => ({ kind: 'huge-length', n })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((n): Damage => ({ kind: 'runaway-varint', n })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }).map((n): Damage => ({ kind: 'group', n })) },
  { weight: 1, arbitrary: bytesOf(200).map((bytes): Damage => ({ kind: 'random', bytes })) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 3000 }).map((depth): Damage => ({ kind: 'deep', depth })) },
);

export function damage(fields: PbField[], d: Damage): Buffer {
  switch (d.kind) {
    case 'none':
      return encode(fields);
    case 'truncate': {
      const b = encode(fields);
      return b.subarray(0, d.at % (b.length + 1));
    }
    case 'wire': {
      if (fields.length === 0) return encode(fields);
      const i = d.index % fields.length;
      const copy = fields.slice();
      copy[i] = { ...copy[i]!, wire: d.wire === 3 || d.wire === 4 || d.wire > 5 ? 2 : d.wire };
      const b = encode(copy);
      // Wire types 3, 4, 6, 7 cannot be written by encode(): patch the first tag byte.
      if (d.wire === 3 || d.wire === 4 || d.wire > 5) b[0] = (b[0]! & ~7) | d.wire;
      return b;
    }
    case 'append':
      return Buffer.concat([encode(fields), encode([d.field])]);
    case 'huge-length':
      return Buffer.concat([encode(fields), varint(BigInt(d.n) * 8n + 2n), varint(2n ** 62n)]);
    case 'runaway-varint':
      return Buffer.concat([encode(fields), varint(BigInt(d.n) * 8n), Buffer.alloc(12, 0xff)]);
    case 'group':
      return Buffer.concat([encode(fields), varint(BigInt(d.n) * 8n + 3n)]);
    case 'random':
      return d.bytes;
    case 'deep': {
      // Field 1 nested `depth` times: BlobID-shaped messages inside each other.
      let inner = Buffer.alloc(0);
      for (let i = 0; i < d.depth; i++) inner = Buffer.concat([varint(10n), varint(BigInt(inner.length)), inner]);
      return inner;
    }
  }
}
