import { beforeAll, describe, expect, it } from 'vitest';
import { type OrdersProcess, call, useOrdersService } from './helpers.js';

/**
 * POST /orders against the real service: the 200 shape, pydantic's lax coercions, and every 422
 * item compared field by field with what FastAPI + pydantic v2 answer for the same body.
 */

const service = useOrdersService();
let svc: OrdersProcess;
beforeAll(() => {
  svc = service();
});

const post = (body: string | Uint8Array, contentType?: string | null) => call(svc.url, 'POST', '/orders', { body, contentType });

const MSG = {
  missing: 'Field required',
  int_type: 'Input should be a valid integer',
  int_parsing: 'Input should be a valid integer, unable to parse string as an integer',
  int_from_float: 'Input should be a valid integer, got a number with a fractional part',
  int_parsing_size: 'Unable to parse input string as an integer, exceeded maximum size',
  finite_number: 'Input should be a finite number',
  string_type: 'Input should be a valid string',
  model_attributes_type: 'Input should be a valid dictionary or object to extract fields from',
};

describe('POST /orders with a valid body', () => {
  it('answers 200 with id, amount, currency and status pending, without the note', async () => {
    const r = await post('{"amount": 1250, "currency": "EUR", "note": "gift wrap"}');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(Object.keys(r.json)).toEqual(['id', 'amount', 'currency', 'status']);
    expect(r.json).toMatchObject({ amount: 1250, currency: 'EUR', status: 'pending' });
    expect(Number.isInteger(r.json.id) && r.json.id >= 1).toBe(true);
  });

  it('assigns ascending ids', async () => {
    const a = await post('{"amount": 1, "currency": "USD"}');
    const b = await post('{"amount": 2, "currency": "USD"}');
    expect(b.json.id).toBe(a.json.id + 1);
  });

  it.each([
    ['an integer string', '"42"', 42],
    ['a string with spaces, sign, leading zeros and underscores', '" +0_001_000 "', 1000],
    ['a float without fraction', '42.0', 42],
    ['a string float with zero fraction', '"7.000"', 7],
    ['true (lax bool to int)', 'true', 1],
    ['an exponent float', '1e3', 1000],
  ])('accepts amount as %s, like pydantic lax mode', async (_name, amount, expected) => {
    const r = await post(`{"amount": ${amount}, "currency": "JPY"}`);
    expect(r.status).toBe(200);
    expect(r.json.amount).toBe(expected);
  });

  it('keeps the largest amount (2^63-1) exact', async () => {
    const r = await post('{"amount": 9223372036854775807, "currency": "CHF"}');
    expect(r.status).toBe(200);
    expect(r.text).toContain('"amount":9223372036854775807,');
  });

  it('accepts note null, absent, and 1000 characters counted as code points', async () => {
    for (const note of ['null', '"' + '\u{1F600}'.repeat(1000) + '"']) {
      const r = await post(`{"amount": 5, "currency": "GBP", "note": ${note}}`);
      expect(r.status).toBe(200);
    }
  });

  it('accepts application/json with parameters and application/*+json', async () => {
    expect((await post('{"amount": 5, "currency": "GBP"}', 'application/json; charset=utf-8')).status).toBe(200);
    expect((await post('{"amount": 5, "currency": "GBP"}', 'application/vnd.orders+json')).status).toBe(200);
  });

  it('accepts a UTF-8 byte order mark (json.loads of bytes)', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"amount": 5, "currency": "GBP"}')]);
    expect((await post(body)).status).toBe(200);
  });

  it('ignores unknown fields', async () => {
    const r = await post('{"amount": 5, "currency": "GBP", "id": 999, "status": "paid"}');
    expect(r.status).toBe(200);
    expect(r.json.status).toBe('pending');
    expect(r.json.id).not.toBe(999);
  });
});

