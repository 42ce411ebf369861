/**
 * A YAML writer for the plain JSON values a manifest is made of (objects, arrays, strings,
 * numbers, booleans, null): block style, two-space indents, strings quoted whenever a YAML reader
 * could take them for something else. The Kubernetes test reads the output back with an
 * independent YAML parser and compares it with the objects.
 */

type Value = null | boolean | number | string | readonly Value[] | { readonly [key: string]: Value | undefined };

/** Several objects as one multi-document stream. */
export function toYamlDocuments(values: readonly unknown[]): string {
  return values.map((v) => toYaml(v)).join('---\n');
}

export function toYaml(value: unknown): string {
  const checked = asValue(value, '');
  return isCollection(checked) && !isEmpty(checked) ? block(checked, 0) : `${scalar(checked)}\n`;
}

/** `value` checked to be plain JSON data (no undefined in arrays, no functions or class instances). */
function asValue(value: unknown, path: string): Value {
  if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((v, i) => asValue(v, `${path}[${i}]`));
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, Value> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = asValue(v, `${path}.${k}`);
    return out;
  }
  throw new Error(`YAML of a value that is no JSON data at ${path || 'the top'}: ${String(value)}`);
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_./-]*$/;
const PLAIN_STRING = /^[A-Za-z_/][A-Za-z0-9_./-]*$/;
/** Words YAML 1.1 readers take for booleans or null. */
const RESERVED = new Set(['y', 'yes', 'n', 'no', 'on', 'off', 'true', 'false', 'null']);

function scalar(value: Value): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`YAML of a non-finite number: ${value}`);
    return String(value);
  }
  if (typeof value === 'string') return PLAIN_STRING.test(value) && !RESERVED.has(value.toLowerCase()) ? value : JSON.stringify(value);
  if (Array.isArray(value)) return '[]';
  return '{}';
}

const isCollection = (value: Value): value is readonly Value[] | { readonly [key: string]: Value | undefined } => value !== null && typeof value === 'object';
const isEmpty = (value: readonly Value[] | { readonly [key: string]: Value | undefined }): boolean =>
  Array.isArray(value) ? value.length === 0 : entries(value as { readonly [key: string]: Value | undefined }).length === 0;
const entries = (value: { readonly [key: string]: Value | undefined }): [string, Value][] =>
  Object.entries(value).filter((e): e is [string, Value] => e[1] !== undefined);

function block(value: readonly Value[] | { readonly [key: string]: Value | undefined }, indent: number): string {
  const pad = ' '.repeat(indent);
  let out = '';
  if (Array.isArray(value)) {
    for (const item of value as readonly Value[]) {
      if (isCollection(item) && !isEmpty(item)) {
        // "- " then the item's first line; the rest of the item indented under it.
        out += `${pad}- ${block(item, indent + 2).slice(indent + 2)}`;
      } else {
        out += `${pad}- ${scalar(item)}\n`;
      }
    }
    return out;
  }
  for (const [key, item] of entries(value as { readonly [key: string]: Value | undefined })) {
    const name = PLAIN_KEY.test(key) && !RESERVED.has(key.toLowerCase()) ? key : JSON.stringify(key);
    if (isCollection(item) && !isEmpty(item)) {
      out += `${pad}${name}:\n${block(item, Array.isArray(item) ? indent : indent + 2)}`;
    } else {
      out += `${pad}${name}: ${scalar(item)}\n`;
    }
  }
  return out;
}
