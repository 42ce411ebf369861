import { readFileIfExists, withFileLock, writeFileAtomic } from './atomic-file.js';
import { failure, usageError } from './errors.js';

/**
 * The config file as the `config` commands see it: a JSON object whose keys are addressed as dot
 * paths (`node.listMaxLimit`, `stacks.prod.nodes`). Reads parse the whole file; changes happen
 * under the file's lock and replace it atomically (temp file, fsync, rename) with mode 0600.
 */

export type ConfigObject = Record<string, unknown>;

const KEY = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+$/;
/** Segments that would reach Object.prototype when assigned. */
const RESERVED = new Set(['__proto__', 'prototype', 'constructor']);

/** A key's segments, or a usage error (exit 2) for a malformed key. */
export function keySegments(key: string): string[] {
  if (!KEY.test(key)) {
    throw usageError(`invalid key "${key}": use two or more dot-separated segments of letters, digits, "_" or "-" (e.g. node.listMaxLimit)`);
  }
  const segments = key.split('.');
  const reserved = segments.find((s) => RESERVED.has(s));
  if (reserved) throw usageError(`invalid key "${key}": "${reserved}" is reserved`);
  return segments;
}

export function readConfigFile(path: string): ConfigObject {
  const text = readFileIfExists(path);
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw failure(`config file ${path} is not valid JSON (${(err as Error).message}); fix or remove it first`);
  }
  if (!isObject(parsed)) throw failure(`config file ${path} must hold a JSON object`);
  return parsed;
}

/** Reads, changes and writes the file under its lock; `change` returns false to write nothing. */
export function updateConfigFile(path: string, change: (file: ConfigObject) => boolean): Promise<boolean> {
  return withFileLock(path, () => {
    const file = readConfigFile(path);
    if (!change(file)) return false;
    writeFileAtomic(path, JSON.stringify(file, null, 2) + '\n');
    return true;
  });
}

export function isObject(value: unknown): value is ConfigObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The value at the path, or undefined. */
export function getPath(file: ConfigObject, segments: readonly string[]): unknown {
  let node: unknown = file;
  for (const segment of segments) {
    if (!isObject(node) || !Object.hasOwn(node, segment)) return undefined;
    node = node[segment];
  }
  return node;
}

/** Sets the value, creating objects on the way; refuses to replace a value that is not an object. */
export function setPath(file: ConfigObject, segments: readonly string[], value: unknown): void {
  let node = file;
  for (let i = 0; i < segments.length - 1; i++) {
    const segment = segments[i]!;
    const next = node[segment];
    if (next === undefined) node[segment] = {};
    else if (!isObject(next)) {
      throw failure(`cannot set ${segments.join('.')}: ${segments.slice(0, i + 1).join('.')} holds ${JSON.stringify(next)}, not an object`);
    }
    node = node[segment] as ConfigObject;
  }
  node[segments[segments.length - 1]!] = value;
}

/** Removes the value and the objects it leaves empty; false when it was not there. */
export function unsetPath(file: ConfigObject, segments: readonly string[]): boolean {
  const [head, ...rest] = segments;
  if (!Object.hasOwn(file, head!)) return false;
  if (rest.length === 0) {
    delete file[head!];
    return true;
  }
  const next = file[head!];
  if (!isObject(next) || !unsetPath(next, rest)) return false;
  if (Object.keys(next).length === 0) delete file[head!];
  return true;
}

/** Every leaf of the file as [dot path, value], in file order (arrays are leaves). */
export function flatten(file: ConfigObject, prefix = ''): [string, unknown][] {
  return Object.entries(file).flatMap(([key, value]): [string, unknown][] =>
    isObject(value) && Object.keys(value).length > 0 ? flatten(value, `${prefix}${key}.`) : [[`${prefix}${key}`, value]]);
}

/** A value as the commands print it: strings bare, everything else as JSON. */
export function formatValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
