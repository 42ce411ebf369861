/**
 * Random requests whose right answer is known: byte ranges and conditional GETs of blobs whose
 * bytes the test holds (206 bodies equal their Content-Range slice, 416 only for an unsatisfiable
 * range, 304 only for a matching ETag), and list paging with random prefixes, limits and tampered
 * cursors (pages walk exactly the ids with that prefix, in order, once each).
 */
import './fc-config.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { patternBytes } from '../helpers/blobs.js';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { FUZZ_NODE_ARGS, hexIdOf, servesVariantA } from './exchange.js';
import { budgetMs, checkNode, count, errorShapeProblem, fuzz, newStats, testTimeout, type Variant, stopAndClean } from './harness.js';
import type { Answer } from './http-client.js';

const SHARE = 0.05;
const KiB = 1024;
const MiB = 1024 * KiB;
const SIZES = [0, 1, 100, 16 * KiB - 1, 16 * KiB + 1, MiB, MiB + 1, 3 * MiB + 17];

async function get(url: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(15_000) });
  const map = new Map<string, string>();
  res.headers.forEach((v, k) => map.set(k, v));
  return { status: res.status, headers: map, body: Buffer.from(await res.arrayBuffer()) };
}

/** Reads the head and the first body chunk, then drops the connection. */
async function getAndAbort(url: string, headers: Record<string, string>): Promise<Answer> {
  const ctl = new AbortController();
  const res = await fetch(url, { headers, signal: ctl.signal });
  const reader = res.body?.getReader();
  await reader?.read().catch(() => undefined);
  ctl.abort();
  return { status: res.status, headers: new Map(), body: Buffer.alloc(0) };
}

// ---- ranges ----

interface Blob {
  id: string;
  data: Buffer;
  etag: string;
}

type RangeCase = { blob: number; range: string | undefined; ifRange: string | undefined; ifNoneMatch: string | undefined; abort: boolean };

/** What RFC 9110 says of a strict single range `bytes=a-b` / `a-` / `-n` (undefined: not one). */
function reference(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | 'ignored' | undefined {
  const m = /^bytes=(\d{0,15})-(\d{0,15})$/.exec(header);
  if (!m) return undefined;
  const [, a, b] = m;
  if (a === '' && b === '') return 'ignored';
  if (a === '') {
    const n = Number(b);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(a);
  if (b !== '' && Number(b) < start) return 'ignored';
  if (start >= size) return 'unsatisfiable';
  return { start, end: b === '' ? size - 1 : Math.min(Number(b), size - 1) };
}

/** Present one time in five. */
const rarely = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

const rangeCase = (blobs: number): fc.Arbitrary<RangeCase> =>
  fc.nat(blobs - 1).chain((blob) =>
    fc.record({
      blob: fc.constant(blob),
      range: fc.option(
        fc.oneof(
          { weight: 5, arbitrary: fc.tuple(fc.oneof(fc.nat(4 * MiB), fc.constantFrom(0, 1, MiB - 1, MiB, MiB + 1, 2 ** 53, 1e15 - 1)), fc.option(fc.nat(4 * MiB), { nil: undefined })).map(([a, b]) => `bytes=${a}-${b ?? ''}`) },
          { weight: 2, arbitrary: fc.oneof(fc.nat(4 * MiB), fc.constant(0)).map((n) => `bytes=-${n}`) },
          { weight: 2, arbitrary: fc.constantFrom('bytes=', 'bytes=-', 'bytes=0-0', 'bytes=1-2,3-4', 'bytes = 0-1', 'items=0-1', 'bytes=0-1 ', 'bytes=01-02', 'bytes=+1-2', 'bytes=99999999999999999-', 'bytes=0-99999999999999999', 'bytes=5-1', 'BYTES=0-1', 'bytes=\t0-1') },
        ),
        { nil: undefined, freq: 8 },
      ),
      ifRange: rarely(fc.constantFrom('ETAG', 'W/ETAG', '"other"', 'Mon, 23 Nov 2026 00:00:00 GMT', '')),
      ifNoneMatch: rarely(fc.constantFrom('ETAG', 'W/ETAG', '*', '"other"', '"other", ETAG', '')),
      // The client goes away after the first bytes of the body.
      abort: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))).chain((b) => (b ? fc.boolean() : fc.constant(false))),
    }),
  );

