import { invalidArgument } from '../errors/errors.js';

export interface LabelLimits {
  readonly maxLabels: number;
  readonly labelKeyMaxBytes: number;
  readonly labelValueMaxBytes: number;
}

const KEY = /^[A-Za-z0-9._/-]+$/;
export const NO_LABELS = Buffer.alloc(0);

/**
 * Validates labels (docs/adr/0005-limits.md: at most 64, keys 1-128 bytes of [A-Za-z0-9._/-], values at most
 * 1024 bytes of UTF-8) and returns them as the UTF-8 JSON stored beside the blob.
 */
export function encodeLabels(value: unknown, limits: LabelLimits): Buffer {
  if (value === undefined || value === null) return NO_LABELS;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidArgument('labels must be a JSON object of string values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return NO_LABELS;
  if (entries.length > limits.maxLabels) {
    throw invalidArgument(`too many labels: ${entries.length}, at most ${limits.maxLabels}`);
  }
  for (const [key, val] of entries) {
    if (key.length === 0 || key.length > limits.labelKeyMaxBytes || !KEY.test(key)) {
      throw invalidArgument(
        `invalid label key ${JSON.stringify(key.slice(0, 140))}: 1-${limits.labelKeyMaxBytes} characters of [A-Za-z0-9._/-]`,
      );
    }
    if (typeof val !== 'string') throw invalidArgument(`label ${key}: value must be a string`);
    if (Buffer.byteLength(val, 'utf8') > limits.labelValueMaxBytes) {
      throw invalidArgument(`label ${key}: value longer than ${limits.labelValueMaxBytes} bytes`);
    }
    if (val.isWellFormed && !val.isWellFormed()) throw invalidArgument(`label ${key}: value is not valid UTF-8`);
  }
  return Buffer.from(JSON.stringify(Object.fromEntries(entries)), 'utf8');
}

/** Parses the X-Blobstore-Labels header (a JSON object). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The X-Blobstore-Labels header: `raw` is its value as uWS gives it, a character per byte. Its
 * bytes are UTF-8 (a label "Zürich" sent as is, not only as \u00fc): read as such, or refused.
 */
export function parseLabelsHeader(raw: string, limits: LabelLimits): Buffer {
  if (raw === '') return NO_LABELS;
  let text = raw;
  if (/[^\x00-\x7f]/.test(raw)) {
    try {
      text = UTF8.decode(Buffer.from(raw, 'latin1'));
    } catch {
      throw invalidArgument('X-Blobstore-Labels must be UTF-8');
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument('X-Blobstore-Labels must be a JSON object');
  }
  return encodeLabels(parsed, limits);
}

export function decodeLabels(bytes: Uint8Array): Record<string, string> {
  if (bytes.length === 0) return {};
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('utf8')) as Record<string, string>;
}