describe('POST /orders field validation (422, pydantic v2 items)', () => {
  it.each([
    ['amount with a fraction', '{"amount": 1.5, "currency": "USD"}',
      [{ type: 'int_from_float', loc: ['body', 'amount'], msg: MSG.int_from_float, input: 1.5 }]],
    ['amount not a number', '{"amount": "ten", "currency": "USD"}',
      [{ type: 'int_parsing', loc: ['body', 'amount'], msg: MSG.int_parsing, input: 'ten' }]],
    ['amount a fractional string', '{"amount": "1.5", "currency": "USD"}',
      [{ type: 'int_parsing', loc: ['body', 'amount'], msg: MSG.int_parsing, input: '1.5' }]],
    ['amount null', '{"amount": null, "currency": "USD"}',
      [{ type: 'int_type', loc: ['body', 'amount'], msg: MSG.int_type, input: null }]],
    ['amount a list', '{"amount": [1], "currency": "USD"}',
      [{ type: 'int_type', loc: ['body', 'amount'], msg: MSG.int_type, input: [1] }]],
    ['amount zero', '{"amount": 0, "currency": "USD"}',
      [{ type: 'greater_than', loc: ['body', 'amount'], msg: 'Input should be greater than 0', input: 0, ctx: { gt: 0 } }]],
    ['amount negative', '{"amount": -5, "currency": "USD"}',
      [{ type: 'greater_than', loc: ['body', 'amount'], msg: 'Input should be greater than 0', input: -5, ctx: { gt: 0 } }]],
    ['amount false (0 after lax coercion)', '{"amount": false, "currency": "USD"}',
      [{ type: 'greater_than', loc: ['body', 'amount'], msg: 'Input should be greater than 0', input: false, ctx: { gt: 0 } }]],
    ['amount an out-of-range float', '{"amount": 1e19, "currency": "USD"}',
      [{ type: 'int_parsing_size', loc: ['body', 'amount'], msg: MSG.int_parsing_size, input: 1e19 }]],
    ['amount NaN', '{"amount": NaN, "currency": "USD"}',
      [{ type: 'finite_number', loc: ['body', 'amount'], msg: MSG.finite_number, input: null }]],
    ['currency not a string', '{"amount": 5, "currency": 840}',
      [{ type: 'string_type', loc: ['body', 'currency'], msg: MSG.string_type, input: 840 }]],
    ['currency unknown', '{"amount": 5, "currency": "XYZ"}',
      [{ type: 'value_error', loc: ['body', 'currency'], msg: "Value error, currency must be an ISO 4217 code such as USD or EUR, got 'XYZ'", input: 'XYZ', ctx: { error: {} } }]],
    ['currency lower case', '{"amount": 5, "currency": "usd"}',
      [{ type: 'value_error', loc: ['body', 'currency'], msg: "Value error, currency must be an ISO 4217 code such as USD or EUR, got 'usd'", input: 'usd', ctx: { error: {} } }]],
    ['note not a string', '{"amount": 5, "currency": "USD", "note": 7}',
      [{ type: 'string_type', loc: ['body', 'note'], msg: MSG.string_type, input: 7 }]],
  ])('rejects %s', async (_name, body, detail) => {
    const r = await post(body);
    expect(r.status).toBe(422);
    expect(r.json.detail).toHaveLength(detail.length);
    detail.forEach((item, i) => expect(r.json.detail[i]).toStrictEqual(item));
  });

  it('rejects a note over 1000 characters with string_too_long and max_length', async () => {
    const note = 'n'.repeat(1001);
    const r = await post(`{"amount": 5, "currency": "USD", "note": "${note}"}`);
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([
      { type: 'string_too_long', loc: ['body', 'note'], msg: 'String should have at most 1000 characters', input: note, ctx: { max_length: 1000 } },
    ]);
  });

  it('rejects amounts beyond 2^63-1 with less_than_equal, echoing the exact input', async () => {
    const r = await post('{"amount": 9223372036854775808, "currency": "USD"}');
    expect(r.status).toBe(422);
    expect(r.text).toBe('{"detail":[{"type":"less_than_equal","loc":["body","amount"],"msg":"Input should be less than or equal to 9223372036854775807","input":9223372036854775808,"ctx":{"le":9223372036854775807}}]}');
  });

  it('reports every failing field at once, in declaration order', async () => {
    const r = await post('{"amount": 2.5, "currency": null, "note": ["x"]}');
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([
      { type: 'int_from_float', loc: ['body', 'amount'], msg: MSG.int_from_float, input: 2.5 },
      { type: 'string_type', loc: ['body', 'currency'], msg: MSG.string_type, input: null },
      { type: 'string_type', loc: ['body', 'note'], msg: MSG.string_type, input: ['x'] },
    ]);
  });

  it('reports missing fields with the whole body as input', async () => {
    const r = await post('{"note": "n"}');
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([
      { type: 'missing', loc: ['body', 'amount'], msg: MSG.missing, input: { note: 'n' } },
      { type: 'missing', loc: ['body', 'currency'], msg: MSG.missing, input: { note: 'n' } },
    ]);
  });

  it('echoes floats as Python writes them', async () => {
    const r = await post('{"amount": 5, "currency": 1.0}');
    expect(r.text).toContain('"input":1.0}');
  });
});

