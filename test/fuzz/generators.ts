/**
 * fast-check arbitraries for hostile HTTP requests: methods, paths with odd ids, queries,
 * headers, JSON and raw bodies, and the framing they travel in (honest or lying Content-Length,
 * chunked good or broken). A request is sent through fetch when fetch can express it, else raw.
 */
import './fc-config.js';
import fc from 'fast-check';
import { patternBytes } from '../helpers/blobs.js';

export type Framing =
  | 'length' // honest Content-Length
  | 'none' // no body framing at all
  | 'chunked' // valid chunked encoding
  | 'length-short' // declares fewer bytes than sent: the rest is read as the next request
  | 'length-long' // declares more bytes than sent: the body stalls (408 expected)
  | 'chunked-cut' // chunked body without its last chunk: stalls
  | 'chunked-bad' // broken chunk sizes or separators
  | 'length-and-chunked'
  | 'length-twice'
  | 'length-junk';

/**
 * Framings where the server may close without answering. `length-short` is one: the bytes past
 * Content-Length are a second request, usually junk, and uWS closes on junk without sending the
 * answer it already wrote for the first request.
 */
export const MALFORMED_FRAMINGS: ReadonlySet<Framing> = new Set(['chunked-bad', 'length-and-chunked', 'length-twice', 'length-junk', 'length-short']);
/** Framings that leave the body waiting: the answer may take the body idle timeout. */
export const STALLING_FRAMINGS: ReadonlySet<Framing> = new Set(['length-long', 'chunked-cut']);

/**
 * A chunked request to a route that does not stream its body: refused 411 before the route runs
 * (src/http/framing.ts), so before authentication too.
 */
export function chunkedRefused(req: Pick<FuzzRequest, 'method' | 'target' | 'framing'>): boolean {
  if (req.framing !== 'chunked' && req.framing !== 'chunked-cut') return false;
  const path = req.target.split('?', 1)[0]!;
  const streams = (path === '/v1/blobs' && (req.method === 'POST' || req.method === 'PUT')) || (path === '/v1/blobs/stream' && req.method === 'POST');
  return !streams;
}

/** The methods uWebSockets.js's parser knows; it closes the connection on any other. */
export const UWS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'CONNECT', 'TRACE'];
const FETCH_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);
const FETCH_FORBIDDEN_HEADERS = /^(host|content-length|transfer-encoding|connection|expect|keep-alive|upgrade|te|trailer)$/i;

export interface FuzzRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body: Buffer;
  framing: Framing;
  /** Chunk sizes for the chunked framings. */
  cuts: number[];
  connectionClose: boolean;
  preferRaw: boolean;
}

// ---- ids and paths ----

const HEX = '0123456789abcdef';
const hexString = (min: number, max: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...HEX), minLength: min, maxLength: max });
const bytes16 = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b));

/** Ids stored before the run, so some requests hit existing blobs (set by the suite). */
export const knownIds: string[] = [];

const percentEncode = (s: string): string => [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

export const idArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: bytes16.map((b) => b.toString('hex')) },
  { weight: 4, arbitrary: fc.nat().map((n) => knownIds[n % Math.max(1, knownIds.length)] ?? '00'.repeat(16)) },
  { weight: 2, arbitrary: bytes16.map((b) => b.toString('hex').toUpperCase()) },
  { weight: 2, arbitrary: hexString(0, 70) },
  { weight: 2, arbitrary: bytes16.map((b) => b.toString('base64')) },
  { weight: 2, arbitrary: bytes16.map((b) => encodeURIComponent(b.toString('base64'))) },
  { weight: 2, arbitrary: bytes16.map((b) => b.toString('base64url')) },
  { weight: 1, arbitrary: bytes16.map((b) => b.toString('base64url').replace(/=+$/, '')) },
  { weight: 1, arbitrary: bytes16.map((b) => percentEncode(b.toString('hex'))) },
  { weight: 2, arbitrary: fc.constantFrom('..', '.', '%2e%2e', '%2F', '%00', '%', '%zz', '%ff%fe', 'stream', 'stat', '~', '*', '-', '0', ' ', '\t') },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 12_000 }).map((n) => 'a'.repeat(n)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map(percentEncode) },
  { weight: 1, arbitrary: fc.string({ unit: fc.integer({ min: 0x21, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 40 }) },
);

const queryValue: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom('', '0', '-1', '1.5', '1e3', '99999999999999999999', '2147483648', '-2147483649', ' 5', '+7', '0x10', 'NaN', '%', '%zz', '%00', '&', '=='),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
  fc.base64String({ maxLength: 120 }),
  hexString(0, 40),
  fc.integer({ min: 500, max: 9000 }).map((n) => 'A'.repeat(n)),
);

const queryArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constant('?') },
  {
    weight: 5,
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom('limit', 'cursor', 'prefix', 'limit', 'x', '', 'LIMIT', 'prefix[]', '%6Cimit'), queryValue), { minLength: 1, maxLength: 4 })
      .map((pairs) => '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&')),
  },
);

const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('/v1/blobs') },
  { weight: 10, arbitrary: idArb.map((id) => `/v1/blobs/${id}`) },
  { weight: 3, arbitrary: idArb.map((id) => `/v1/blobs/${id}/stream`) },
  { weight: 3, arbitrary: idArb.map((id) => `/v1/blobs/${id}/stat`) },
  { weight: 2, arbitrary: fc.constant('/v1/blobs/stream') },
  { weight: 2, arbitrary: fc.constantFrom('join', 'leave', 'heartbeat', 'state', 'sync-ring', '', 'x/y').map((r) => `/v1/cluster/${r}`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '/', '/healthz', '/health', '/metrics', '/api/v1/metrics', '/v1', '/v1/', '/v1/blobs/', '//v1/blobs', '/v1//blobs',
      '/v1/blobs/../blobs', '/v1/blobs/./x', '/V1/BLOBS', '/v2/blobs', '/v1/blobs%2F', '*', '/v1/blobs/x/y/z', '/v1/blobs//stream',
    ),
  },
  { weight: 1, arbitrary: fc.array(idArb, { minLength: 1, maxLength: 5 }).map((segs) => '/' + segs.join('/')) },
);

export const targetArb: fc.Arbitrary<string> = fc.tuple(pathArb, queryArb).map(([p, q]) => p + q);

// ---- headers ----

const CONTENT_TYPES = [
  'application/json', 'application/octet-stream', 'APPLICATION/JSON', 'application/json; charset=utf-8',
  'application/json;charset=latin1', 'Application/Octet-Stream; x=y', 'text/plain', 'multipart/form-data; boundary=x',
  'application/x-ndjson', 'application/grpc', '', ';', 'application/', '*/*', 'application/json, application/octet-stream',
];

const jsonishText: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.dictionary(fc.string({ maxLength: 12 }), fc.string({ maxLength: 20 }), { maxKeys: 6 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('{', '[', '{"a":', 'null', '{"a":1}', '{"__proto__":"x"}', '{"a":"b","a":"c"}', '"x"', '1e999', '{"'),
  fc.integer({ min: 10, max: 3000 }).map((n) => '['.repeat(n)),
  fc.integer({ min: 10, max: 1500 }).map((n) => '{"a":'.repeat(n) + '"x"' + '}'.repeat(n)),
);

const policyHeader: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: -2, max: 8 }).map(String),
  fc.constantFrom('NONE', 'replica2', 'REPLICATION_POLICY_EC42', 'EC82', 'REPLICATION_POLICY_UNSPECIFIED', ' 1 ', '1.0', '01', '1,2', 'null', '', 'REPLICATION_POLICY_', 'ÿ'),
  jsonishText.map((s) => s.slice(0, 3000)),
);

const headerValue: fc.Arbitrary<string> = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 });

const extraHeader: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(fc.constant('Range'), fc.constantFrom('bytes=0-10', 'bytes=-5', 'bytes=10-', 'bytes=5-1', 'bytes=0-0,2-3', 'bytes=abc', 'items=0-1', 'bytes=99999999999999999999-')),
  fc.tuple(fc.constantFrom('If-None-Match', 'If-Match', 'If-Range'), fc.constantFrom('*', '"abc"', 'W/"x"', '', '"' + '0'.repeat(64) + '"')),
  fc.tuple(fc.constant('Authorization'), fc.constantFrom('Bearer ', 'Bearer x', 'Basic Zm9vOmJhcg==', 'x'.repeat(500))),
  fc.tuple(fc.constantFrom('Accept', 'Accept-Encoding', 'X-Forwarded-For', 'Cookie', 'Origin', 'Grpc-Timeout', 'TE', 'Expect'), headerValue),
  fc.tuple(fc.constant('Expect'), fc.constant('100-continue')),
  fc.tuple(fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-0123456789'), minLength: 1, maxLength: 20 }), headerValue),
  fc.tuple(fc.constant('X-Long'), fc.integer({ min: 1000, max: 6000 }).map((n) => 'v'.repeat(n))),
);

