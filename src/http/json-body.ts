/**
 * Decoding the JSON form of a store: {"data": base64, "policy": name|number, "labels": {..}}.
 * Bytes follow protojson: standard or URL-safe base64, padded or not.
 */
import { invalidArgument } from '../errors/errors.js';
import { type LabelLimits, encodeLabels } from '../blob/labels.js';
import { type Policy, parsePolicy } from '../blob/policy.js';
import { decodeBase64 } from './base64.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface StoreRequest {
  data: Buffer;
  policy: Policy;
  labels: Buffer;
}

export function parseStoreJson(body: Buffer, fallbackPolicy: unknown, limits: LabelLimits): StoreRequest {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw invalidArgument('request body is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`request body is not valid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidArgument('request body must be a JSON object with a "data" field');
  }
  const fields = parsed as Record<string, unknown>;
  if (fields.data === undefined || fields.data === null) throw invalidArgument('"data" is required (base64 bytes)');
  if (typeof fields.data !== 'string') throw invalidArgument('"data" must be a base64 string');
  return {
    data: decodeBase64(fields.data, '"data"'),
    policy: parsePolicy(fields.policy ?? fallbackPolicy),
    labels: encodeLabels(fields.labels, limits),
  };
}
