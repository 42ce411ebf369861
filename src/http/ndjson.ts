/**
 * Newline-delimited JSON, as grpc-gateway frames streams over HTTP: one message per line. Lines
 * are split from the body as it arrives; a line longer than `maxLineBytes` is refused (413) before
 * it is buffered, so a stream never holds more than one message.
 */
import { invalidArgument, payloadTooLarge } from '../errors/errors.js';

const NEWLINE = 0x0a;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export class LineSplitter {
  private pending = Buffer.allocUnsafe(0);
  private pendingLength = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** Calls `onLine` for every whole line in `bytes` (valid only during the call). */
  push(input: Uint8Array, onLine: (line: Uint8Array) => void): void {
    // Buffer's indexOf is memchr; Uint8Array's is an element-by-element loop.
    const bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    let at = 0;
    while (at < bytes.length) {
      const nl = bytes.indexOf(NEWLINE, at);
      if (nl < 0) {
        this.keep(bytes.subarray(at));
        return;
      }
      if (this.pendingLength === 0) {
        onLine(bytes.subarray(at, nl));
      } else {
        this.keep(bytes.subarray(at, nl));
        const line = this.pending.subarray(0, this.pendingLength);
        this.pendingLength = 0;
        onLine(line);
      }
      at = nl + 1;
    }
  }

  /** At the end of the body: a last line without a newline is still a message. */
  end(onLine: (line: Uint8Array) => void): void {
    if (this.pendingLength === 0) return;
    const line = this.pending.subarray(0, this.pendingLength);
    this.pendingLength = 0;
    onLine(line);
  }

  private keep(part: Uint8Array): void {
    const need = this.pendingLength + part.length;
    if (need > this.maxLineBytes) throw payloadTooLarge(`stream message longer than ${this.maxLineBytes} bytes`);
    if (need > this.pending.length) {
      const grown = Buffer.allocUnsafe(Math.min(Math.max(need, this.pending.length * 2, 64 * 1024), this.maxLineBytes));
      this.pending.copy(grown, 0, 0, this.pendingLength);
      this.pending = grown;
    }
    this.pending.set(part, this.pendingLength);
    this.pendingLength = need;
  }
}

/** One message: a JSON object (blank lines are skipped by the caller). */
export function parseMessage(line: Uint8Array, what: string): Record<string, unknown> {
  let text: string;
  try {
    text = utf8.decode(line);
  } catch {
    throw invalidArgument(`${what} is not valid UTF-8`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`${what} is not valid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidArgument(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

/** True for a line of only whitespace. */
export function isBlank(line: Uint8Array): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}