// ---- bodies ----

/** JSON text to splice in as is: nesting too deep for JSON.stringify in this process. */
export class RawJson {
  constructor(readonly text: string) {}
}

const deepArray = (n: number): RawJson => new RawJson('['.repeat(n) + ']'.repeat(n));
const deepObject = (n: number): RawJson => new RawJson('{"a":'.repeat(n) + '"x"' + '}'.repeat(n));

/** JSON.stringify that splices RawJson text in. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return '[' + value.map((v) => (v === undefined ? 'null' : toJson(v))).join(',') + ']';
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return '{' + fields.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(',') + '}';
  }
  return JSON.stringify(value) ?? 'null';
}

const base64Of = (b: Uint8Array, form: number): string => {
  const s = Buffer.from(b).toString(form % 2 === 0 ? 'base64' : 'base64url');
  return form >= 2 ? s.replace(/=+$/, '') : s;
};

export const dataField: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 300 }), fc.nat(3)).map(([b, f]) => base64Of(b, f)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 16 * 1024, max: 900 * 1024 }), fc.nat()).map(([n, s]) => patternBytes(n, s).toString('base64')) },
  { weight: 1, arbitrary: fc.integer({ min: 1_100_000, max: 1_400_000 }).map((n) => 'A'.repeat(n)) },
  { weight: 3, arbitrary: fc.constantFrom('', '=', '====', 'a', 'ab=c', 'a===', '!!!!', 'aGk', 'aGk=\n', ' aGk=', 'aGk=aGk=', 'aGk=====', '\u00ff\u00fe', '\ud800', 'aG-_', 'aG+/') },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 2, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.nat(255), { maxLength: 8 }), fc.object({ maxDepth: 2 })) },
);

const labelKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...'abcXYZ019._/-'), minLength: 1, maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'a b', 'ä', '__proto__', 'constructor', 'toString', '\u0000', 'k'.repeat(129), 'k'.repeat(128)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
);

const labelsField: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.dictionary(labelKey, fc.string({ maxLength: 30 }), { maxKeys: 6 }) },
  { weight: 1, arbitrary: fc.integer({ min: 60, max: 5000 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']))) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 3000 }).map((n) => ({ k: 'v'.repeat(n) })) },
  { weight: 1, arbitrary: fc.constantFrom({ a: '\ud800' }, { a: 'ü€😀' }, { a: 1 }, { a: null }, { a: { b: 'c' } }, { a: ['x'] }, [], ['a', 'b'], 'a=b', 7, true) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 20_000 }).map(deepObject) },
);

const policyField: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -1, max: 7 }),
  fc.constantFrom('REPLICATION_POLICY_NONE', 'NONE', 'none', 'REPLICA2', 'REPLICATION_POLICY_EC42', 'EC82', '3', '3.0', '', 'x', 1.5, -0, 1e308, 2 ** 53, null, true, [], {}, [1], { value: 1 }),
  fc.integer({ min: 100, max: 20_000 }).map(deepArray),
  fc.integer({ min: 1000, max: 200_000 }).map((n) => 'P'.repeat(n)),
);

const MISSING = Symbol('missing');
const maybe = <T>(arb: fc.Arbitrary<T>, weight = 3): fc.Arbitrary<T | typeof MISSING> =>
  fc.oneof({ weight, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(MISSING) });

/** A store body as a JS value: the spec's fields with hostile values, plus extra fields. */
export const storeObjectArb: fc.Arbitrary<Record<string, unknown>> = fc
  .record({
    data: maybe(dataField, 8),
    policy: maybe(policyField, 1),
    labels: maybe(labelsField, 1),
    id: maybe(fc.oneof(bytes16.map((b) => ({ id: b.toString('base64') })), fc.jsonValue({ maxDepth: 2 })), 1),
    final: maybe(fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })), 1),
    extra: maybe(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), 1),
  })
  .map((r) => {
    const out: Record<string, unknown> = {};
    for (const key of ['data', 'policy', 'labels', 'id', 'final'] as const) if (r[key] !== MISSING) out[key] = r[key];
    if (r.extra !== MISSING) for (const [k, v] of Object.entries(r.extra as Record<string, unknown>)) if (!(k in out)) out[k] = v;
    return out;
  });

