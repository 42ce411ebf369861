/**
 * The status line of every HTTP answer (the blob API, the metrics listener, the orders app):
 * "404 Not Found". The reason phrases are Node's own table (node:http STATUS_CODES); each line is
 * built once and then reused, so the hot path does no string work.
 */
import { STATUS_CODES } from 'node:http';

const lines = new Map<number, string>();

export function statusLine(status: number): string {
  let line = lines.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    lines.set(status, line);
  }
  return line;
}
