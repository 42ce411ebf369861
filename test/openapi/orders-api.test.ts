/**
 * The orders service's OpenAPI document at /openapi.json and its page at /docs (FastAPI's
 * defaults): valid OpenAPI 3.1 for a real validator, in step with the router's table, open when
 * API keys are required.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_TABLE } from '../../src/apps/orders/routes.js';
import { type OrdersProcess, removeDir, startOrders, tempDir } from '../orders/helpers.js';

type Doc = { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components: { schemas: Record<string, unknown> }; security?: unknown };

let open: OrdersProcess;
let keyed: OrdersProcess;
const dir = tempDir('orders-openapi');

beforeAll(async () => {
  const keys = join(dir, 'keys.json');
  writeFileSync(keys, JSON.stringify([{ key: 'k-read', scope: 'read' }]));
  [open, keyed] = await Promise.all([startOrders(), startOrders({ args: ['--orders-api-keys-file', keys] })]);
});
afterAll(async () => {
  await Promise.all([open?.stop(), keyed?.stop()]);
  removeDir(dir);
});

const fetchDoc = async (base: string): Promise<Doc> => {
  const res = await fetch(`${base}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json');
  return (await res.json()) as Doc;
};

describe('GET /openapi.json', () => {
  it('is OpenAPI 3.1 that the validator accepts, with FastAPI\'s schema names', async () => {
    const doc = await fetchDoc(open.url);
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toStrictEqual([]);
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['CreateOrderBody', 'Order', 'HTTPValidationError', 'ValidationError']));
  });

  it('documents exactly the routes of the router (the document and /docs themselves aside)', async () => {
    const doc = await fetchDoc(open.url);
    const documented = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)).sort();
    const routed = ROUTE_TABLE.filter((r) => r.path !== '/openapi.json' && r.path !== '/docs').flatMap((r) => r.methods.map((m) => `${m} ${r.path}`)).sort();
    expect(documented).toStrictEqual(routed);
  });

  it('the answers of the service are among the documented ones', async () => {
    const doc = await fetchDoc(open.url);
    const created = await fetch(`${open.url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount": 5, "currency": "EUR"}' });
    const order = (await created.json()) as { id: number };
    const cases: [string, string, string, Response][] = [
      ['/orders', 'post', 'created', created],
      ['/orders', 'get', 'listed', await fetch(`${open.url}/orders`)],
      ['/orders', 'get', 'bad limit', await fetch(`${open.url}/orders?limit=x`)],
      ['/orders/{order_id}', 'get', 'found', await fetch(`${open.url}/orders/${order.id}`)],
      ['/orders/{order_id}', 'get', 'missing', await fetch(`${open.url}/orders/999999`)],
      ['/orders/{order_id}', 'delete', 'canceled', await fetch(`${open.url}/orders/${order.id}`, { method: 'DELETE' })],
      ['/orders/{order_id}', 'delete', 'not an integer', await fetch(`${open.url}/orders/abc`, { method: 'DELETE' })],
    ];
    for (const [path, method, what, res] of cases) {
      expect(Object.keys(doc.paths[path]![method]!.responses), `${method} ${path} (${what}): ${res.status}`).toContain(String(res.status));
    }
  });

  it('states the bounds of amount the service holds to, the int64 maximum exactly, and 413 for a body too large', async () => {
    const text = await (await fetch(`${open.url}/openapi.json`)).text();
    const amount = /"amount":(\{[^}]*\})/.exec(text)![1]!;
    expect(amount).toContain('"exclusiveMinimum":0');
    expect(amount).toContain('"maximum":9223372036854775807');
    const post = (body: string): Promise<Response> => fetch(`${open.url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect((await post('{"amount": 0, "currency": "EUR"}')).status).toBe(422);
    expect((await post('{"amount": 9223372036854775807, "currency": "EUR"}')).status).toBe(200);
    expect((await post('{"amount": 9223372036854775808, "currency": "EUR"}')).status).toBe(422);
    const tooLarge = await post(`{"amount": 1, "currency": "EUR", "note": "${'x'.repeat(2 * 1024 * 1024)}"}`);
    expect(tooLarge.status).toBe(413);
    const doc = await fetchDoc(open.url);
    expect(Object.keys(doc.paths['/orders']!.post!.responses)).toContain('413');
  });

  it('with API keys: the document names bearer auth and 401/403, and is served without a key', async () => {
    const doc = await fetchDoc(keyed.url);
    expect(doc.security).toStrictEqual([{ bearer: [] }]);
    expect(Object.keys(doc.paths['/orders']!.post!.responses)).toEqual(expect.arrayContaining(['401', '403']));
    expect((await fetch(`${keyed.url}/orders`)).status).toBe(401);
  });
});

describe('GET /docs', () => {
  it('is a self-contained HTML page listing every operation, served without a key', async () => {
    const res = await fetch(`${keyed.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain("default-src 'none'");
    expect(html).not.toMatch(/<script|https?:\/\/(?!127)/);
    for (const op of ['GET</span> <code>/orders</code>', 'POST</span> <code>/orders</code>', 'GET</span> <code>/orders/{order_id}</code>', 'DELETE</span> <code>/orders/{order_id}</code>']) {
      expect(html).toContain(op);
    }
  });
});