/** Byte-level damage to serialized JSON: cuts, invalid UTF-8, duplicate keys, deep nesting, huge numbers. */
export type Mutation =
  | { kind: 'none' }
  | { kind: 'cut'; at: number }
  | { kind: 'insert'; at: number; bytes: readonly number[] }
  | { kind: 'duplicate-data'; value: string }
  | { kind: 'nest'; depth: number; open: string }
  | { kind: 'number'; text: string }
  | { kind: 'wrap'; before: string; after: string };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Mutation>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.nat().map((at) => ({ kind: 'cut' as const, at })) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      bytes: fc.oneof(
        fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x00], [0xef, 0xbb, 0xbf], [0x5c], [0x22]),
        fc.array(fc.nat(255), { minLength: 1, maxLength: 4 }),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom('aGk=', '!!', '').map((value) => ({ kind: 'duplicate-data' as const, value })) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('nest' as const), depth: fc.integer({ min: 1000, max: 120_000 }), open: fc.constantFrom('[', '{"a":', '{"data":[') }) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.constantFrom('1e999999', '-1e-999999', '-0', '1E+2', '0.0000000000000000000001', 'NaN', 'Infinity', '0x10', '01'), fc.integer({ min: 20, max: 5000 }).map((n) => '9'.repeat(n)))
      .map((text) => ({ kind: 'number' as const, text })),
  },
  { weight: 1, arbitrary: fc.constantFrom(['\ufeff', ''], ['', 'x'], ['', '\n{}'], [' \t\n', ' \n'], ['[', ']'], ['"', '"']).map(([before, after]) => ({ kind: 'wrap' as const, before: before!, after: after! })) },
);

export function applyMutation(json: string, m: Mutation): Buffer {
  const body = Buffer.from(json, 'utf8');
  switch (m.kind) {
    case 'none':
      return body;
    case 'cut':
      return body.subarray(0, m.at % (body.length + 1));
    case 'insert': {
      const at = m.at % (body.length + 1);
      return Buffer.concat([body.subarray(0, at), Buffer.from(m.bytes), body.subarray(at)]);
    }
    case 'duplicate-data':
      return Buffer.from(json.replace(/^\{/, `{"data":${JSON.stringify(m.value)},`), 'utf8');
    case 'nest': {
      const close = m.open === '[' ? ']' : m.open === '{"a":' ? '}' : ']}';
      return Buffer.from(`{"data":"aGk=","labels":${m.open.repeat(m.depth)}1${close.repeat(m.depth)}}`, 'utf8');
    }
    case 'number':
      return Buffer.from(json.replace(/^\{/, `{"policy":${m.text},`), 'utf8');
    case 'wrap':
      return Buffer.from(m.before + json + m.after, 'utf8');
  }
}

export const jsonBodyArb: fc.Arbitrary<Buffer> = fc
  .tuple(storeObjectArb, mutationArb)
  .map(([obj, m]) => applyMutation(toJson(obj), m));

export const rawBodyArb: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 8, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b)) },
  { weight: 2, arbitrary: fc.tuple(fc.integer({ min: 16 * 1024, max: 3 * 1024 * 1024 }), fc.nat()).map(([n, s]) => patternBytes(n, s)) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
);

// ---- whole requests ----

const methodArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 40, arbitrary: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'HEAD') },
  { weight: 4, arbitrary: fc.constantFrom('OPTIONS', 'PATCH', 'CONNECT', 'TRACE') },
  { weight: 1, arbitrary: fc.constantFrom('FOO', 'get', 'Post', 'PROPFIND', 'M-SEARCH', 'QUERY', 'GETX', 'PURGE') },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'), minLength: 1, maxLength: 12 }) },
);

const framingArb: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 30, arbitrary: fc.constant('length' as const) },
  { weight: 4, arbitrary: fc.constant('none' as const) },
  { weight: 8, arbitrary: fc.constant('chunked' as const) },
  { weight: 2, arbitrary: fc.constant('length-short' as const) },
  { weight: 1, arbitrary: fc.constant('length-long' as const) },
  { weight: 1, arbitrary: fc.constant('chunked-cut' as const) },
  { weight: 2, arbitrary: fc.constantFrom('chunked-bad' as const, 'length-and-chunked' as const, 'length-twice' as const, 'length-junk' as const) },
);

