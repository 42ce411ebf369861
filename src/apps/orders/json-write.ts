import { PyFloat, type PyJson } from '../../util/json-parse.js';

/**
 * Writes values the way FastAPI's JSONResponse does (json.dumps, compact separators,
 * ensure_ascii=False), for the `input` and `ctx` echoes of validation errors: bigints exactly,
 * floats (PyFloat) in Python's repr (`1.0`, `1e+16`), Maps in key order. Plain JS numbers are our
 * own integers (positions, limits). Python refuses NaN/Infinity in a response (allow_nan=False
 * makes FastAPI fail with 500); we write null instead.
 */
export function writePyJson(value: PyJson | Record<string, unknown> | unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'boolean': return value ? 'true' : 'false';
    case 'bigint': return value.toString();
    case 'number': return Number.isFinite(value) ? String(value) : 'null';
    case 'string': return JSON.stringify(value);
  }
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  if (Array.isArray(value)) return '[' + value.map(writePyJson).join(',') + ']';
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value as object);
  return '{' + entries.map(([k, v]) => JSON.stringify(String(k)) + ':' + writePyJson(v)).join(',') + '}';
}

/** Python's float repr: shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16. */
export function pyFloatRepr(x: number): string {
  if (!Number.isFinite(x)) return 'null';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, expText] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exp = Number(expText);
  const sign = x < 0 ? '-' : '';
  const decimalPoint = exp + 1;
  if (decimalPoint > -4 && decimalPoint <= 16) {
    if (decimalPoint <= 0) return `${sign}0.${'0'.repeat(-decimalPoint)}${digits}`;
    if (decimalPoint >= digits.length) return `${sign}${digits}${'0'.repeat(decimalPoint - digits.length)}.0`;
    return `${sign}${digits.slice(0, decimalPoint)}.${digits.slice(decimalPoint)}`;
  }
  const frac = digits.length > 1 ? '.' + digits.slice(1) : '';
  const expSign = exp < 0 ? '-' : '+';
  return `${sign}${digits[0]}${frac}e${expSign}${String(Math.abs(exp)).padStart(2, '0')}`;
}