function judgeRange(c: RangeCase, blob: Blob, a: Answer): string | undefined {
  const size = blob.data.length;
  const inm = c.ifNoneMatch?.replace('ETAG', blob.etag);
  const matches = inm !== undefined && inm.split(',').some((t) => ['*', blob.etag, `W/${blob.etag}`].includes(t.trim()));
  if (matches) return a.status === 304 && a.body.length === 0 ? undefined : `If-None-Match ${inm} matches: expected 304, got ${a.status}`;
  if (a.status === 304) return 'a 304 without a matching If-None-Match';
  const ifRange = c.ifRange?.replace('ETAG', blob.etag);
  const ref = c.range === undefined ? 'ignored' : ifRange !== undefined && ifRange !== '' && ifRange !== blob.etag ? 'ignored' : reference(c.range, size);
  if (a.status === 200) {
    if (!a.body.equals(blob.data)) return `200 with ${a.body.length} bytes, not the blob's ${size}`;
    if (ref !== undefined && ref !== 'ignored') return `a ${ref === 'unsatisfiable' ? 'unsatisfiable' : 'valid'} range answered 200`;
    return undefined;
  }
  if (a.status === 206) {
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(a.headers.get('content-range') ?? '');
    if (!m) return `206 with Content-Range ${a.headers.get('content-range')}`;
    const [start, end, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (total !== size || start > end || end >= size) return `206 Content-Range ${m[0]} for a blob of ${size} bytes`;
    if (!a.body.equals(blob.data.subarray(start, end + 1))) return `206 body (${a.body.length} bytes) is not bytes ${start}-${end}`;
    if (ref === 'ignored' || ref === 'unsatisfiable') return `answered 206 where the range is ${ref}`;
    if (ref && (ref.start !== start || ref.end !== end)) return `206 for ${start}-${end}, expected ${ref.start}-${ref.end}`;
    return undefined;
  }
  if (a.status === 416) {
    if (a.headers.get('content-range') !== `bytes */${size}`) return `416 with Content-Range ${a.headers.get('content-range')}`;
    if (ref !== undefined && ref !== 'unsatisfiable') return `416 for a range the RFC calls ${typeof ref === 'string' ? ref : 'satisfiable'}`;
    return errorShapeProblem('b', a);
  }
  return `status ${a.status}: ${a.body.toString('utf8', 0, 200)}`;
}

// ---- listing ----

interface Page {
  ids: string[];
  next: string | undefined;
  hasMore: boolean;
}

async function listPage(url: string, query: string): Promise<{ status: number; page?: Page; answer: Answer }> {
  const a = await get(`${url}/v1/blobs?${query}`, {});
  if (a.status !== 200) return { status: a.status, answer: a };
  const body = JSON.parse(a.body.toString('utf8')) as { ids: (string | { id: string })[]; next_cursor?: string; has_more: boolean };
  return { status: 200, answer: a, page: { ids: body.ids.map((id) => hexIdOf({ id })), next: body.next_cursor, hasMore: body.has_more } };
}

const listCase = fc.record({
  prefix: fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), maxLength: 3 }) },
    { weight: 1, arbitrary: fc.constantFrom('A', 'Fe', 'g', '%', '00000000000000000000000000000000', 'ff'.repeat(17), '') },
  ),
  limit: fc.option(fc.oneof(fc.integer({ min: -3, max: 40 }), fc.constantFrom(99, 100, 101, 10_000, 10_001, 2 ** 31 - 1)), { nil: undefined }),
  tamper: fc.option(fc.nat(), { nil: undefined, freq: 4 }),
});