describe('POST /orders body shape and content type', () => {
  it.each([
    ['an empty body', '', [{ type: 'missing', loc: ['body'], msg: MSG.missing, input: null }]],
    ['a JSON null', 'null', [{ type: 'missing', loc: ['body'], msg: MSG.missing, input: null }]],
    ['a JSON array', '[1, 2]', [{ type: 'model_attributes_type', loc: ['body'], msg: MSG.model_attributes_type, input: [1, 2] }]],
    ['a JSON string', '"order"', [{ type: 'model_attributes_type', loc: ['body'], msg: MSG.model_attributes_type, input: 'order' }]],
  ])('answers 422 for %s', async (_name, body, detail) => {
    const r = await post(body);
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual(detail);
  });

  it.each([
    ['no content type', null],
    ['text/plain', 'text/plain'],
    ['a form content type', 'application/x-www-form-urlencoded'],
  ])('treats a body with %s as raw data: 422 model_attributes_type (FastAPI strict_content_type)', async (_n, type) => {
    const body = '{"amount": 5, "currency": "USD"}';
    const r = await post(body, type);
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([{ type: 'model_attributes_type', loc: ['body'], msg: MSG.model_attributes_type, input: body }]);
  });
});

describe('POST /orders malformed JSON (422 json_invalid, as json.loads reports it)', () => {
  it.each([
    ['{"amount": }', 11, 'Expecting value'],
    ['{', 1, 'Expecting property name enclosed in double quotes'],
    ["{'amount': 5}", 1, 'Expecting property name enclosed in double quotes'],
    ['{"a" 1}', 5, "Expecting ':' delimiter"],
    ['{"a":1 "b":2}', 7, "Expecting ',' delimiter"],
    ['{"a":1,}', 6, 'Illegal trailing comma before end of object'],
    ['["\u{1F600}", ]', 4, 'Illegal trailing comma before end of array'],
    ['{"a":1} x', 8, 'Extra data'],
    ['"abc', 0, 'Unterminated string starting at'],
    ['"a\\qb"', 2, 'Invalid \\escape'],
    ['"\\u12"', 2, 'Invalid \\uXXXX escape'],
    ['"a\nb"', 2, 'Invalid control character at'],
    ['   ', 3, 'Expecting value'],
    ['{"amount": 01}', 12, "Expecting ',' delimiter"],
  ])('%j -> position %d, %s', async (body, pos, error) => {
    const r = await post(body);
    expect(r.status).toBe(422);
    expect(r.json.detail).toStrictEqual([{ type: 'json_invalid', loc: ['body', pos], msg: 'JSON decode error', input: {}, ctx: { error } }]);
  });
});

describe('POST /orders hostile bodies (4xx with detail, never 500)', () => {
  it('answers 400 for invalid UTF-8', async () => {
    const r = await post(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
    expect(r.status).toBe(400);
    expect(r.json).toStrictEqual({ detail: 'There was an error parsing the body' });
  });

  it('answers 400 for JSON nested beyond the depth limit', async () => {
    const r = await post('['.repeat(100_000));
    expect(r.status).toBe(400);
    expect(r.json).toStrictEqual({ detail: 'There was an error parsing the body' });
  });

  it('answers 400 for an integer literal of more than 4300 digits (Python int limit)', async () => {
    const r = await post(`{"amount": ${'9'.repeat(5000)}, "currency": "USD"}`);
    expect(r.status).toBe(400);
  });

  it('answers 422 int_parsing_size for an integer string of more than 4300 digits', async () => {
    const r = await post(`{"amount": "${'9'.repeat(5000)}", "currency": "USD"}`);
    expect(r.status).toBe(422);
    expect(r.json.detail[0].type).toBe('int_parsing_size');
  });

  it('answers 413 for a body over 1 MiB', async () => {
    const r = await post(' '.repeat(1024 * 1024 + 1));
    expect(r.status).toBe(413);
    expect(typeof r.json.detail).toBe('string');
  });

  it('answers 413 that a client still sending a large declared body reads (no reset under its writes)', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await post(new Uint8Array(16 * 1024 * 1024).fill(0x20));
      expect(r.status).toBe(413);
      expect(r.headers.get('connection')).toBe('close');
    }
  });

  it('answers 413 for a chunked body that grows over 1 MiB', async () => {
    const chunk = new Uint8Array(256 * 1024).fill(0x20);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 6) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(svc.url + '/orders', {
      method: 'POST', body: stream, headers: { 'content-type': 'application/json' }, duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
  });

  it('still serves after all of the above', async () => {
    expect((await post('{"amount": 1, "currency": "USD"}')).status).toBe(200);
  });
});
