/**
 * How ids are read (the interface spec, "BlobID"): variant B accepts only lower-case hex, so an
 * id or list prefix with an upper-case letter is a 400 invalid blob ID, never the blob; variant A
 * accepts hex in either case (and base64). gRPC carries ids as bytes; its list prefix is read as
 * hex in either case. Answers always write lower case.
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

describe('variant B: lower-case hex only', () => {
  let n: GrpcNode;
  let url: string;
  beforeAll(async () => {
    n = await startGrpcNode();
    url = n.node.url;
    expect((await putRaw(url, DATA)).status).toBe(201);
  });
  afterAll(async () => {
    expect(await n.stop()).toBe(0);
    rmSync(n.node.dataDir, { recursive: true, force: true });
  });

  const invalidId = async (res: Response): Promise<void> => {
    expect(res.status).toBe(400);
    expect(await res.json()).toStrictEqual({ code: 400, error: 'Bad Request', message: expect.stringMatching(/^invalid blob ID/) });
  };

  it('GET, /stat, /stream and DELETE of an upper- or mixed-case id answer 400 invalid blob ID', async () => {
    for (const spelled of spellings(id)) {
      await invalidId(await fetch(`${url}/v1/blobs/${spelled}`));
      await invalidId(await fetch(`${url}/v1/blobs/${spelled}/stat`));
      await invalidId(await fetch(`${url}/v1/blobs/${spelled}/stream`));
      await invalidId(await fetch(`${url}/v1/blobs/${spelled}`, { method: 'DELETE' }));
      const head = await fetch(`${url}/v1/blobs/${spelled}`, { method: 'HEAD' });
      expect(head.status).toBe(400);
    }
    // Nothing was deleted: the lower-case id still finds the blob.
    expect((await fetch(`${url}/v1/blobs/${id}`)).status).toBe(200);
  });

  it('GET /v1/blobs/stream has no id: 400 invalid blob ID', async () => {
    await invalidId(await fetch(`${url}/v1/blobs/stream`));
  });

  it('a put stream whose chunks carry the id in upper case is 400 and stores nothing new', async () => {
    const other = patternBytes(100, 42);
    const chunk = { data: other.toString('base64'), final: true, id: (await expectedId(other)).toUpperCase(), policy: 'REPLICATION_POLICY_NONE' };
    const res = await fetch(`${url}/v1/blobs/stream`, { method: 'POST', body: `${JSON.stringify(chunk)}\n` });
    expect(res.status).toBe(400);
    expect((await fetch(`${url}/v1/blobs/${await expectedId(other)}`, { method: 'HEAD' })).status).toBe(404);
  });

  it('a list prefix follows the same rule: lower case lists, upper case is 400', async () => {
    const prefix = id.slice(0, 3);
    const lower = (await (await fetch(`${url}/v1/blobs?prefix=${prefix}`)).json()) as { ids: unknown[] };
    expect(lower.ids).toStrictEqual([id]);
    const upper = await fetch(`${url}/v1/blobs?prefix=${prefix.toUpperCase()}`);
    expect(upper.status).toBe(400);
    expect(((await upper.json()) as { message: string }).message).toMatch(/^invalid prefix/);
  });

  it('gRPC List reads its prefix as hex in either case', async () => {
    const page = await unary<{ ids: { id: Buffer }[] }>(n.blobs, 'List', { prefix: id.slice(0, 3).toUpperCase() });
    expect(page.ids.map((x) => Buffer.from(x.id).toString('hex'))).toStrictEqual([id]);
  });
});

describe('variant A: hex in either case, or base64', () => {
  let n: GrpcNode;
  let url: string;
  const written = (hex: string): unknown => ({ id: Buffer.from(hex, 'hex').toString('base64') });

  beforeAll(async () => {
    n = await startGrpcNode({ args: ['--api-variant', 'a'] });
    url = n.node.url;
    expect((await putRaw(url, DATA)).status).toBe(200);
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
      expect(Buffer.from((JSON.parse(body.toString()) as { data: string }).data, 'base64').equals(DATA)).toBe(true);
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

  it('an upper-case list prefix lists the same ids as the lower-case one', async () => {
    const prefix = id.slice(0, 3);
    const lower = (await (await fetch(`${url}/v1/blobs?prefix=${prefix}`)).json()) as { ids: unknown[] };
    const upper = (await (await fetch(`${url}/v1/blobs?prefix=${prefix.toUpperCase()}`)).json()) as { ids: unknown[] };
    expect(lower.ids).toStrictEqual([written(id)]);
    expect(upper.ids).toStrictEqual(lower.ids);
  });

  it('DELETE of the upper-case id deletes the blob', async () => {
    expect((await fetch(`${url}/v1/blobs/${id.toUpperCase()}`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/v1/blobs/${id}`)).status).toBe(404);
  });
});
