/**
 * NDJSON put streams (POST /v1/blobs/stream) against one node per variant: clean streams must
 * store exactly the bytes sent (id = BLAKE3, read back through GET /v1/blobs/{id}/stream);
 * hostile ones (junk lines, bad fields, cut at a random byte, sent chunked in odd pieces, or the
 * connection dropped mid-stream) get a 4xx or the spec's 500 "ended before its final chunk", and
 * never leave a temp file or hurt the node.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { ANSWER_TIMEOUT_MS, FUZZ_NODE_ARGS, hexIdOf, servesVariantA } from './exchange.js';
import { dataField, RawJson, toJson } from './generators.js';
import { budgetMs, checkNode, count, fuzz, newStats, probeSurface, type Surface, testTimeout, type Variant, verdict, stopAndClean } from './harness.js';
import { type Outcome, rawExchange } from './http-client.js';

const SHARE = 0.075;

interface Chunk {
  data: Buffer;
  /** How `data` is written: base64 forms, or a hostile value instead. */
  dataForm: number;
  hostileData?: unknown;
  policy?: unknown;
  labels?: unknown;
  /** 'right': the blob's real id on every chunk; 'wrong': a random id; or a hostile value. */
  id?: 'right' | 'wrong' | { value: unknown };
  final?: unknown;
}

interface StreamCase {
  clean: boolean;
  chunks: Chunk[];
  junk: { at: number; line: string | readonly number[] }[];
  crlf: boolean;
  trailingNewline: boolean;
  /** Cut the body at this fraction (0-1) of its bytes, or keep it whole. */
  cut: number | undefined;
  delivery: 'length' | 'chunked' | 'drop';
  pieces: number[];
}

const bytesArb = fc.oneof(
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 3000 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.integer({ min: 20_000, max: 300_000 }).map((n) => Buffer.alloc(n, n & 0xff)) },
);

const validPolicy = fc.constantFrom(undefined, 0, 1, 2, 3, 'REPLICATION_POLICY_NONE', 'REPLICA2', 'NONE');
const validLabels = fc.option(fc.dictionary(fc.string({ unit: fc.constantFrom(...'abcxyz09._/-'), minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 4 }), { nil: undefined });

const cleanChunk = (first: boolean): fc.Arbitrary<Chunk> =>
  fc.record({
    data: bytesArb,
    dataForm: fc.nat(3),
    policy: first ? validPolicy : fc.constant(undefined),
    labels: first ? validLabels : fc.constant(undefined),
    id: fc.constantFrom<Chunk['id']>(undefined, undefined, 'right'),
  });

const hostileChunk: fc.Arbitrary<Chunk> = fc.record(
  {
    data: bytesArb,
    dataForm: fc.nat(3),
    hostileData: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: dataField }),
    policy: fc.oneof(validPolicy, fc.constantFrom(4, 5, 'EC42', -1, 9, 'x', [], {}, null, 1.5), fc.integer({ min: 100, max: 5000 }).map((n) => new RawJson('['.repeat(n) + ']'.repeat(n)))),
    labels: fc.oneof(validLabels, fc.constantFrom([], 'x', 7, { 'bad key': 'v' }, { a: 1 }), fc.integer({ min: 65, max: 300 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v'])))),
    id: fc.oneof(
      fc.constantFrom<Chunk['id']>(undefined, 'right', 'wrong'),
      fc.constantFrom('', 'abc', '0'.repeat(31), 'ZZ'.repeat(16), 5, [], { id: 7 }, { id: '!!' }, { id: '' }, { x: 1 }).map((value) => ({ value })),
    ),
    final: fc.oneof(fc.boolean(), fc.constantFrom('true', 1, 0, null, [], {})),
  },
  { requiredKeys: ['data', 'dataForm'] },
);

const junkLine = fc.oneof(
  fc.constantFrom('xyz', '[]', '{}', 'null', '"s"', '{"data":1}', '{"data":"aGk=","final":"no"}', '{', '}{', '{"data":"aGk="}{"data":"aGk="}', ' ', '\t', '\u0000'),
  fc.constantFrom([0xff, 0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x7b, 0x22, 0xff, 0x22, 0x7d]),
  fc.integer({ min: 1000, max: 100_000 }).map((n) => '['.repeat(n)),
  fc.integer({ min: 1_100_000, max: 1_300_000 }).map((n) => `{"data":"${'A'.repeat(n)}"}`),
);

const streamArb: fc.Arbitrary<StreamCase> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.integer({ min: 1, max: 5 }).chain((n) =>
      fc.record({
        clean: fc.constant(true),
        chunks: fc.tuple(cleanChunk(true), fc.array(cleanChunk(false), { minLength: n - 1, maxLength: n - 1 })).map(([a, rest]) => [a, ...rest]),
        junk: fc.constant<StreamCase['junk']>([]),
        crlf: fc.boolean(),
        trailingNewline: fc.boolean(),
        cut: fc.constant(undefined),
        delivery: fc.constantFrom('length' as const, 'chunked' as const),
        pieces: fc.array(fc.integer({ min: 1, max: 40_000 }), { minLength: 1, maxLength: 8 }),
      }),
    ),
  },
  {
    weight: 7,
    arbitrary: fc.record({
      clean: fc.constant(false),
      chunks: fc.array(hostileChunk, { maxLength: 5 }),
      junk: fc.array(fc.record({ at: fc.nat(), line: junkLine }), { maxLength: 2 }),
      crlf: fc.boolean(),
      trailingNewline: fc.boolean(),
      cut: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
      delivery: fc.constantFrom('length' as const, 'chunked' as const, 'chunked' as const, 'drop' as const),
      pieces: fc.array(fc.integer({ min: 1, max: 40_000 }), { minLength: 1, maxLength: 8 }),
    }),
  },
);

