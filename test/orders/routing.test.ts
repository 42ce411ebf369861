import { beforeAll, describe, expect, it } from 'vitest';
import { type OrdersProcess, call, useOrdersService } from './helpers.js';

/** Routes the service does not have, methods it does not allow, HEAD and trailing slashes. */

const service = useOrdersService();
let svc: OrdersProcess;
beforeAll(() => {
  svc = service();
});

describe('unknown routes', () => {
  it.each(['/', '/order', '/orders/1/items', '/v1/orders', '/ORDERS'])('GET %s answers 404 {"detail":"Not Found"}', async (path) => {
    const r = await call(svc.url, 'GET', path);
    expect(r.status).toBe(404);
    expect(r.json).toStrictEqual({ detail: 'Not Found' });
  });
});

describe('methods not allowed', () => {
  it.each([
    ['PUT', '/orders', 'GET, HEAD, POST'],
    ['DELETE', '/orders', 'GET, HEAD, POST'],
    ['PATCH', '/orders/1', 'DELETE, GET, HEAD'],
    ['POST', '/orders/1', 'DELETE, GET, HEAD'],
    ['OPTIONS', '/orders', 'GET, HEAD, POST'],
  ])('%s %s answers 405 {"detail":"Method Not Allowed"} with Allow: %s', async (method, path, allow) => {
    const r = await call(svc.url, method, path);
    expect(r.status).toBe(405);
    expect(r.json).toStrictEqual({ detail: 'Method Not Allowed' });
    expect(r.headers.get('allow')).toBe(allow);
  });
});

describe('HEAD and trailing slashes', () => {
  it('HEAD on a GET route answers the GET headers without a body', async () => {
    const r = await call(svc.url, 'HEAD', '/orders');
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect(Number(r.headers.get('content-length'))).toBe('{"status":"paid","limit":20,"orders":[]}'.length);
  });

  it('redirects /orders/ to /orders with 307, keeping the query (redirect_slashes)', async () => {
    const r = await call(svc.url, 'GET', '/orders/?limit=5');
    expect(r.status).toBe(307);
    expect(r.headers.get('location')).toBe(`${svc.url}/orders?limit=5`);
  });

  it('redirects /orders/7// to /orders/7 (all trailing slashes, as rstrip does)', async () => {
    const r = await call(svc.url, 'DELETE', '/orders/7//');
    expect(r.status).toBe(307);
    expect(r.headers.get('location')).toBe(`${svc.url}/orders/7`);
  });

  it('serves GET /healthz for readiness probes', async () => {
    const r = await call(svc.url, 'GET', '/healthz');
    expect(r.status).toBe(200);
    expect(r.json).toStrictEqual({ status: 'ok' });
  });
});
