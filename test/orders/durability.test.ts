import { describe, expect, it } from 'vitest';
import { call, removeDir, startOrders, tempDir } from './helpers.js';

/** Acknowledged orders survive a crash; ids keep ascending and are never reused after a restart. */

describe('durable storage', () => {
  it('keeps every acknowledged order across SIGKILL and continues the id sequence', async () => {
    const dataDir = tempDir('orders-durable');
    try {
      const first = await startOrders({ dataDir });
      const made = await Promise.all(
        Array.from({ length: 20 }, (_, i) => call(first.url, 'POST', '/orders', { body: JSON.stringify({ amount: i + 1, currency: 'USD' }) })),
      );
      const ids = made.map((r) => r.json.id as number).sort((a, b) => a - b);
      expect(ids).toStrictEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      await call(first.url, 'DELETE', '/orders/3');
      expect(await first.stop('SIGKILL')).toBe(null);

      const second = await startOrders({ dataDir });
      try {
        for (const id of ids) expect((await call(second.url, 'GET', `/orders/${id}`)).status).toBe(200);
        expect((await call(second.url, 'GET', '/orders/3')).json.status).toBe('canceled');
        const next = await call(second.url, 'POST', '/orders', { body: '{"amount": 1, "currency": "EUR"}' });
        expect(next.json.id).toBe(21);
      } finally {
        expect(await second.stop()).toBe(0);
      }
    } finally {
      removeDir(dataDir);
    }
  });
});

describe('one service per data dir', () => {
  it('refuses (exit 1) a second service on a data dir in use, which would hand out the same ids', async () => {
    const dataDir = tempDir('orders-locked');
    const first = await startOrders({ dataDir });
    try {
      const second = await startOrders({ dataDir }).then(
        async (svc) => {
          await svc.stop();
          return 'started';
        },
        (err: Error) => err.message,
      );
      expect(second).toMatch(/exited \(1\).*in use by another process/s);
    } finally {
      await first.stop();
      removeDir(dataDir);
    }
  });
});
