import { PyFloat, type PyJson } from '../../util/json-parse.js';

/**
 * The pydantic v2 (lax mode, Python input) validators the orders model needs, with pydantic's own
 * error types and messages. Sources, pydantic-core at commit 383eb95a:
 * - messages: src/errors/types.rs `message_template_python` ("Field required", "Input should be a
 *   valid integer, unable to parse string as an integer", ...);
 * - int coercion: src/input/input_python.rs `validate_int` and src/input/shared.rs `str_as_int`,
 *   `clean_int_str`, `strip_leading_zeros`, `strip_underscores`, `float_as_int`.
 */

export type Loc = readonly (string | number)[];

/** One item of a 422 `detail` list, as FastAPI renders pydantic's `errors(include_url=False)`. */
export interface ErrorItem {
  readonly type: string;
  readonly loc: Loc;
  readonly msg: string;
  readonly input: unknown;
  readonly ctx?: Readonly<Record<string, unknown>>;
}

/** A failed check before its location is known. */
export interface Failure {
  readonly type: string;
  readonly msg: string;
  readonly ctx?: Readonly<Record<string, unknown>>;
}

export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: Failure };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = (type: string, msg: string, ctx?: Record<string, unknown>): Checked<never> =>
  ({ ok: false, failure: ctx ? { type, msg, ctx } : { type, msg } });

export const MISSING: Failure = { type: 'missing', msg: 'Field required' };
const INT_TYPE = (): Checked<never> => fail('int_type', 'Input should be a valid integer');
const INT_PARSING = (): Checked<never> => fail('int_parsing', 'Input should be a valid integer, unable to parse string as an integer');
const INT_FROM_FLOAT = (): Checked<never> => fail('int_from_float', 'Input should be a valid integer, got a number with a fractional part');
const INT_PARSING_SIZE = (): Checked<never> => fail('int_parsing_size', 'Unable to parse input string as an integer, exceeded maximum size');
const FINITE_NUMBER = (): Checked<never> => fail('finite_number', 'Input should be a finite number');

export const I64_MAX = 2n ** 63n - 1n;
/** jiter refuses integer strings longer than this (CPython's int digit limit). */
const INT_STRING_DIGITS_MAX = 4300;
const JSON_INT = /^-?(?:0|[1-9]\d*)$/;

/** pydantic `int` in lax mode: ints, bools, integer strings (cleaned), integral floats. */
export function validateInt(value: PyJson): Checked<bigint> {
  switch (typeof value) {
    case 'bigint': return ok(value);
    case 'boolean': return ok(value ? 1n : 0n);
    case 'string': return strAsInt(value);
    default: return value instanceof PyFloat ? floatAsInt(value.value) : INT_TYPE();
  }
}

export function strAsInt(text: string): Checked<bigint> {
  if (JSON_INT.test(text)) {
    return text.replace('-', '').length > INT_STRING_DIGITS_MAX ? INT_PARSING_SIZE() : ok(BigInt(text));
  }
  const cleaned = cleanIntStr(text);
  if (cleaned !== undefined && JSON_INT.test(cleaned) && cleaned.length <= INT_STRING_DIGITS_MAX + 1) {
    return ok(BigInt(cleaned));
  }
  return INT_PARSING();
}

export function floatAsInt(x: number): Checked<bigint> {
  if (!Number.isFinite(x)) return FINITE_NUMBER();
  if (x % 1 !== 0) return INT_FROM_FLOAT();
  // (i64::MIN as f64) < x < (i64::MAX as f64), both bounds exclusive as in pydantic-core.
  if (x > -(2 ** 63) && x < 2 ** 63) return ok(BigInt(x));
  return INT_PARSING_SIZE();
}

/** Rust's str::trim (Unicode White_Space; unlike JS trim, not U+FEFF). */
const RUST_TRIM = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** Port of clean_int_str: whitespace, one sign, leading zeros, `.000` and `1_000` forms. */
function cleanIntStr(raw: string): string | undefined {
  let s = raw.replace(RUST_TRIM, '');
  if (s.startsWith('+')) {
    if (s[1] === '-') return undefined;
    s = s.slice(1);
  }
  let negative = false;
  if (s.startsWith('-')) {
    if (s[1] === '-' || s[1] === '+') return undefined;
    negative = true;
    s = s.slice(1);
  }
  const stripped = stripLeadingZeros(s);
  if (stripped === undefined) return undefined;
  s = stripped;
  const dot = s.indexOf('.');
  if (dot >= 0 && /^0+$/.test(s.slice(dot + 1))) s = s.slice(0, dot);
  const sign = negative ? '-' : '';
  const noUnderscores = stripUnderscores(s);
  if (noUnderscores !== undefined) return sign + noUnderscores;
  if ((negative ? 1 : 0) + s.length === raw.length) return undefined;
  return sign + s;
}

function stripLeadingZeros(s: string): string | undefined {
  const first = s[0];
  if (first === undefined) return undefined;
  if (first !== '0') return (first >= '1' && first <= '9') || first === '-' ? s : undefined;
  for (let i = 1; i < s.length; i++) {
    const c = s[i]!;
    if (c === '0' || c === '_') continue;
    if ((c >= '1' && c <= '9') || c === '-') return s.slice(i);
    if (c === '.') return s.slice(i - 1);
    return undefined;
  }
  return s.slice(-1);
}

function stripUnderscores(s: string): string | undefined {
  if (s.startsWith('_') || s.endsWith('_') || !s.includes('_') || s.includes('__')) return undefined;
  return s.replaceAll('_', '');
}

/** pydantic `str`: from Python input only str passes (no number or bool coercion). */
export function validateStr(value: PyJson): Checked<string> {
  return typeof value === 'string' ? ok(value) : fail('string_type', 'Input should be a valid string');
}

/** Constraint checks, applied after a successful int coercion, as annotated_types Gt/Ge/Le do. */
export function greaterThan(n: bigint, gt: bigint): Checked<bigint> {
  return n > gt ? ok(n) : fail('greater_than', `Input should be greater than ${gt}`, { gt });
}
export function greaterThanEqual(n: bigint, ge: bigint): Checked<bigint> {
  return n >= ge ? ok(n) : fail('greater_than_equal', `Input should be greater than or equal to ${ge}`, { ge });
}
export function lessThanEqual(n: bigint, le: bigint): Checked<bigint> {
  return n <= le ? ok(n) : fail('less_than_equal', `Input should be less than or equal to ${le}`, { le });
}

/** StringConstraints(max_length): Python counts code points, not UTF-16 units. */
export function maxLength(s: string, max: number): Checked<string> {
  let count = 0;
  for (const _ of s) if (++count > max) break;
  return count <= max
    ? ok(s)
    : fail('string_too_long', `String should have at most ${max} character${max === 1 ? '' : 's'}`, { max_length: max });
}

/** A field_validator raising ValueError: pydantic's `value_error`, "Value error, {message}". */
export function valueError(message: string): Checked<never> {
  // FastAPI's jsonable_encoder turns the ValueError object in ctx.error into {}; we answer the same.
  return fail('value_error', `Value error, ${message}`, { error: {} });
}

export function at(loc: Loc, input: unknown, failure: Failure): ErrorItem {
  return failure.ctx ? { type: failure.type, loc, msg: failure.msg, input, ctx: failure.ctx } : { type: failure.type, loc, msg: failure.msg, input };
}
