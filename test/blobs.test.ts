/**
 * Blob operations of the HTTP API, variant B, against a real node process: every endpoint and
 * every error row of the spec's table that a single node can produce.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedId, patternBytes, putJson, putRaw } from './helpers/blobs.js';
import { type NodeProcess, startNode } from './helpers/node-process.js';

let node: NodeProcess;
let url: string;

beforeAll(async () => {
  node = await startNode({ args: ['--list-default-limit', '20', '--list-max-limit', '50', '--max-json-body-bytes', '2MiB'] });
  url = node.url;
});
afterAll(async () => {
  expect(await node.stop()).toBe(0);
});

async function errorOf(res: Response): Promise<{ code: number; error: string; message: string }> {
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = (await res.json()) as { code: number; error: string; message: string };
  expect(body.code).toBe(res.status);
  expect(typeof body.error).toBe('string');
  expect(typeof body.message).toBe('string');
  return body;
}

describe('POST /v1/blobs with a raw body', () => {
  it('answers 201 with the content address (first 16 bytes of BLAKE3-256) and the size', async () => {
    const data = Buffer.from('raw body: the first write');
    const res = await putRaw(url, data);
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: await expectedId(data), size: data.length });
  });

  it('store of existing bytes answers 200 with the same body and keeps the first policy', async () => {
    const data = Buffer.from('stored twice');
    const first = await putRaw(url, data, { 'X-Blobstore-Policy': '1' });
    expect(first.status).toBe(201);
    const body = await first.json();
    const again = await putRaw(url, data, { 'X-Blobstore-Policy': 'REPLICA2' });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(body);
    const head = await fetch(`${url}/v1/blobs/${(body as { id: string }).id}`, { method: 'HEAD' });
    expect(head.headers.get('x-blobstore-policy')).toBe('1');
  });

  it('PUT stores like POST', async () => {
    const data = Buffer.from('sent with PUT');
    const res = await fetch(`${url}/v1/blobs`, { method: 'PUT', body: data, headers: { 'Content-Type': 'application/octet-stream' } });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { id: string }).id).toBe(await expectedId(data));
  });

  it('accepts policies as numbers and as names; replica policies store one local copy', async () => {
    for (const [i, policy] of ['0', '1', '2', '3', 'NONE', 'REPLICATION_POLICY_REPLICA3', 'replica2'].entries()) {
      const data = Buffer.from(`policy ${policy} ${i}`);
      const res = await putRaw(url, data, { 'X-Blobstore-Policy': policy });
      expect(res.status, policy).toBe(201);
    }
  });

  it('EC policies need more nodes than one: 412 with have and need', async () => {
    const ec42 = await errorOf(await putRaw(url, Buffer.from('ec'), { 'X-Blobstore-Policy': '4' }));
    expect(ec42).toMatchObject({ code: 412, message: 'not enough nodes for EC: have 1, need 6' });
    const ec82 = await errorOf(await putRaw(url, Buffer.from('ec'), { 'X-Blobstore-Policy': 'REPLICATION_POLICY_EC82' }));
    expect(ec82.message).toBe('not enough nodes for EC: have 1, need 10');
  });

  it('rejects an unknown policy with 400', async () => {
    const err = await errorOf(await putRaw(url, Buffer.from('x'), { 'X-Blobstore-Policy': 'REPLICA7' }));
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/policy/);
  });

  it('validates labels: a JSON object, at most 64, keys of [A-Za-z0-9._/-] up to 128, values up to 1024 bytes', async () => {
    expect((await putRaw(url, Buffer.from('labelled'), { 'X-Blobstore-Labels': '{"team":"a","path/x.y_z-1":"v"}' })).status).toBe(201);
    const bad: Record<string, string> = {
      'not json': '{team',
      'an array': '["a"]',
      'a bad key': '{"bad key":"v"}',
      'a long key': JSON.stringify({ ['k'.repeat(129)]: 'v' }),
      'a long value': JSON.stringify({ k: 'v'.repeat(1025) }),
      'a number value': '{"k":1}',
      'too many': JSON.stringify(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']))),
    };
    for (const [why, header] of Object.entries(bad)) {
      const res = await putRaw(url, Buffer.from(`labels ${why}`), { 'X-Blobstore-Labels': header });
      expect(res.status, why).toBe(400);
      await errorOf(res);
    }
  });

  it('reads a labels header as UTF-8 ("Zürich" as its bytes, as curl sends it), and refuses one that is not', async () => {
    // fetch sends a header's characters as bytes: the UTF-8 bytes of the label, one character each.
    const utf8 = Buffer.from('{"city":"Zürich","emoji":"\u{1F600}"}').toString('latin1');
    const res = await putRaw(url, Buffer.from('labelled in UTF-8'), { 'X-Blobstore-Labels': utf8 });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    expect(((await (await fetch(`${url}/v1/blobs/${id}/stat`)).json()) as { meta: { labels: unknown } }).meta.labels).toStrictEqual({ city: 'Zürich', emoji: '\u{1F600}' });
    // A lone 0xFC (Latin-1 ü) is not UTF-8.
    const latin1 = await putRaw(url, Buffer.from('labelled in Latin-1'), { 'X-Blobstore-Labels': '{"city":"Z\u00fcrich"}' });
    expect(latin1.status).toBe(400);
    expect((await errorOf(latin1)).message).toBe('X-Blobstore-Labels must be UTF-8');
  });

  it('answers 415 for a content type that is neither raw bytes nor JSON', async () => {
    const res = await fetch(`${url}/v1/blobs`, { method: 'POST', body: 'x', headers: { 'Content-Type': 'text/plain' } });
    expect((await errorOf(res)).code).toBe(415);
  });
});

describe('POST /v1/blobs with a JSON body', () => {
  it('stores base64 data with policy and labels: 201 {id, size}', async () => {
    const data = patternBytes(3000, 7);
    const res = await putJson(url, { data: data.toString('base64'), policy: 'REPLICATION_POLICY_NONE', labels: { a: 'b' } });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: await expectedId(data), size: 3000 });
  });

  it('accepts URL-safe and unpadded base64 as protojson does', async () => {
    const data = Buffer.from([0xfb, 0xff, 0xfe, 0x01]);
    const res = await putJson(url, { data: data.toString('base64url') });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { id: string }).id).toBe(await expectedId(data));
  });

  it('rejects bad bodies with 400 in the error shape', async () => {
    const cases: [string, string][] = [
      ['invalid JSON', '{"data":'],
      ['not an object', '[1,2]'],
      ['missing data', '{"policy":1}'],
      ['data not a string', '{"data":123}'],
      ['invalid base64', '{"data":"@@@@"}'],
      ['bad policy', '{"data":"","policy":"TRIPLE"}'],
      ['bad labels', '{"data":"","labels":{"k":5}}'],
      ['deep nesting', '{"data":"","labels":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}'],
    ];
    for (const [why, body] of cases) {
      const res = await fetch(`${url}/v1/blobs`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
      expect(res.status, why).toBe(400);
      await errorOf(res);
    }
  });

  it('rejects a body that is not valid UTF-8', async () => {
    const body = Buffer.concat([Buffer.from('{"data":"","labels":{"k":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    const res = await fetch(`${url}/v1/blobs`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
    expect(res.status).toBe(400);
  });

  it('answers 413 for a JSON body over maxJsonBodyBytes', async () => {
    const res = await putJson(url, { data: Buffer.alloc(3 * 1024 * 1024).toString('base64') });
    expect((await errorOf(res)).code).toBe(413);
  });

  it('EC policy in the body answers 412', async () => {
    const res = await putJson(url, { data: 'AA==', policy: 'REPLICATION_POLICY_EC42' });
    expect((await errorOf(res)).message).toBe('not enough nodes for EC: have 1, need 6');
  });
});

describe('GET /v1/blobs/{id}', () => {
  it('round-trips 0 B, 1 B, 4 KiB and 1 MiB+7 byte-exact, raw and JSON', async () => {
    for (const [i, size] of [0, 1, 4096, 1024 * 1024 + 7].entries()) {
      for (const form of ['raw', 'json'] as const) {
        const data = patternBytes(size, 100 + i + (form === 'json' ? 50 : 0));
        const res = form === 'raw' ? await putRaw(url, data) : await putJson(url, { data: data.toString('base64') });
        expect([200, 201], `${form} ${size}`).toContain(res.status);
        const { id } = (await res.json()) as { id: string };
        expect(id).toBe(await expectedId(data));
        const got = await fetch(`${url}/v1/blobs/${id}`);
        expect(got.status).toBe(200);
        expect(got.headers.get('content-type')).toBe('application/octet-stream');
        expect(Buffer.from(await got.arrayBuffer()).equals(data), `${form} ${size}`).toBe(true);
      }
    }
  });

  it('a missing blob answers 404 in the error shape', async () => {
    const err = await errorOf(await fetch(`${url}/v1/blobs/${'0'.repeat(32)}`));
    expect(err.code).toBe(404);
    expect(err.error).toBe('Not Found');
  });

  it('an invalid id answers 400 with a message that names an invalid blob ID', async () => {
    for (const id of ['xyz', '0'.repeat(31), '0'.repeat(33), 'g'.repeat(32)]) {
      const err = await errorOf(await fetch(`${url}/v1/blobs/${id}`));
      expect(err.code, id).toBe(400);
      expect(err.message).toMatch(/invalid blob ID/);
    }
  });

  it('an empty id answers 400 too (get, delete, stat, the stream), not 404 for want of a route', async () => {
    for (const [method, path] of [['GET', '/v1/blobs/'], ['DELETE', '/v1/blobs/'], ['GET', '/v1/blobs//stat'], ['GET', '/v1/blobs//stream']] as const) {
      const err = await errorOf(await fetch(`${url}${path}`, { method }));
      expect(err.code, `${method} ${path}`).toBe(400);
      expect(err.message).toBe('invalid blob ID: missing or empty');
    }
    expect((await fetch(`${url}/v1/blobs/`, { method: 'HEAD' })).status).toBe(400);
  });
});

describe('HEAD /v1/blobs/{id}', () => {
  it('answers the size, creation time (Unix ns) and policy headers without a body', async () => {
    const before = BigInt(Date.now()) * 1_000_000n;
    const data = Buffer.from('head me');
    const { id } = (await (await putRaw(url, data, { 'X-Blobstore-Policy': '2' })).json()) as { id: string };
    const res = await fetch(`${url}/v1/blobs/${id}`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-blobstore-blob-size')).toBe(String(data.length));
    expect(res.headers.get('x-blobstore-policy')).toBe('2');
    const created = BigInt(res.headers.get('x-blobstore-created-at')!);
    expect(created >= before - 1_000_000_000n && created <= BigInt(Date.now()) * 1_000_000n).toBe(true);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it('a missing blob answers 404 with no body', async () => {
    const res = await fetch(`${url}/v1/blobs/${'1'.repeat(32)}`, { method: 'HEAD' });
    expect(res.status).toBe(404);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });
});

describe('DELETE /v1/blobs/{id}', () => {
  it('removes the blob and answers {deleted: true}, also when it did not exist', async () => {
    const { id } = (await (await putRaw(url, Buffer.from('delete me'))).json()) as { id: string };
    const del = await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ deleted: true });
    expect((await fetch(`${url}/v1/blobs/${id}`)).status).toBe(404);
    const again = await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
    expect(await again.json()).toEqual({ deleted: true });
  });

  it('an invalid id answers 400', async () => {
    expect((await fetch(`${url}/v1/blobs/nothex`, { method: 'DELETE' })).status).toBe(400);
  });

  it('bytes stored again after a delete come back', async () => {
    const data = Buffer.from('phoenix');
    const { id } = (await (await putRaw(url, data)).json()) as { id: string };
    await fetch(`${url}/v1/blobs/${id}`, { method: 'DELETE' });
    expect((await putRaw(url, data)).status).toBe(201);
    expect(Buffer.from(await (await fetch(`${url}/v1/blobs/${id}`)).arrayBuffer()).equals(data)).toBe(true);
  });
});

describe('GET /v1/blobs (list)', () => {
  interface Page {
    ids: string[];
    next_cursor?: string;
    has_more: boolean;
  }
  const list = async (query: string): Promise<Page> => {
    const res = await fetch(`${url}/v1/blobs${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Page;
  };

  it('pages through every id exactly once, in order, with opaque cursors', async () => {
    for (let i = 0; i < 30; i++) await putRaw(url, Buffer.from(`list item ${i}`));
    const all: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await list(`?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.ids.length).toBeLessThanOrEqual(7);
      all.push(...page.ids);
      if (!page.has_more) {
        expect(page.next_cursor).toBeUndefined();
        break;
      }
      cursor = page.next_cursor!;
    }
    expect(new Set(all).size).toBe(all.length);
    expect([...all].sort()).toEqual(all);
    expect(all.length).toBeGreaterThanOrEqual(30);
    for (const id of all) expect(id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('filters by prefix of the hex id', async () => {
    const page = await list('?limit=50');
    const prefix = page.ids[0]!.slice(0, 1);
    const filtered = await list(`?prefix=${prefix}&limit=50`);
    expect(filtered.ids.length).toBeGreaterThan(0);
    for (const id of filtered.ids) expect(id.startsWith(prefix)).toBe(true);
    // Prefixes are read as ids are (variant B: lower-case hex only).
    for (const bad of ['zz', 'A']) expect((await fetch(`${url}/v1/blobs?prefix=${bad}`)).status).toBe(400);
    // A cursor from before the prefix's ids (a page of the whole list) starts the prefix's list at its first id.
    const first = await list('?limit=1');
    const later = page.ids.find((id) => id[0]! > first.ids[0]![0]!)![0]!;
    const withCursor = await list(`?prefix=${later}&limit=50&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(withCursor.ids.length).toBeGreaterThan(0);
    expect(withCursor.ids).toStrictEqual((await list(`?prefix=${later}&limit=50`)).ids);
  });

  it('uses the default page size when limit is omitted or <= 0, and clamps large limits', async () => {
    // This node runs with listDefaultLimit 20 and listMaxLimit 50 (defaults: 100 and 10000).
    const clamped = await list('?limit=100000');
    expect(clamped.ids.length).toBe(50);
    expect(clamped.has_more).toBe(true);
    expect((await list('')).ids.length).toBe(20);
    expect((await list('?limit=0')).ids.length).toBe(20);
    expect((await list('?limit=-3')).ids.length).toBe(20);
  });

  it('rejects a tampered, foreign or garbage cursor with 400 "invalid cursor"', async () => {
    const page = await list('?limit=2');
    const raw = Buffer.from(page.next_cursor!, 'base64url');
    raw[0]! ^= 1;
    const foreign = Buffer.concat([raw.subarray(0, 16), createHmac('sha256', 'other').update(raw.subarray(0, 16)).digest().subarray(0, 16)]);
    for (const cursor of [raw.toString('base64url'), foreign.toString('base64url'), 'garbage', 'AAAA']) {
      const err = await errorOf(await fetch(`${url}/v1/blobs?cursor=${encodeURIComponent(cursor)}`));
      expect(err).toMatchObject({ code: 400, message: 'invalid cursor' });
    }
  });

  it('rejects a non-integer limit with 400', async () => {
    expect((await fetch(`${url}/v1/blobs?limit=ten`)).status).toBe(400);
  });
});

describe('routing', () => {
  it('a known /v1 path with a method it lacks answers 501 as grpc-gateway does', async () => {
    for (const [method, path] of [['PATCH', `/v1/blobs/${'0'.repeat(32)}`], ['DELETE', '/v1/blobs'], ['PATCH', '/v1/blobs']]) {
      const err = await errorOf(await fetch(`${url}${path}`, { method }));
      expect(err, `${method} ${path}`).toMatchObject({ code: 501, message: 'Method Not Allowed' });
    }
  });

  it('an unknown path answers 404 in the error shape', async () => {
    expect((await errorOf(await fetch(`${url}/v2/things`))).code).toBe(404);
  });

  it('/healthz answers 200 when ready', async () => {
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
  });
});
