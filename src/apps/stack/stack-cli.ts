import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config/load.js';
import { configFilePath } from '../../config/paths.js';
import { REGIONS, type Region, STACK_NAME, type StackDefinition, isRegion, resolveStack } from './settings.js';
import { readFileIfExists } from '../../cli/atomic-file.js';
import { usageError } from '../../cli/errors.js';

/** Argument checks and output helpers shared by deploy, status and down. */

export function parseRegion(raw: string | undefined): Region {
  if (raw === undefined) throw usageError(`missing --region: one of ${REGIONS.join(', ')}`);
  if (!isRegion(raw)) throw usageError(`unknown region "${raw}": one of ${REGIONS.join(', ')}`);
  return raw;
}

export function parseStackName(name: string): string {
  if (!STACK_NAME.test(name)) throw usageError(`invalid stack name "${name}": 1-64 letters, digits, "_" or "-"`);
  return name;
}

/** The stack definition and the config file it came from; a bad or unknown one is a usage error (exit 2). */
export function loadStack(name: string): { stack: StackDefinition; file: Record<string, unknown> } {
  parseStackName(name);
  const path = configFilePath();
  const text = readFileIfExists(path);
  let file: Record<string, unknown> = {};
  try {
    if (text !== undefined && text.trim() !== '') file = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw usageError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  try {
    return { stack: resolveStack(name, file, path), file };
  } catch (err) {
    if (err instanceof ConfigError) throw usageError(err.message);
    throw err;
  }
}

/** A progress line on stderr: rewritten in place on a terminal, one line per change otherwise. */
export function progressPrinter(label: string): (healthy: number, total: number, pending: readonly string[]) => void {
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  let last = -1;
  return (healthy, total, pending) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const text = `${label} ${total} services: ${healthy}/${total} healthy${pending.length ? ` (waiting: ${pending.join(', ')})` : ''} ${seconds} s`;
    if (tty) {
      process.stderr.write(`\r\x1b[K${text}${healthy === total ? '\n' : ''}`);
    } else if (healthy !== last) {
      process.stderr.write(text + '\n');
    }
    last = healthy;
  };
}

export function logTail(path: string, lines = 15): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
