/**
 * Hex is case-insensitive: an id written in upper case (or mixed case) names the same blob as its
 * lower-case form, wherever an id or an id prefix is read (paths of both variants, NDJSON chunk
 * ids, the list prefix over HTTP and gRPC); answers always write lower case.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, putRaw } from './helpers/blobs.js';
import { type GrpcNode, startGrpcNode, unary } from './grpc/helpers.js';

const DATA = patternBytes(3000, 41);
let id: string;

beforeAll(async () => {
  id = await expectedId(DATA);
  // The id must have letters for its case to matter.
  expect(id).toMatch(/[a-f]/);
});

/** Upper case, and a mixed spelling (every other character upper case). */
const spellings = (hex: string): string[] => [hex.toUpperCase(), [...hex].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')];

describe.each([
  { variant: 'b', args: [] as string[] },
  { variant: 'a', args: ['--api-variant', 'a'] },
])('variant $variant', ({ variant, args }) => {
  let n: GrpcNode;
  let url: string;
  /** The id as the variant writes it in answers. */
  const written = (hex: string): unknown => (variant === 'b' ? hex : { id: Buffer.from(hex, 'hex').toString('base64') });

  beforeAll(async () => {
    n = await startGrpcNode({ args });
    url = n.node.url;
    expect((await putRaw(url, DATA)).status).toBe(variant === 'b' ? 201 : 200);
  });
  afterAll(async () => {
    expect(await n.stop()).toBe(0);
    rmSync(n.node.dataDir, { recursive: true, force: true });
  });

  it('GET, HEAD, /stat and /stream of an upper- or mixed-case id find the blob', async () => {
    for (const spelled of spellings(id)) {
      const get = await fetch(`${url}/v1/blobs/${spelled}`);
      expect(get.status, spelled).toBe(200);
      const body = Buffer.from(await get.arrayBuffer());
      if (variant === 'b') expect(body.equals(DATA)).toBe(true);
      else expect(Buffer.from((JSON.parse(body.toString()) as { data: string }).data, 'base64').equals(DATA)).toBe(true);
      expect((await fetch(`${url}/v1/blobs/${spelled}`, { method: 'HEAD' })).status, spelled).toBe(200);
      expect(await (await fetch(`${url}/v1/blobs/${spelled}/stat`)).json()).toMatchObject({ exists: true });
      const stream = await (await fetch(`${url}/v1/blobs/${spelled}/stream`)).text();
      const lines = stream.trim().split('\n').map((l) => JSON.parse(l) as { result: { data: string } });
      expect(Buffer.concat(lines.map((l) => Buffer.from(l.result.data, 'base64'))).equals(DATA)).toBe(true);
    }
  });

  it('a 404 for an upper-case id names the id in lower case', async () => {
    const missing = 'ABCDEF0123456789ABCDEF0123456789';
    const res = await fetch(`${url}/v1/blobs/${missing}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { message: string }).message).toContain(missing.toLowerCase());
  });

  it('a put stream whose chunks carry the id in upper case stores the blob; the answer writes it in lower case', async () => {
    const chunk = { data: DATA.toString('base64'), final: true, id: id.toUpperCase(), policy: 'REPLICATION_POLICY_NONE' };
    const res = await fetch(`${url}/v1/blobs/stream`, { method: 'POST', body: `${JSON.stringify(chunk)}\n` });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: unknown }).id).toStrictEqual(written(id));
  });

  it('an upper-case list prefix lists the same ids as the lower-case one, in lower case', async () => {
    const prefix = id.slice(0, 3);
    const lower = (await (await fetch(`${url}/v1/blobs?prefix=${prefix}`)).json()) as { ids: unknown[] };
    const upper = (await (await fetch(`${url}/v1/blobs?prefix=${prefix.toUpperCase()}`)).json()) as { ids: unknown[] };
    expect(lower.ids).toStrictEqual([written(id)]);
    expect(upper.ids).toStrictEqual(lower.ids);
  });

  it('gRPC List takes an upper-case prefix too', async () => {
    const page = await unary<{ ids: { id: Buffer }[] }>(n.blobs, 'List', { prefix: id.slice(0, 3).toUpperCase() });
    expect(page.ids.map((x) => Buffer.from(x.id).toString('hex'))).toStrictEqual([id]);
  });

  it('DELETE of the upper-case id deletes the blob', async () => {
    expect((await fetch(`${url}/v1/blobs/${id.toUpperCase()}`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/v1/blobs/${id}`)).status).toBe(404);
  });
});
