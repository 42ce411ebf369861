/**
 * The logger (src/log): the JSON line format, levels, redaction and the pretty form, in process;
 * and the request id a failed request is logged with, which its answer carries back (HTTP API,
 * gRPC, orders).
 */
import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { BlobstoreError } from '../../src/errors/errors.js';
import { toStatus } from '../../src/grpc/status.js';
import { newExchange, sendError } from '../../src/http/reply.js';
import type { HttpResponse } from '../../src/http/uws.js';
import { WIRE_B } from '../../src/http/wire.js';
import { isPretty } from '../../src/log/logger.js';
import { requestId } from '../../src/log/request-id.js';
import { errorResponse } from '../../src/apps/orders/service.js';
import { captureLogger } from '../helpers/log.js';

describe('JSON lines', () => {
  it('carry time (ISO 8601), level by name, name, pid, node and msg', () => {
    const { log, lines } = captureLogger();
    log.info({ dataDir: '/d' }, 'data dir /d');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStrictEqual({
      level: 'info', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), pid: process.pid,
      node: 'test-node', name: 'test', dataDir: '/d', msg: 'data dir /d',
    });
  });

  it('lines under the level are not written', () => {
    const { log, lines } = captureLogger('warn');
    log.info('quiet');
    log.debug('quieter');
    log.warn('loud');
    log.error('louder');
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toStrictEqual(['warn loud', 'error louder']);
  });

  it('errors are logged with type, message and stack under err', () => {
    const { log, lines } = captureLogger();
    log.error({ err: new RangeError('bad range') }, 'failed');
    expect(lines[0]!.err).toMatchObject({ type: 'RangeError', message: 'bad range', stack: expect.stringContaining('RangeError: bad range') });
  });

  it('authorization values and tokens are redacted wherever a caller passes them', () => {
    const { log, text } = captureLogger();
    log.info({ authorization: 'Bearer s3cret-token', headers: { authorization: 'Bearer s3cret-token' }, req: { token: 's3cret-token' } }, 'x');
    expect(text()).not.toContain('s3cret');
    expect(text()).toContain('[redacted]');
  });

  it('auto is pretty on a terminal and JSON otherwise; json and pretty are what they say', () => {
    expect(isPretty('auto', true)).toBe(true);
    expect(isPretty('auto', false)).toBe(false);
    expect(isPretty('json', true)).toBe(false);
    expect(isPretty('pretty', false)).toBe(true);
  });
});

describe('request ids', () => {
  it('a sane client id is kept; anything else gets a new UUID', () => {
    expect(requestId('abc-123')).toBe('abc-123');
    for (const bad of [undefined, '', 'a b', 'x'.repeat(129), 'quote"d', 'new\nline']) {
      expect(requestId(bad)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
  });

  /** The headers and status an HTTP answer was written with. */
  function fakeResponse(): { res: HttpResponse; headers: Record<string, string>; status: () => string } {
    const headers: Record<string, string> = {};
    let status = '';
    const res = {
      onAborted: () => res,
      cork: (fn: () => void) => { fn(); return res; },
      writeStatus: (s: string) => { status = s; return res; },
      writeHeader: (k: string, v: string) => { headers[k] = v; return res; },
      end: () => res,
    };
    return { res: res as unknown as HttpResponse, headers, status: () => status };
  }

  it('HTTP API: a 500 is logged with a request id that the answer carries in X-Request-Id', () => {
    const { log, lines } = captureLogger();
    const r = fakeResponse();
    sendError(newExchange(r.res, WIRE_B, log), new BlobstoreError('internal', 'backend storage failure', { cause: new Error('EIO: i/o error') }));
    expect(r.status()).toBe('500 Internal Server Error');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'error', status: 500, msg: 'backend storage failure: EIO: i/o error' });
    expect(r.headers['X-Request-Id']).toBe(lines[0]!.reqId);
  });

  it('HTTP API: client errors and 503s are not logged and carry no request id', () => {
    const { log, lines } = captureLogger();
    for (const err of [new BlobstoreError('not_found', 'blob not found'), new BlobstoreError('unavailable', 'too many uploads')]) {
      const r = fakeResponse();
      sendError(newExchange(r.res, WIRE_B, log), err);
      expect(r.headers['X-Request-Id']).toBeUndefined();
    }
    expect(lines).toStrictEqual([]);
  });

  it("gRPC: an INTERNAL status is logged with the caller's x-request-id, which comes back as trailing metadata", () => {
    const { log, lines } = captureLogger();
    const md = new Metadata();
    md.set('x-request-id', 'client-id-7');
    const status = toStatus(new BlobstoreError('internal', 'backend storage failure'), 'Put', log, md);
    expect(status.code).toBe(13);
    expect(lines[0]).toMatchObject({ level: 'error', reqId: 'client-id-7', method: 'Put', grpcCode: 13 });
    expect(status.metadata?.get('x-request-id')).toStrictEqual(['client-id-7']);
    const plain = toStatus(new BlobstoreError('invalid_argument', 'invalid blob ID'), 'Get', log, md);
    expect(plain.metadata).toBeUndefined();
    expect(lines).toHaveLength(1);
  });

  it('orders: an unexpected failure is a 500 logged with the request id of its X-Request-Id header', () => {
    const { log, lines } = captureLogger();
    const answer = errorResponse(new TypeError('cannot read x of undefined'), log);
    expect(answer.status).toBe(500);
    expect(answer.body).toBe('{"detail":"Internal Server Error"}');
    expect(lines[0]).toMatchObject({ level: 'error', err: { type: 'TypeError' } });
    expect(answer.headers?.['X-Request-Id']).toBe(lines[0]!.reqId);
  });
});