describe.each([
  { variant: 'b' as Variant, args: [] as string[] },
  { variant: 'a' as Variant, args: ['--api-variant', 'a'] },
])('answers with a known right answer, variant $variant', ({ variant, args }) => {
  let node: NodeProcess;
  let served = true;
  const blobs: Blob[] = [];
  let all: string[] = [];

  beforeAll(async () => {
    node = await startNode({ args: [...FUZZ_NODE_ARGS, '--max-blob-bytes', '8MiB', '--list-max-limit', '50', '--list-default-limit', '20', ...args] });
    served = variant === 'b' || (await servesVariantA(node.url));
    if (!served) return;
    for (const [i, size] of SIZES.entries()) {
      const data = patternBytes(size, 100 + i);
      // Through the NDJSON stream: large blobs do not fit a JSON body.
      const lines: string[] = [];
      for (let at = 0; at < size || lines.length === 0; at += 512 * KiB) {
        const last = at + 512 * KiB >= size;
        lines.push(JSON.stringify({ data: data.subarray(at, at + 512 * KiB).toString('base64'), final: last, ...(at === 0 ? { policy: 1 } : {}) }));
      }
      const res = await fetch(`${node.url}/v1/blobs/stream`, { method: 'POST', body: lines.join('\n'), headers: { 'Content-Type': 'application/x-ndjson' } });
      expect(res.status).toBeLessThan(300);
      const id = hexIdOf((await res.json()) as { id?: unknown });
      const head = await fetch(`${node.url}/v1/blobs/${id}`, { method: variant === 'b' ? 'HEAD' : 'GET' });
      await head.arrayBuffer();
      blobs.push({ id, data, etag: head.headers.get('etag') ?? '' });
    }
    for (let i = 0; i < 300; i++) {
      const res = await fetch(`${node.url}/v1/blobs`, { method: 'PUT', body: JSON.stringify({ data: Buffer.from(`list ${i}`).toString('base64') }), headers: { 'Content-Type': 'application/json' } });
      expect(res.status).toBeLessThan(300);
    }
    for (let cursor = ''; ; ) {
      const { page } = await listPage(node.url, `limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      all.push(...page!.ids);
      if (!page!.hasMore) break;
      cursor = page!.next!;
    }
    all = [...all];
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  it('the full listing is sorted, without duplicates, and holds every stored blob', (ctx) => {
    if (!served) return ctx.skip('variant A is not served yet');
    expect(all.length).toBe(SIZES.length + 300);
    expect([...all].sort()).toEqual(all);
    expect(new Set(all).size).toBe(all.length);
    for (const b of blobs) expect(all).toContain(b.id);
  });

  it.runIf(variant === 'b')(
    'ranges and conditional GETs answer exactly the bytes, 416 or 304 the RFC calls for',
    async () => {
      for (const b of blobs) expect(b.etag).toMatch(/^"[0-9a-f]{64}"$/);
      const stats = newStats();
      await fuzz(
        `range-${variant}`,
        fc.array(rangeCase(blobs.length), { minLength: 1, maxLength: 4 }),
        async (cases) => {
          const answers = await Promise.all(
            cases.map((c) => {
              const blob = blobs[c.blob]!;
              const headers: Record<string, string> = {};
              if (c.range !== undefined) headers.Range = c.range;
              if (c.ifRange !== undefined) headers['If-Range'] = c.ifRange.replace('ETAG', blob.etag);
              if (c.ifNoneMatch !== undefined) headers['If-None-Match'] = c.ifNoneMatch.replace('ETAG', blob.etag);
              return c.abort ? getAndAbort(`${node.url}/v1/blobs/${blob.id}`, headers) : get(`${node.url}/v1/blobs/${blob.id}`, headers);
            }),
          );
          for (const [i, a] of answers.entries()) {
            const c = cases[i]!;
            count(stats, c.abort ? 'aborted' : a.status);
            if (c.abort) continue;
            const problem = judgeRange(c, blobs[c.blob]!, a);
            if (problem) throw new Error(`${problem}\nblob of ${blobs[c.blob]!.data.length} bytes; Range ${c.range}; If-Range ${c.ifRange}; If-None-Match ${c.ifNoneMatch}`);
          }
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`range-${variant}: ${stats.requests} GETs, statuses ${JSON.stringify(stats.statuses)}`);
      await checkNode(node);
    },
    testTimeout(budgetMs(SHARE)),
  );

  it(
    'list pages walk exactly the ids with the prefix, in order, each page within the limit; a tampered cursor is 400',
    async (ctx) => {
      if (!served) return ctx.skip('variant A is not served yet');
      const stats = newStats();
      await fuzz(
        `list-${variant}`,
        listCase,
        async ({ prefix, limit, tamper }) => {
          const pageMax = limit === undefined || limit <= 0 ? 20 : Math.min(limit, 50); // --list-default-limit 20, --list-max-limit 50
          // Variant B reads lower-case hex only (an upper-case prefix is 400); variant A either case.
          const hex = variant === 'b' ? prefix : prefix.toLowerCase();
          const want = /^[0-9a-f]*$/.test(hex) ? all.filter((id) => id.startsWith(hex)) : undefined;
          const seen: string[] = [];
          let cursor = '';
          for (let pages = 0; ; pages++) {
            if (pages > all.length + 2) throw new Error('list paging does not end');
            const query = `prefix=${encodeURIComponent(prefix)}${limit === undefined ? '' : `&limit=${limit}`}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
            const r = await listPage(node.url, query);
            count(stats, r.status);
            if (r.status !== 200) {
              if (r.status === 400 && want === undefined) return; // a prefix that is not hex may be refused
              throw new Error(`list ${query} answered ${r.status}: ${r.answer.body.toString('utf8', 0, 200)}`);
            }
            const page = r.page!;
            if (page.ids.length > pageMax) throw new Error(`page of ${page.ids.length} ids, limit ${limit} (at most ${pageMax})`);
            if (page.hasMore !== (page.next !== undefined && page.next !== '')) throw new Error(`has_more ${page.hasMore} with next_cursor ${page.next}`);
            if (page.hasMore && page.ids.length === 0) throw new Error('an empty page that says has_more');
            seen.push(...page.ids);
            if (!page.hasMore) break;
            if (tamper !== undefined && pages === 0) {
              // Flip one bit of the cursor's bytes (a flipped base64 character may only touch padding bits).
              const bytes = Buffer.from(page.next!, 'base64');
              bytes[tamper % bytes.length]! ^= 1 << (tamper % 8);
              const flipped = bytes.toString(/[+/=]/.test(page.next!) ? 'base64' : 'base64url');
              const t = await listPage(node.url, `prefix=${encodeURIComponent(prefix)}&cursor=${encodeURIComponent(flipped)}`);
              count(stats, `tampered-${t.status}`);
              if (t.status !== 400) throw new Error(`a tampered cursor answered ${t.status}: ${t.answer.body.toString('utf8', 0, 200)}`);
              const problem = errorShapeProblem(variant, t.answer);
              if (problem) throw new Error(problem);
            }
            cursor = page.next!;
          }
          if (want !== undefined) expect(seen, `prefix ${prefix}, limit ${limit}`).toEqual(want);
          else for (const id of seen) expect(id.startsWith(hex)).toBe(true);
        },
        budgetMs(SHARE),
        stats,
      );
      console.log(`list-${variant}: ${stats.runs} walks, ${stats.requests} pages, statuses ${JSON.stringify(stats.statuses)}`);
    },
    testTimeout(budgetMs(SHARE)),
  );
});

