/**
 * A JSON reader that behaves like CPython's `json.loads` (the decoder FastAPI uses), because the
 * orders API promises FastAPI's answers: the same accepted documents (NaN, Infinity, big integers),
 * the same error message and position for each malformed document (CPython Modules/_json.c and
 * Lib/json/decoder.py, 3.13), and Python's value model: integers stay exact (bigint), floats are
 * numbers, objects keep key order (Map; the last duplicate wins in place).
 *
 * JS' JSON.parse cannot serve here: it drops the int/float distinction (`1.0` vs `1`), rounds big
 * integers, and its error messages differ.
 */

export type PyJson = null | boolean | bigint | PyFloat | string | PyJson[] | Map<string, PyJson>;

/** A Python float (JSON number with a fraction or exponent, NaN, Infinity); ints are bigints. */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A malformed document: FastAPI answers 422 `json_invalid` with this message and position. */
export class JsonDecodeError extends Error {
  override readonly name = 'JsonDecodeError';
  /** Position in code points (Python string indexes), as FastAPI reports it in `loc`. */
  readonly pos: number;
  constructor(message: string, pos: number) {
    super(message);
    this.pos = pos;
  }
}

/** A body json.loads fails on with another exception (recursion, digit limit): FastAPI answers 400. */
export class BodyParseError extends Error {
  override readonly name = 'BodyParseError';
}

/** CPython raises RecursionError near depth 1000; we stop earlier so our own stack stays small. */
export const JSON_DEPTH_MAX = 500;
/** CPython 3.11+ refuses int conversion of more than 4300 digits (sys.int_info.default_max_str_digits). */
const INT_DIGITS_MAX = 4300;

const isWs = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

class Reader {
  private readonly s: string;
  private readonly n: number;
  constructor(text: string) {
    this.s = text;
    this.n = text.length;
  }

  /** Python json.decoder.JSONDecoder.decode: skip whitespace, one value, whitespace, end. */
  document(): PyJson {
    const [value, end] = this.value(this.skipWs(0), 0);
    if (this.skipWs(end) !== this.n) this.fail('Extra data', this.skipWs(end));
    return value;
  }

  private skipWs(i: number): number {
    while (i < this.n && isWs(this.s.charCodeAt(i))) i++;
    return i;
  }

  private fail(message: string, index: number): never {
    throw new JsonDecodeError(message, codePointIndex(this.s, index));
  }

  /** scan_once: one value starting exactly at i; "Expecting value" when none starts there. */
  private value(i: number, depth: number): [PyJson, number] {
    if (i >= this.n) this.fail('Expecting value', i);
    const c = this.s[i];
    switch (c) {
      case '"': return this.string(i + 1);
      case '{': return this.object(i + 1, depth + 1);
      case '[': return this.array(i + 1, depth + 1);
      case 'n': if (this.s.startsWith('null', i)) return [null, i + 4]; break;
      case 't': if (this.s.startsWith('true', i)) return [true, i + 4]; break;
      case 'f': if (this.s.startsWith('false', i)) return [false, i + 5]; break;
      case 'N': if (this.s.startsWith('NaN', i)) return [new PyFloat(NaN), i + 3]; break;
      case 'I': if (this.s.startsWith('Infinity', i)) return [new PyFloat(Infinity), i + 8]; break;
      case '-': if (this.s.startsWith('-Infinity', i)) return [new PyFloat(-Infinity), i + 9]; break;
    }
    return this.number(i);
  }

  /** _match_number_unicode: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)? with Python's backtracking. */
  private number(start: number): [PyJson, number] {
    const s = this.s;
    let i = start;
    if (s.charCodeAt(i) === 0x2d) i++;
    const first = s.charCodeAt(i);
    if (first >= 0x31 && first <= 0x39) {
      i++;
      while (i < this.n && isDigit(s.charCodeAt(i))) i++;
    } else if (first === 0x30) {
      i++;
    } else {
      this.fail('Expecting value', start);
    }
    let isFloat = false;
    if (s[i] === '.' && isDigit(s.charCodeAt(i + 1))) {
      isFloat = true;
      i += 2;
      while (i < this.n && isDigit(s.charCodeAt(i))) i++;
    }
    if (s[i] === 'e' || s[i] === 'E') {
      const eStart = i;
      i++;
      if (s[i] === '-' || s[i] === '+') i++;
      const digitsStart = i;
      while (i < this.n && isDigit(s.charCodeAt(i))) i++;
      if (i > digitsStart) isFloat = true;
      else i = eStart;
    }
    const text = s.slice(start, i);
    if (isFloat) return [new PyFloat(Number(text)), i];
    if (text.replace('-', '').length > INT_DIGITS_MAX) {
      throw new BodyParseError(`integer literal exceeds ${INT_DIGITS_MAX} digits`);
    }
    return [BigInt(text), i];
  }