const base64Forms = (b: Buffer, form: number): string => {
  const s = b.toString(form % 2 === 0 ? 'base64' : 'base64url');
  return form >= 2 ? s.replace(/=+$/, '') : s;
};

/** The body bytes and, for clean streams, the blob they store. */
async function render(c: StreamCase): Promise<{ body: Buffer; blob: Buffer }> {
  const blob = Buffer.concat(c.chunks.map((ch) => ch.data));
  const rightId = Buffer.from(await expectedId(blob), 'hex');
  const lines: Buffer[] = c.chunks.map((ch, i) => {
    const msg: Record<string, unknown> = { data: ch.hostileData !== undefined ? ch.hostileData : base64Forms(ch.data, ch.dataForm) };
    if (ch.policy !== undefined) msg.policy = ch.policy;
    if (ch.labels !== undefined) msg.labels = ch.labels;
    if (ch.id === 'right') msg.id = i % 2 === 0 ? { id: rightId.toString('base64') } : rightId.toString('hex');
    else if (ch.id === 'wrong') msg.id = { id: Buffer.alloc(16, 7).toString('base64') };
    else if (ch.id !== undefined) msg.id = ch.id.value;
    msg.final = c.clean ? i === c.chunks.length - 1 : ch.final;
    return Buffer.from(toJson(msg), 'utf8');
  });
  for (const j of c.junk) lines.splice(j.at % (lines.length + 1), 0, typeof j.line === 'string' ? Buffer.from(j.line, 'utf8') : Buffer.from(j.line));
  const nl = Buffer.from(c.crlf ? '\r\n' : '\n');
  const parts: Buffer[] = [];
  lines.forEach((l, i) => parts.push(l, ...(i < lines.length - 1 || c.trailingNewline ? [nl] : [])));
  let body = Buffer.concat(parts);
  if (c.cut !== undefined) body = body.subarray(0, Math.floor(body.length * c.cut));
  return { body, blob };
}

/**
 * Pieces sent 1 ms apart end within the answer timeout when there are at most this many: a large
 * body's pieces grow to fit. (A stream sent slowly for longer is a client the node must wait for,
 * not idle: test/uploads.test.ts.)
 */
const MAX_PIECES = 400;

function chunkedPieces(body: Buffer, sizes: number[]): Buffer[] {
  const out: Buffer[] = [];
  const least = Math.ceil(body.length / MAX_PIECES);
  let at = 0;
  for (let i = 0; at < body.length; i++) {
    const n = Math.min(Math.max(sizes[i % sizes.length]!, least), body.length - at);
    out.push(Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), body.subarray(at, at + n), Buffer.from('\r\n')]));
    at += n;
  }
  out.push(Buffer.from('0\r\n\r\n'));
  return out;
}

let drops = 0;