/** Method and target: mostly a route's own methods (to reach the handlers), sometimes anything. */
const lineArb: fc.Arbitrary<{ method: string; target: string }> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ method: fc.constantFrom('POST', 'PUT'), target: queryArb.map((q) => '/v1/blobs' + q) }) },
  { weight: 3, arbitrary: fc.record({ method: fc.constant('GET'), target: queryArb.map((q) => '/v1/blobs' + q) }) },
  { weight: 6, arbitrary: fc.record({ method: fc.constantFrom('GET', 'HEAD', 'DELETE'), target: fc.tuple(idArb, queryArb).map(([id, q]) => `/v1/blobs/${id}${q}`) }) },
  { weight: 3, arbitrary: fc.record({ method: fc.constant('GET'), target: fc.tuple(idArb, fc.constantFrom('stat', 'stream')).map(([id, r]) => `/v1/blobs/${id}/${r}`) }) },
  { weight: 2, arbitrary: fc.record({ method: fc.constant('POST'), target: fc.constant('/v1/blobs/stream') }) },
  { weight: 8, arbitrary: fc.record({ method: methodArb, target: targetArb }) },
);

/** The operations listener's paths (metrics, health, UI), their near misses, and anything. */
const opsLineArb: fc.Arbitrary<{ method: string; target: string }> = fc.record({
  method: fc.oneof({ weight: 3, arbitrary: fc.constant('GET') }, { weight: 2, arbitrary: methodArb }),
  target: fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.constantFrom('/metrics', '/api/v1/metrics', '/api/v1/metrics/detail', '/health', '/', '/metrics/', '/api/v1', '/api/v1/metrics/x', '/healthz', '/v1/blobs', '//metrics', '/METRICS', '/health/'), queryArb)
        .map(([p, q]) => p + q),
    },
    { weight: 1, arbitrary: targetArb },
  ),
});

const requestArbWith = (lines: fc.Arbitrary<{ method: string; target: string }>): fc.Arbitrary<FuzzRequest> => fc
  .record({
    line: lines,
    contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined, freq: 5 }),
    policy: fc.option(policyHeader, { nil: undefined, freq: 2 }),
    labels: fc.option(jsonishText, { nil: undefined, freq: 3 }),
    extra: fc.array(extraHeader, { maxLength: 3 }),
    body: fc.oneof(
      { weight: 2, arbitrary: jsonBodyArb.map((body) => ({ kind: 'json' as const, body })) },
      { weight: 2, arbitrary: rawBodyArb.map((body) => ({ kind: 'raw' as const, body })) },
      { weight: 1, arbitrary: fc.constant({ kind: 'none' as const, body: Buffer.alloc(0) }) },
    ),
    framing: framingArb,
    cuts: fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 6 }),
    connectionClose: fc.boolean(),
    preferRaw: fc.boolean(),
  })
  .map((r) => {
    const headers: [string, string][] = [];
    const body = r.body.body;
    const type = r.contentType ?? (r.body.kind === 'json' ? 'application/json' : r.body.kind === 'raw' ? 'application/octet-stream' : undefined);
    if (type !== undefined) headers.push(['Content-Type', type]);
    if (r.policy !== undefined) headers.push(['X-Blobstore-Policy', r.policy]);
    if (r.labels !== undefined) headers.push(['X-Blobstore-Labels', r.labels]);
    headers.push(...r.extra);
    return { method: r.line.method, target: r.line.target, headers, body, framing: r.framing, cuts: r.cuts, connectionClose: r.connectionClose, preferRaw: r.preferRaw };
  });

export const requestArb = requestArbWith(lineArb);
export const opsRequestArb = requestArbWith(opsLineArb);

// ---- putting a request on the wire ----

function chunked(body: Buffer, cuts: number[], end: boolean): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < body.length; i++) {
    const n = Math.min(cuts[i % cuts.length]!, body.length - at);
    parts.push(Buffer.from(`${n.toString(16)}\r\n`), body.subarray(at, at + n), Buffer.from('\r\n'));
    at += n;
  }
  if (end) parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