  /** scanstring_unicode (strict): i is just past the opening quote. */
  private string(i: number): [string, number] {
    const s = this.s;
    const begin = i - 1;
    let out = '';
    let chunkStart = i;
    for (;;) {
      let c = -1;
      while (i < this.n) {
        c = s.charCodeAt(i);
        if (c === 0x22 || c === 0x5c) break;
        if (c <= 0x1f) this.fail('Invalid control character at', i);
        i++;
      }
      if (i >= this.n) this.fail('Unterminated string starting at', begin);
      out += s.slice(chunkStart, i);
      i++;
      if (c === 0x22) return [out, i];
      if (i >= this.n) this.fail('Unterminated string starting at', begin);
      const esc = s[i]!;
      if (esc !== 'u') {
        const decoded = SIMPLE_ESCAPES[esc];
        if (decoded === undefined) this.fail('Invalid \\escape', i - 1);
        out += decoded;
        i++;
      } else {
        const [unit, next] = this.unicodeEscape(i + 1);
        out += unit;
        i = next;
      }
      chunkStart = i;
    }
  }

  /** \uXXXX (i at the first hex digit), joining a following low surrogate escape like CPython. */
  private unicodeEscape(i: number): [string, number] {
    const hex = (at: number): number => {
      if (at + 4 >= this.n) this.fail('Invalid \\uXXXX escape', at - 1);
      const text = this.s.slice(at, at + 4);
      if (!/^[0-9a-fA-F]{4}$/.test(text)) this.fail('Invalid \\uXXXX escape', at - 1);
      return parseInt(text, 16);
    };
    const high = hex(i);
    let next = i + 4;
    if (high >= 0xd800 && high <= 0xdbff && this.s.startsWith('\\u', next) && next + 6 < this.n) {
      const low = hex(next + 2);
      if (low >= 0xdc00 && low <= 0xdfff) return [String.fromCharCode(high, low), next + 6];
    }
    return [String.fromCharCode(high), next];
  }

  private object(i: number, depth: number): [PyJson, number] {
    if (depth > JSON_DEPTH_MAX) throw new BodyParseError('JSON nesting too deep');
    const result = new Map<string, PyJson>();
    i = this.skipWs(i);
    if (this.s[i] === '}') return [result, i + 1];
    for (;;) {
      if (this.s[i] !== '"') this.fail('Expecting property name enclosed in double quotes', i);
      const [key, afterKey] = this.string(i + 1);
      i = this.skipWs(afterKey);
      if (this.s[i] !== ':') this.fail("Expecting ':' delimiter", i);
      const [value, afterValue] = this.value(this.skipWs(i + 1), depth);
      result.set(key, value);
      i = this.skipWs(afterValue);
      if (this.s[i] === '}') return [result, i + 1];
      if (this.s[i] !== ',') this.fail("Expecting ',' delimiter", i);
      const comma = i;
      i = this.skipWs(i + 1);
      if (this.s[i] === '}') this.fail('Illegal trailing comma before end of object', comma);
    }
  }

  private array(i: number, depth: number): [PyJson, number] {
    if (depth > JSON_DEPTH_MAX) throw new BodyParseError('JSON nesting too deep');
    const result: PyJson[] = [];
    i = this.skipWs(i);
    if (this.s[i] === ']') return [result, i + 1];
    for (;;) {
      const [value, afterValue] = this.value(i, depth);
      result.push(value);
      i = this.skipWs(afterValue);
      if (this.s[i] === ']') return [result, i + 1];
      if (this.s[i] !== ',') this.fail("Expecting ',' delimiter", i);
      const comma = i;
      i = this.skipWs(i + 1);
      if (this.s[i] === ']') this.fail('Illegal trailing comma before end of array', comma);
    }
  }
}

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t',
};

/** Python indexes strings by code point; JS by UTF-16 unit. */
function codePointIndex(s: string, unitIndex: number): number {
  let pos = 0;
  for (let i = 0; i < unitIndex && i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < unitIndex) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    pos++;
  }
  return pos;
}

/** json.loads(str): a leading BOM in text is an error in Python, then the document. */
export function parsePyJson(text: string): PyJson {
  if (text.charCodeAt(0) === 0xfeff) throw new JsonDecodeError('Unexpected UTF-8 BOM (decode using utf-8-sig)', 0);
  return new Reader(text).document();
}

/**
 * json.loads(bytes): detect the encoding as json.detect_encoding does (BOMs, NUL patterns), decode
 * strictly, then parse. Undecodable bytes are BodyParseError (FastAPI: 400), not a JSON error.
 */
export function decodeJsonBytes(bytes: Uint8Array): string {
  const encoding = detectEncoding(bytes);
  if (encoding === 'utf-32') throw new BodyParseError('UTF-32 request bodies are not supported');
  try {
    return new TextDecoder(encoding, { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (err) {
    throw new BodyParseError(`request body is not valid ${encoding}`, { cause: err });
  }
}

function detectEncoding(b: Uint8Array): 'utf-8' | 'utf-16le' | 'utf-16be' | 'utf-32' {
  const starts = (...bom: number[]): boolean => bom.every((v, i) => b[i] === v);
  if (starts(0x00, 0x00, 0xfe, 0xff) || starts(0xff, 0xfe, 0x00, 0x00)) return 'utf-32';
  if (starts(0xfe, 0xff)) return 'utf-16be';
  if (starts(0xff, 0xfe)) return 'utf-16le';
  if (starts(0xef, 0xbb, 0xbf)) return 'utf-8';
  if (b.length >= 4) {
    if (b[0] === 0) return b[1] ? 'utf-16be' : 'utf-32';
    if (b[1] === 0) return b[2] || b[3] ? 'utf-16le' : 'utf-32';
  } else if (b.length === 2) {
    if (b[0] === 0) return 'utf-16be';
    if (b[1] === 0) return 'utf-16le';
  }
  return 'utf-8';
}
