import { beforeAll, describe, expect, it } from 'vitest';
import { type OrdersProcess, call, useOrdersService } from './helpers.js';

/** Seeded random mutations of valid requests: every answer is a 2xx/4xx with a JSON `detail`, never 500. */

const service = useOrdersService();
let svc: OrdersProcess;
beforeAll(() => {
  svc = service();
});

/** mulberry32: a small seeded PRNG, so a failure replays. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ['{', '}', '[', ']', '"', ':', ',', '\\', '\\u', 'd83d', '1e999', '-', '0', '.5', 'null', 'NaN', 'true',
  '"amount"', '"currency"', '"note"', '"USD"', '9'.repeat(30), '\u{1F600}', '\x00', '\xff', ' ', '\n'];

function mutate(rand: () => number, base: string): Uint8Array {
  let text = base;
  const edits = 1 + Math.floor(rand() * 4);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(rand() * (text.length + 1));
    const cut = Math.floor(rand() * 3);
    const piece = PIECES[Math.floor(rand() * PIECES.length)]!;
    text = text.slice(0, at) + piece + text.slice(at + cut);
  }
  const bytes = Buffer.from(text, 'utf8');
  if (rand() < 0.1) bytes[Math.floor(rand() * bytes.length)] = Math.floor(rand() * 256);
  return bytes;
}

describe('hostile input never causes a 500', () => {
  it('400 mutated create bodies', async () => {
    const rand = prng(20261123);
    const base = '{"amount": 1250, "currency": "EUR", "note": "gift"}';
    for (let i = 0; i < 400; i++) {
      const body = mutate(rand, base);
      const r = await call(svc.url, 'POST', '/orders', { body });
      expect(r.status, Buffer.from(body).toString('latin1')).toBeLessThan(500);
      expect(r.json?.detail ?? r.json?.id, Buffer.from(body).toString('latin1')).toBeDefined();
    }
  });

  it('200 mutated paths and queries', async () => {
    const rand = prng(7);
    for (let i = 0; i < 200; i++) {
      const path = Buffer.from(mutate(rand, '/orders/1?status=pending&limit=5')).toString('latin1')
        .replace(/[\s#]/g, '%20').replace(/^([^/])/, '/$1');
      const r = await call(svc.url, rand() < 0.5 ? 'GET' : 'DELETE', encodeURI(path).replace(/%25/g, '%'));
      expect(r.status, path).toBeLessThan(500);
    }
  });
});