const BAD_CHUNKS = ['zz\r\nab\r\n0\r\n\r\n', '-1\r\nab\r\n0\r\n\r\n', 'ffffffffffffffffffff\r\nab\r\n', '2\r\nabc\r\n0\r\n\r\n', '2\nab\n0\n\n', '2 ;x\r\nab\r\n0\r\n\r\n', '\r\n\r\n', '0x2\r\nab\r\n0\r\n\r\n'];
const JUNK_LENGTHS = ['abc', '-1', '1e3', ' 5', '0x10', '99999999999', '1,2', '', '+5', '5 5', '00000000000000000000005'];

/** The request as bytes for a raw socket. */
export function serialize(req: FuzzRequest): Buffer {
  const lines = [`${req.method} ${req.target} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [k, v] of req.headers) lines.push(`${k}: ${v}`);
  if (req.connectionClose) lines.push('Connection: close');
  const b = req.body;
  let body: Buffer = b;
  const pick = (list: string[]): string => list[b.length % list.length]!;
  switch (req.framing) {
    case 'length':
      if (b.length > 0 || req.method === 'POST' || req.method === 'PUT') lines.push(`Content-Length: ${b.length}`);
      break;
    case 'none':
      body = Buffer.alloc(0);
      break;
    case 'chunked':
      lines.push('Transfer-Encoding: chunked');
      body = chunked(b, req.cuts, true);
      break;
    case 'length-short':
      lines.push(`Content-Length: ${Math.floor(b.length / 2)}`);
      break;
    case 'length-long':
      lines.push(`Content-Length: ${b.length + 1 + (req.cuts[0] ?? 1)}`);
      break;
    case 'chunked-cut':
      lines.push('Transfer-Encoding: chunked');
      body = chunked(b, req.cuts, false);
      break;
    case 'chunked-bad':
      lines.push('Transfer-Encoding: chunked');
      body = Buffer.concat([chunked(b.subarray(0, req.cuts[0]), req.cuts, false), Buffer.from(pick(BAD_CHUNKS))]);
      break;
    case 'length-and-chunked':
      lines.push(`Content-Length: ${b.length}`, 'Transfer-Encoding: chunked');
      body = chunked(b, req.cuts, true);
      break;
    case 'length-twice':
      lines.push(`Content-Length: ${b.length}`, `Content-Length: ${b.length + (req.cuts[0] ?? 0) % 7}`);
      break;
    case 'length-junk':
      lines.push(`Content-Length: ${pick(JUNK_LENGTHS)}`);
      break;
  }
  // UTF-8: a character past U+00FF must not turn into a CR or LF byte.
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'utf8'), body]);
}

/** A target that is not origin-form (`/...`, RFC 9112 §3.2.1) or has a byte that is not visible ASCII (§3.2). */
export const malformedTarget = (target: string): boolean => !target.startsWith('/') || /[^\x21-\x7e]/.test(target);

/** A head field a strict parser refuses (RFC 9110 §5.1, §5.5): a name that is not a token, a control byte but tab in a value. */
export const malformedField = (req: Pick<FuzzRequest, 'headers'>): boolean =>
  req.headers.some(([k, v]) => !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(k) || /[\x00-\x08\x0a-\x1f\x7f]/.test(v));

/** Whether fetch can send this request unchanged (else it goes raw). */
export function fetchable(req: FuzzRequest, base: string): boolean {
  if (req.preferRaw || req.framing !== 'length' || !FETCH_METHODS.has(req.method)) return false;
  if ((req.method === 'GET' || req.method === 'HEAD') && req.body.length > 0) return false;
  if (req.headers.some(([k, v]) => FETCH_FORBIDDEN_HEADERS.test(k) || /[^\x20-\x7e]/.test(v))) return false;
  try {
    const url = new URL(req.target, base);
    return url.pathname + url.search === req.target;
  } catch {
    return false;
  }
}

/** A one-line description for failure messages. */
export function describeRequest(req: FuzzRequest): string {
  const headers = req.headers.map(([k, v]) => `${k}: ${v.slice(0, 120)}`).join(' | ');
  return `${req.method} ${req.target.slice(0, 300)} [${req.framing}${req.connectionClose ? ', close' : ''}] {${headers}} body ${req.body.length} B: ${req.body.toString('latin1', 0, 200)}`;
}
