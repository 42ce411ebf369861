import { describe, expect, it } from 'vitest';
import { JsonDecodeError, PyFloat, parsePyJson } from '../../src/util/json-parse.js';
import { pyFloatRepr, writePyJson } from '../../src/apps/orders/json-write.js';
import { strAsInt, validateInt } from '../../src/apps/orders/pydantic.js';
import { parseQuery, percentDecode } from '../../src/apps/orders/routes.js';

/** The private Python-compatibility pieces, against values taken from CPython and pydantic-core. */

describe('pyFloatRepr matches Python repr(float)', () => {
  it.each([
    [1, '1.0'], [1.5, '1.5'], [-0, '-0.0'], [0, '0.0'], [1e16, '1e+16'], [1e15, '1000000000000000.0'],
    [123456789012345678, '1.2345678901234568e+17'], [0.0001, '0.0001'], [0.00001, '1e-05'], [1.5e-7, '1.5e-07'],
    [0.1 + 0.2, '0.30000000000000004'], [-2.5e22, '-2.5e+22'], [1e19, '1e+19'],
  ])('%s -> %s', (x, repr) => expect(pyFloatRepr(x)).toBe(repr));
});

describe('parsePyJson keeps Python types', () => {
  it('parses ints as bigints and floats as PyFloat', () => {
    const v = parsePyJson('{"a": 1, "b": 1.0, "c": 123456789012345678901234567890, "d": -1e400}') as Map<string, unknown>;
    expect(v.get('a')).toBe(1n);
    expect(v.get('b')).toEqual(new PyFloat(1));
    expect(v.get('c')).toBe(123456789012345678901234567890n);
    expect((v.get('d') as PyFloat).value).toBe(-Infinity);
  });

  it('keeps key order and lets the last duplicate win in place', () => {
    const v = parsePyJson('{"2": 1, "1": 2, "2": 3}') as Map<string, unknown>;
    expect([...v.entries()]).toEqual([['2', 3n], ['1', 2n]]);
    expect(writePyJson(v)).toBe('{"2":3,"1":2}');
  });

  it('joins surrogate pair escapes and reports positions in code points', () => {
    expect(parsePyJson('"\\ud83d\\ude00"')).toBe('\u{1F600}');
    try {
      parsePyJson('["\u{1F600}\u{1F600}", x]');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(JsonDecodeError);
      expect((err as JsonDecodeError).pos).toBe(7); // [ " 😀 😀 " , space x
    }
  });
});

describe('pydantic int coercion (str_as_int, float_as_int)', () => {
  it.each([
    ['42', 42n], [' 42 ', 42n], ['+42', 42n], ['-42', -42n], ['0042', 42n], ['1_000', 1000n], ['42.000', 42n],
    ['-0', 0n], ['00', 0n], ['0.0', 0n],
  ])('accepts %j as %s', (text, n) => expect(strAsInt(text)).toStrictEqual({ ok: true, value: n }));

  it.each(['', ' ', '4 2', '1__0', '_1', '1_', '+-1', '--1', '1.5', '1.', '0x10', '1e3', 'inf', '١٢'])('refuses %j with int_parsing', (text) => {
    const r = strAsInt(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.failure.type).toBe('int_parsing');
  });

  it('maps floats like pydantic-core', () => {
    expect(validateInt(new PyFloat(3))).toStrictEqual({ ok: true, value: 3n });
    const failures = [new PyFloat(3.5), new PyFloat(NaN), new PyFloat(2 ** 63), null, [], new Map()].map((v) => {
      const r = validateInt(v as never);
      return r.ok ? 'ok' : r.failure.type;
    });
    expect(failures).toStrictEqual(['int_from_float', 'finite_number', 'int_parsing_size', 'int_type', 'int_type', 'int_type']);
  });
});

describe('query and path decoding like Starlette', () => {
  it('decodes + and %XX, keeps invalid escapes, replaces invalid UTF-8', () => {
    expect(percentDecode('a%20b%zz%')).toBe('a b%zz%');
    expect(percentDecode('%ff')).toBe('\ufffd');
    expect([...parseQuery('status=a+b&flag&limit=1&limit=2&=x').entries()]).toEqual([['status', 'a b'], ['flag', ''], ['limit', '2'], ['', 'x']]);
  });
});
