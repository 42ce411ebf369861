/**
 * Variant A (ApiVariant a): the grpc-gateway JSON of the same operations. Ids are {id: base64},
 * policies enum names, int64 JSON strings (protojson), 200 on store, errors {code: gRPC code,
 * message}; path ids in hex or base64 (standard or URL-safe). Input stays liberal.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, putJson, putRaw } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';

let node: NodeProcess;
let url: string;

beforeAll(async () => {
  node = await startNode({ args: ['--api-variant', 'a', '--list-default-limit', '20', '--list-max-limit', '50', '--max-json-body-bytes', '4MiB'] });
  url = node.url;
});
afterAll(async () => {
  expect(await node.stop()).toBe(0);
});

interface PutResponseA {
  id: { id: string };
  size: string;
}

async function grpcError(res: Response): Promise<{ code: number; message: string }> {
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = (await res.json()) as { code: number; message: string };
  expect(Object.keys(body).sort()).toEqual(['code', 'message']);
  expect(typeof body.message).toBe('string');
  return body;
}

const b64 = (hex: string): string => Buffer.from(hex, 'hex').toString('base64');

describe('PUT /v1/blobs (variant A)', () => {
  it('answers 200 with {id: {id: base64}, size: "<int64 as string>"}', async () => {
    const data = Buffer.from('variant a stores JSON');
    const res = await putJson(url, { data: data.toString('base64'), policy: 'REPLICATION_POLICY_NONE', labels: { team: 'x' } }, 'PUT');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: { id: b64(await expectedId(data)) }, size: String(data.length) });
  });

  it('accepts POST, numeric policies and raw bodies too (input is liberal), and answers 200 again for existing bytes', async () => {
    const data = Buffer.from('liberal input');
    const first = await putJson(url, { data: data.toString('base64'), policy: 1 }, 'POST');
    expect(first.status).toBe(200);
    const raw = await putRaw(url, data, { 'X-Blobstore-Policy': 'REPLICA2' });
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual(await first.json());
  });

  it('errors carry the gRPC code: INVALID_ARGUMENT 3, FAILED_PRECONDITION 9, RESOURCE_EXHAUSTED 8', async () => {
    const bad = await putJson(url, { data: 'not base64!' }, 'PUT');
    expect(bad.status).toBe(400);
    expect((await grpcError(bad)).code).toBe(3);
    const ec = await putJson(url, { data: 'AAAA', policy: 'REPLICATION_POLICY_EC42' }, 'PUT');
    expect(ec.status).toBe(412);
    expect(await grpcError(ec)).toEqual({ code: 9, message: 'not enough nodes for EC: have 1, need 6' });
    const big = await putJson(url, { data: patternBytes(4 * 1024 * 1024, 3).toString('base64') }, 'PUT');
    expect(big.status).toBe(413);
    expect((await grpcError(big)).code).toBe(8);
  });
});

describe('GET /v1/blobs/{id} (variant A)', () => {
  it('answers {data, meta} with BlobMeta fields (int64 as strings, checksum base64, labels, policy name)', async () => {
    const data = patternBytes(70_000, 9);
    const before = BigInt(Date.now()) * 1_000_000n;
    const put = (await (await putJson(url, { data: data.toString('base64'), policy: 'REPLICATION_POLICY_REPLICA2', labels: { a: 'b' } }, 'PUT')).json()) as PutResponseA;
    const res = await fetch(`${url}/v1/blobs/${encodeURIComponent(put.id.id)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
    const body = (await res.json()) as { data: string; meta: Record<string, unknown> };
    expect(Buffer.from(body.data, 'base64').equals(data)).toBe(true);
    const meta = body.meta;
    expect(meta.size).toBe(String(data.length));
    expect(BigInt(meta.created_at as string)).toBeGreaterThanOrEqual(before - 1_000_000_000n);
    expect(meta.modified_at).toBe(meta.created_at);
    expect(Buffer.from(meta.checksum as string, 'base64').subarray(0, 16).toString('base64')).toBe(put.id.id);
    expect(meta.labels).toEqual({ a: 'b' });
    expect(meta.policy).toBe('REPLICATION_POLICY_REPLICA2');
  });

  it('a chunked JSON body of several 1 MiB chunks stores its bytes exactly', async () => {
    // 2 MiB + 3 bytes of data: a body of about 2.7 MiB without a Content-Length, gathered into two
    // whole pooled chunks and part of a third.
    const data = patternBytes(2 * 1024 * 1024 + 3, 11);
    const json = Buffer.from(JSON.stringify({ data: data.toString('base64') }));
    const parts = [json.subarray(0, 700_000), json.subarray(700_000, 1_900_000), json.subarray(1_900_000)];
    const put = await fetch(`${url}/v1/blobs`, {
      method: 'PUT', body: Readable.toWeb(Readable.from(parts)) as ReadableStream, duplex: 'half', headers: { 'Content-Type': 'application/json' },
    } as RequestInit);
    expect(put.status).toBe(200);
    const { id } = (await put.json()) as PutResponseA;
    const res = await fetch(`${url}/v1/blobs/${encodeURIComponent(id.id)}`);
    const body = (await res.json()) as { data: string };
    expect(Buffer.from(body.data, 'base64').equals(data)).toBe(true);
  });

  it('accepts the id as hex, standard base64 and URL-safe base64 (padded or not)', async () => {
    // Find bytes whose id has + or / in base64, so the two alphabets differ.
    let data = Buffer.alloc(0);
    let hex = '';
    for (let i = 0; ; i++) {
      data = Buffer.from(`alphabet ${i}`);
      hex = await expectedId(data);
      if (/[+/]/.test(b64(hex))) break;
    }
    await putJson(url, { data: data.toString('base64') }, 'PUT');
    const std = b64(hex);
    const urlSafe = std.replace(/\+/g, '-').replace(/\//g, '_');
    for (const form of [hex, encodeURIComponent(std), urlSafe, urlSafe.replace(/=+$/, '')]) {
      const res = await fetch(`${url}/v1/blobs/${form}`);
      expect(res.status, form).toBe(200);
      expect(Buffer.from(((await res.json()) as { data: string }).data, 'base64').equals(data)).toBe(true);
    }
  });

  it('a missing blob is NOT_FOUND (5), a malformed id INVALID_ARGUMENT (3) naming an invalid blob ID', async () => {
    const missing = await fetch(`${url}/v1/blobs/${'ab'.repeat(16)}`);
    expect(missing.status).toBe(404);
    expect((await grpcError(missing)).code).toBe(5);
    for (const id of ['abc', 'x'.repeat(40), Buffer.alloc(15).toString('base64url')]) {
      const res = await fetch(`${url}/v1/blobs/${id}`);
      expect(res.status, id).toBe(400);
      const err = await grpcError(res);
      expect(err.code).toBe(3);
      expect(err.message).toMatch(/invalid blob ID/);
    }
  });
});

describe('GET /v1/blobs/{id}/stat (variant A)', () => {
  it('answers {exists: true, meta} for a stored blob and 200 {exists: false} for a missing one', async () => {
    const data = Buffer.from('stat me');
    const put = (await (await putJson(url, { data: data.toString('base64') }, 'PUT')).json()) as PutResponseA;
    const res = await fetch(`${url}/v1/blobs/${encodeURIComponent(put.id.id)}/stat`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { exists: boolean; meta: { size: string; policy: string } };
    expect(body.exists).toBe(true);
    expect(body.meta.size).toBe('7');
    expect(body.meta.policy).toBe('REPLICATION_POLICY_REPLICA3');
    const missing = await fetch(`${url}/v1/blobs/${'cd'.repeat(16)}/stat`);
    expect(missing.status).toBe(200);
    expect(await missing.json()).toEqual({ exists: false });
  });
});

describe('GET /v1/blobs and DELETE (variant A)', () => {
  it('lists ids as {id: base64} objects with a base64 next_cursor that pages through everything', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const put = (await (await putJson(url, { data: Buffer.from(`page ${i}`).toString('base64') }, 'PUT')).json()) as PutResponseA;
      ids.add(put.id.id);
    }
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const q = new URLSearchParams({ limit: '5', ...(cursor ? { cursor } : {}) });
      const page = (await (await fetch(`${url}/v1/blobs?${q}`)).json()) as { ids: { id: string }[]; next_cursor?: string; has_more: boolean };
      for (const id of page.ids) seen.add(id.id);
      if (!page.has_more) {
        expect(page.next_cursor).toBeUndefined();
        break;
      }
      expect(page.next_cursor).toMatch(/^[A-Za-z0-9+/]+=*$/);
      cursor = page.next_cursor;
    }
    for (const id of ids) expect(seen.has(id)).toBe(true);
    const bad = await fetch(`${url}/v1/blobs?cursor=${encodeURIComponent(Buffer.alloc(32).toString('base64'))}`);
    expect(bad.status).toBe(400);
    expect(await grpcError(bad)).toEqual({ code: 3, message: 'invalid cursor' });
  });

  it('delete answers {deleted: true}, and the blob is gone', async () => {
    const put = (await (await putJson(url, { data: Buffer.from('delete me (a)').toString('base64') }, 'PUT')).json()) as PutResponseA;
    const id = encodeURIComponent(put.id.id);
    const del = await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ deleted: true });
    expect((await (await fetch(`${url}/v1/blobs/${id}/stat`)).json())).toEqual({ exists: false });
  });

  it('an unknown path is NOT_FOUND and a missing method UNIMPLEMENTED (12)', async () => {
    expect((await grpcError(await fetch(`${url}/v2/x`))).code).toBe(5);
    const patch = await fetch(`${url}/v1/blobs`, { method: 'PATCH' });
    expect(patch.status).toBe(501);
    expect((await grpcError(patch)).code).toBe(12);
  });
});
