import type { Command } from 'commander';
import { ConfigError, coerce } from '../config/load.js';
import { configFilePath } from '../config/paths.js';
import { readFileIfExists, withFileLock, writeFileAtomic } from './atomic-file.js';
import { isTypedSection, knownKey } from './config-schema.js';
import { failure, usageError } from './errors.js';
import { print, printError } from './output.js';

/**
 * `blobstore config set <key> --value <v>`: one key of the config file the node, the orders service
 * and deploy read ($BLOBSTORE_CONFIG, else $XDG_CONFIG_HOME/blobstore/config.json). Keys are dot
 * paths of two or more segments; objects on the way are created. The file is replaced atomically
 * (temp file, fsync, rename) with mode 0600, under a lock so concurrent runs lose no update.
 */

const KEY = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+$/;
/** Segments that would reach Object.prototype when assigned. */
const RESERVED = new Set(['__proto__', 'prototype', 'constructor']);

export function registerConfigSet(program: Command): void {
  const config = program.command('config').description('read and write the blobstore config file');
  config
    .command('set')
    .description('store one key of the config file (typed where the key is known: node.*, orders.*, stacks.<name>.*)')
    .argument('<key>', 'dot-notation key of two or more segments of [A-Za-z0-9_-], e.g. node.listMaxLimit or stacks.dev.nodes')
    .requiredOption('--value <value>', 'value to store (numbers and booleans keep their type where the key is known)')
    .addHelpText('after', `
Examples:
  blobstore config set node.listMaxLimit --value 500
  blobstore config set stacks.prod.nodes --value 5
  blobstore config set orders.OrdersAddr --value 127.0.0.1:9000`)
    .action(async (key: string, opts: { value: string }) => {
      const path = configFilePath();
      const { segments, value } = parseAssignment(key, opts.value);
      await withFileLock(path, () => {
        const file = readConfig(path);
        setPath(file, segments);
        assign(file, segments, value);
        writeFileAtomic(path, JSON.stringify(file, null, 2) + '\n');
      });
      print(`${key} = ${JSON.stringify(value)} (${path})`);
    });
}

/** Validates key and value before any file is touched (usage errors, exit 2). */
export function parseAssignment(key: string, raw: string): { segments: string[]; value: unknown } {
  if (!KEY.test(key)) {
    throw usageError(`invalid key "${key}": use two or more dot-separated segments of letters, digits, "_" or "-" (e.g. node.listMaxLimit)`);
  }
  const segments = key.split('.');
  const reserved = segments.find((s) => RESERVED.has(s));
  if (reserved) throw usageError(`invalid key "${key}": "${reserved}" is reserved`);
  const known = knownKey(segments);
  if (!known) {
    if (isTypedSection(segments)) printError(`note: ${key} is not a known ${segments[0]} setting; stored as a string`);
    return { segments, value: raw };
  }
  try {
    return { segments, value: coerce(key, known.spec, raw, 'command line') };
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
}

function readConfig(path: string): Record<string, unknown> {
  const text = readFileIfExists(path);
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw failure(`config file ${path} is not valid JSON (${(err as Error).message}); fix or remove it first`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw failure(`config file ${path} must hold a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/** Creates the objects along the path; refuses to replace a value that is not an object. */
function setPath(file: Record<string, unknown>, segments: readonly string[]): void {
  let node = file;
  for (let i = 0; i < segments.length - 1; i++) {
    const segment = segments[i]!;
    const next = node[segment];
    if (next === undefined) node[segment] = {};
    else if (next === null || typeof next !== 'object' || Array.isArray(next)) {
      throw failure(`cannot set ${segments.join('.')}: ${segments.slice(0, i + 1).join('.')} holds ${JSON.stringify(next)}, not an object`);
    }
    node = node[segment] as Record<string, unknown>;
  }
}

function assign(file: Record<string, unknown>, segments: readonly string[], value: unknown): void {
  let node = file;
  for (const segment of segments.slice(0, -1)) node = node[segment] as Record<string, unknown>;
  node[segments[segments.length - 1]!] = value;
}