/** Sends the case; undefined for a dropped stream, once the node has ended it. */
async function sendStream(node: NodeProcess, c: StreamCase, body: Buffer): Promise<Outcome | undefined> {
  const head = (framing: string): Buffer => Buffer.from(`POST /v1/blobs/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n${framing}\r\n\r\n`);
  if (c.delivery === 'length') return rawExchange(node.port, Buffer.concat([head(`Content-Length: ${body.length}`), body]), { timeoutMs: ANSWER_TIMEOUT_MS });
  if (c.delivery === 'chunked') {
    const pieces = [head('Transfer-Encoding: chunked'), ...chunkedPieces(body, c.pieces)];
    return rawExchange(node.port, Buffer.alloc(0), { timeoutMs: ANSWER_TIMEOUT_MS, pieces, pauseMs: 1 });
  }
  // Drop: declare the whole body, send a part, go away. The node has ended the request once its
  // access line is out (by request id; the node writes one for every request), answered or not.
  const reqId = `dropped-${++drops}`;
  const part = body.subarray(0, Math.floor(body.length / 2));
  await rawExchange(node.port, Buffer.concat([head(`Content-Length: ${body.length + 10}\r\nX-Request-Id: ${reqId}`), part]), { timeoutMs: 100 });
  await waitFor(() => node.output().includes(`"reqId":"${reqId}"`), { what: `the node's access line of the dropped stream ${reqId}`, timeoutMs: 10_000, pollMs: 10 });
  return undefined;
}

/** Reads a blob back through the NDJSON get stream. */
async function readStream(url: string, id: string): Promise<Buffer> {
  const res = await fetch(`${url}/v1/blobs/${id}/stream`);
  expect(res.status).toBe(200);
  const text = await res.text();
  const lines = text.split('\n').filter((l) => l !== '');
  const parts = lines.map((l) => JSON.parse(l) as { result?: { data?: string; final?: boolean }; error?: unknown });
  expect(parts.every((p) => p.result !== undefined), text.slice(0, 300)).toBe(true);
  expect(parts.at(-1)!.result!.final).toBe(true);
  return Buffer.concat(parts.map((p) => Buffer.from(p.result!.data ?? '', 'base64')));
}

describe.each([
  { variant: 'b' as Variant, args: [] as string[] },
  { variant: 'a' as Variant, args: ['--api-variant', 'a'] },
])('NDJSON put streams, variant $variant', ({ variant, args }) => {
  let node: NodeProcess;
  let surface: Surface;
  let served = true;

  beforeAll(async () => {
    node = await startNode({ args: [...FUZZ_NODE_ARGS, '--access-log-every', '1', ...args] });
    served = variant === 'b' || (await servesVariantA(node.url));
    surface = await probeSurface(node.url, variant);
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  it(
    'clean streams store exactly their bytes; hostile, cut or dropped ones get 4xx (or 500 ended-before) and leave nothing behind',
    async (ctx) => {
      if (!served) return ctx.skip('variant A is not served yet');
      if (surface.unimplemented.has('put-stream')) return ctx.skip('POST /v1/blobs/stream has no handler yet');
      const stats = newStats();
      await fuzz(
        `ndjson-${variant}`,
        streamArb,
        async (c) => {
          const { body, blob } = await render(c);
          const out = await sendStream(node, c, body);
          if (!out) {
            count(stats, 'dropped');
            return checkNode(node);
          }
          count(stats, out.answers[0]?.status ?? (out.timedOut ? 'timeout' : 'closed'), c.clean ? 'clean' : c.delivery, out.ms);
          const problem = verdict(surface, { method: 'POST', target: '/v1/blobs/stream', malformed: false }, out);
          const where = `stream of ${c.chunks.length} chunks, ${body.length} bytes, ${c.delivery}: ${body.toString('latin1', 0, 300)}`;
          if (problem) throw new Error(`${problem}\n${where}`);
          if (c.clean) {
            const a = out.answers[0]!;
            if (a.status !== 200 && a.status !== 201) throw new Error(`clean stream answered ${a.status} ${a.body.toString('utf8', 0, 300)}\n${where}`);
            const id = hexIdOf(JSON.parse(a.body.toString('utf8')) as { id?: unknown });
            expect(id, 'id is the BLAKE3 of the bytes').toBe(await expectedId(blob));
            expect((await readStream(node.url, id)).equals(blob), 'read back through the get stream').toBe(true);
          }
          await checkNode(node);
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`ndjson-${variant}: ${stats.runs} streams, statuses ${JSON.stringify(stats.statuses)}, ms ${JSON.stringify(stats.msByKind)}`);
    },
    testTimeout(budgetMs(SHARE)),
  );
});