describe('variant A: every spelling of an id, and labels, come back as stored', () => {
  let node: NodeProcess;
  let served = true;
  const blobs: { id: Buffer; data: Buffer }[] = [];

  beforeAll(async () => {
    node = await startNode({ args: [...FUZZ_NODE_ARGS, '--api-variant', 'a'] });
    served = await servesVariantA(node.url);
    if (!served) return;
    // Ids with +, / and = in their base64 forms, found by trying contents.
    for (let i = 0; blobs.length < 12; i++) {
      const data = Buffer.from(`variant A id ${i}`);
      const res = await fetch(`${node.url}/v1/blobs`, { method: 'PUT', body: JSON.stringify({ data: data.toString('base64') }), headers: { 'Content-Type': 'application/json' } });
      const id = Buffer.from(hexIdOf((await res.json()) as { id?: unknown }), 'hex');
      if (blobs.length < 6 || /[+/]/.test(id.toString('base64'))) blobs.push({ id, data });
    }
  });
  afterAll(async () => {
    expect(await stopAndClean(node)).toBe(0);
  });

  const forms: [string, (id: Buffer) => string, boolean][] = [
    ['hex', (id) => id.toString('hex'), true],
    ['base64', (id) => encodeURIComponent(id.toString('base64')), true],
    ['base64 unpadded', (id) => encodeURIComponent(id.toString('base64').replace(/=+$/, '')), true],
    ['base64url', (id) => id.toString('base64url'), true],
    ['base64url padded', (id) => `${id.toString('base64url')}%3D%3D`, true],
    ['base64 with a raw +', (id) => id.toString('base64').replace(/\//g, '%2F').replace(/=/g, '%3D'), true],
    ['hex, upper case', (id) => id.toString('hex').toUpperCase(), true],
    ['base64 of 15 bytes', (id) => encodeURIComponent(id.subarray(1).toString('base64')), false],
    ['base64 of 17 bytes', (id) => encodeURIComponent(Buffer.concat([id, Buffer.from([0])]).toString('base64')), false],
  ];

  it(
    'GET, /stat and /stream resolve every valid spelling of an id to the blob; invalid spellings are 400 or 404',
    async (ctx) => {
      if (!served) return ctx.skip('variant A is not served yet');
      const stats = newStats();
      await fuzz(
        'ids-a',
        fc.record({ blob: fc.nat(blobs.length - 1), form: fc.nat(forms.length - 1), route: fc.constantFrom('', '/stat', '/stream') }),
        async ({ blob, form, route }) => {
          const { id, data } = blobs[blob]!;
          const [name, spell, valid] = forms[form]!;
          const a = await get(`${node.url}/v1/blobs/${spell(id)}${route}`, {});
          count(stats, `${name}${route}: ${a.status}`);
          const where = `${name} ${spell(id)}${route}`;
          if (!valid) {
            if (a.status !== 400 && a.status !== 404) throw new Error(`${where}: ${a.status}`);
            return;
          }
          if (a.status !== 200) throw new Error(`${where}: ${a.status} ${a.body.toString('utf8', 0, 200)}`);
          const text = a.body.toString('utf8');
          if (route === '') expect(Buffer.from((JSON.parse(text) as { data: string }).data, 'base64').equals(data), where).toBe(true);
          if (route === '/stat') expect((JSON.parse(text) as { exists: boolean }).exists, where).toBe(true);
          if (route === '/stream') {
            const parts = text.split('\n').filter(Boolean).map((l) => Buffer.from((JSON.parse(l) as { result: { data: string } }).result.data, 'base64'));
            expect(Buffer.concat(parts).equals(data), where).toBe(true);
          }
        },
        budgetMs(SHARE / 2),
        stats,
      );
    },
    testTimeout(budgetMs(SHARE / 2)),
  );

  it(
    'labels stored with a blob come back as given in GET and /stat',
    async (ctx) => {
      if (!served) return ctx.skip('variant A is not served yet');
      const stats = newStats();
      const labelsArb = fc.dictionary(
        fc.string({ unit: fc.constantFrom(...'abcXYZ019._/-'), minLength: 1, maxLength: 128 }),
        fc.string({ unit: 'grapheme', maxLength: 60 }).filter((v) => Buffer.byteLength(v) <= 1024),
        { maxKeys: 64 },
      );
      await fuzz(
        'labels-a',
        fc.tuple(labelsArb, fc.uint8Array({ minLength: 1, maxLength: 64 })),
        async ([labels, bytes]) => {
          const data = Buffer.concat([Buffer.from('labels '), Buffer.from(bytes), Buffer.from(String(Math.random()))]);
          const res = await fetch(`${node.url}/v1/blobs`, { method: 'PUT', body: JSON.stringify({ data: data.toString('base64'), labels }), headers: { 'Content-Type': 'application/json' } });
          const text = await res.text();
          count(stats, res.status);
          if (res.status !== 200) throw new Error(`store with labels ${JSON.stringify(labels).slice(0, 300)}: ${res.status} ${text.slice(0, 300)}`);
          const id = encodeURIComponent(Buffer.from(hexIdOf(JSON.parse(text) as { id?: unknown }), 'hex').toString('base64'));
          const got = JSON.parse((await get(`${node.url}/v1/blobs/${id}`, {})).body.toString('utf8')) as { meta: { labels: Record<string, string> } };
          expect(got.meta.labels).toEqual(labels);
          const stat = JSON.parse((await get(`${node.url}/v1/blobs/${id}/stat`, {})).body.toString('utf8')) as { meta: { labels: Record<string, string> } };
          expect(stat.meta.labels).toEqual(labels);
        },
        budgetMs(SHARE / 2),
        stats,
      );
      await checkNode(node);
    },
    testTimeout(budgetMs(SHARE / 2)),
  );
});
