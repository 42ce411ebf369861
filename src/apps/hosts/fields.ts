/**
 * Reading a JSON description field by field: every check names the field's path
 * (`nodes[1].dataDir`), unknown fields are refused (a typo must not silently fall back to a
 * default), and the first problem ends the read with a ClusterFileError.
 */

/** A bad cluster description: the CLI prints the message and exits with status 2. */
export class ClusterFileError extends Error {
  override readonly name = 'ClusterFileError';
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** One JSON object of the description and the path that names it in errors. */
export class Fields {
  private constructor(
    readonly where: string,
    private readonly object: Readonly<Record<string, unknown>>,
  ) {}

  /** `value` as an object whose keys are all in `known` (`unknown` says what else to tell). */
  static of(value: unknown, path: string, known: readonly string[], unknown = `the fields are ${known.join(', ')}`): Fields {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ClusterFileError(`${path || 'the description'} must be a JSON object`);
    const fields = new Fields(path, value as Record<string, unknown>);
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) throw new ClusterFileError(`${fields.name(key)} is not a field here; ${unknown}`);
    }
    return fields;
  }

  name(key: string): string {
    return this.where ? `${this.where}.${key}` : key;
  }

  has(key: string): boolean {
    return this.object[key] !== undefined;
  }

  raw(key: string): unknown {
    return this.object[key];
  }

  fail(key: string, want: string): never {
    const value = this.object[key];
    throw new ClusterFileError(`${this.name(key)} must be ${want}${value === undefined ? ' (it is missing)' : `, not ${JSON.stringify(value)}`}`);
  }

  string(key: string, fallback?: string, pattern?: RegExp, want = 'a non-empty string'): string {
    const value = this.object[key];
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== 'string' || value === '' || (pattern && !pattern.test(value))) return this.fail(key, want);
    return value;
  }

  /** An absolute path without whitespace or quotes (it goes into unit files and env files as is). */
  path(key: string, fallback?: string): string {
    return this.string(key, fallback, ABSOLUTE_PATH, 'an absolute path without spaces or quotes');
  }

  optionalPath(key: string): string | undefined {
    return this.has(key) ? this.path(key) : undefined;
  }

  int(key: string, fallback: number, min: number, max: number): number {
    const value = this.object[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) return this.fail(key, `an integer from ${min} to ${max}`);
    return value;
  }

  strings(key: string, fallback: readonly string[], pattern: RegExp, want: string): string[] {
    const value = this.object[key];
    if (value === undefined) return [...fallback];
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && pattern.test(v))) return this.fail(key, want);
    return value as string[];
  }

  /** A nested object, or undefined when absent. */
  section(key: string, known: readonly string[], unknown?: string): Fields | undefined {
    return this.has(key) ? Fields.of(this.object[key], this.name(key), known, unknown) : undefined;
  }

  array(key: string): unknown[] {
    const value = this.object[key];
    if (!Array.isArray(value) || value.length === 0) return this.fail(key, 'a non-empty array');
    return value;
  }

  /** An object passed through as is (checked only for being an object). */
  json(key: string): Record<string, Json> | undefined {
    const value = this.object[key];
    if (value === undefined) return undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return this.fail(key, 'a JSON object');
    return value as Record<string, Json>;
  }
}

export const ABSOLUTE_PATH = /^\/[^\s"'\\$`]*$/;
