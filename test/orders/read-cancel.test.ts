import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OrdersProcess, call, removeDir, startOrders } from './helpers.js';

/** GET /orders, GET /orders/{order_id}, DELETE /orders/{order_id} against the real service. */

let svc: OrdersProcess;
const ids: number[] = [];
beforeAll(async () => {
  svc = await startOrders();
  for (const [amount, currency] of [[100, 'USD'], [200, 'EUR'], [300, 'JPY'], [400, 'USD']] as const) {
    const r = await call(svc.url, 'POST', '/orders', { body: JSON.stringify({ amount, currency, note: 'x' }) });
    ids.push(r.json.id);
  }
});
afterAll(async () => {
  await svc.stop();
  removeDir(svc.dataDir);
});

const get = (path: string) => call(svc.url, 'GET', path);
const del = (path: string) => call(svc.url, 'DELETE', path);

describe('GET /orders', () => {
  it('applies status=paid and limit=20 by default and echoes them', async () => {
    const r = await get('/orders');
    expect(r.status).toBe(200);
    expect(r.json).toStrictEqual({ status: 'paid', limit: 20, orders: [] });
  });

  it('lists orders of one status in id order, at most limit', async () => {
    const r = await get('/orders?status=pending&limit=3');
    expect(r.json.status).toBe('pending');
    expect(r.json.limit).toBe(3);
    expect(r.json.orders).toStrictEqual([
      { id: ids[0], amount: 100, currency: 'USD', status: 'pending' },
      { id: ids[1], amount: 200, currency: 'EUR', status: 'pending' },
      { id: ids[2], amount: 300, currency: 'JPY', status: 'pending' },
    ]);
  });

  it('accepts any status string (an unknown one lists nothing)', async () => {
    const r = await get('/orders?status=shipped%20soon');
    expect(r.json).toStrictEqual({ status: 'shipped soon', limit: 20, orders: [] });
  });

  it('accepts a very long status string (nothing matches it)', async () => {
    const status = 's'.repeat(5000);
    const r = await get(`/orders?status=${status}`);
    expect(r.status).toBe(200);
    expect(r.json).toStrictEqual({ status, limit: 20, orders: [] });
  });

  it('takes the last of repeated parameters, as Starlette does', async () => {
    const r = await get('/orders?limit=1&limit=2&status=paid&status=pending');
    expect(r.json.limit).toBe(2);
    expect(r.json.status).toBe('pending');
  });

  it('coerces limit like pydantic ("2.0" is 2)', async () => {
    expect((await get('/orders?status=pending&limit=2.0')).json.limit).toBe(2);
  });

  it.each(['99999999', String(2n ** 63n), '1' + '0'.repeat(40)])('echoes any positive limit as given (%s) and lists the orders that exist', async (limit) => {
    const r = await get(`/orders?status=pending&limit=${limit}`);
    expect(r.status).toBe(200);
    // Compared as text: JSON.parse would round a limit beyond 2^53.
    expect(r.text).toMatch(new RegExp(`^\\{"status":"pending","limit":${limit},"orders":\\[`));
    expect(r.json.orders.map((o: { id: number }) => o.id)).toStrictEqual(ids);
  });

  it.each([
    ['abc', { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }],
    ['', { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }],
    ['1.5', { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' }],
    ['0', { type: 'greater_than_equal', msg: 'Input should be greater than or equal to 1', ctx: { ge: 1 } }],
    ['-3', { type: 'greater_than_equal', msg: 'Input should be greater than or equal to 1', ctx: { ge: 1 } }],
  ])('rejects limit=%j with 422 at ["query","limit"]', async (limit, item) => {
    const r = await get(`/orders?limit=${limit}`);
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([{ type: item.type, loc: ['query', 'limit'], msg: item.msg, input: limit, ...('ctx' in item ? { ctx: item.ctx } : {}) }]);
  });
});

describe('GET /orders/{order_id}', () => {
  it('answers the order without its note', async () => {
    const r = await get(`/orders/${ids[1]}`);
    expect(r.status).toBe(200);
    expect(r.json).toStrictEqual({ id: ids[1], amount: 200, currency: 'EUR', status: 'pending' });
  });

  it('accepts lax integer forms of the id ("2.0", "+2", percent-encoded)', async () => {
    expect((await get(`/orders/${ids[1]}.0`)).json.id).toBe(ids[1]);
    expect((await get(`/orders/%2B${ids[1]}`)).json.id).toBe(ids[1]);
  });

  it('answers 404 {"detail":"Not Found"} for an unknown id (also 0 and negative ones)', async () => {
    for (const id of ['999999', '0', '-1']) {
      const r = await get(`/orders/${id}`);
      expect(r.status).toBe(404);
      expect(r.json).toStrictEqual({ detail: 'Not Found' });
    }
  });

  it('answers 422 at ["path","order_id"] for a non-integer id', async () => {
    const r = await get('/orders/abc');
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([
      { type: 'int_parsing', loc: ['path', 'order_id'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'abc' },
    ]);
  });

  it('answers 422 for an id beyond 2^63-1', async () => {
    const r = await get('/orders/99999999999999999999');
    expect(r.status).toBe(422);
    expect(r.json.detail[0]).toMatchObject({ type: 'less_than_equal', loc: ['path', 'order_id'], input: '99999999999999999999' });
  });
});

describe('DELETE /orders/{order_id}', () => {
  it('cancels a pending order and answers {id, status: "canceled"}', async () => {
    const r = await del(`/orders/${ids[3]}`);
    expect(r.status).toBe(200);
    expect(r.json).toStrictEqual({ id: ids[3], status: 'canceled' });
    expect((await get(`/orders/${ids[3]}`)).json.status).toBe('canceled');
  });

  it('is idempotent: canceling again answers the same', async () => {
    const r = await del(`/orders/${ids[3]}`);
    expect(r.status).toBe(200);
    expect(r.json).toStrictEqual({ id: ids[3], status: 'canceled' });
  });

  it('moves the order from the pending list to the canceled list', async () => {
    const pending = (await get('/orders?status=pending')).json.orders.map((o: { id: number }) => o.id);
    const canceled = (await get('/orders?status=canceled')).json.orders.map((o: { id: number }) => o.id);
    expect(pending).not.toContain(ids[3]);
    expect(canceled).toStrictEqual([ids[3]]);
  });

  it('answers 404 for an unknown order and 422 for a non-integer id', async () => {
    expect((await del('/orders/424242')).status).toBe(404);
    const r = await del('/orders/x1');
    expect(r.status).toBe(422);
    expect(r.json.detail[0].loc).toStrictEqual(['path', 'order_id']);
  });
});
