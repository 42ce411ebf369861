/**
 * Base64 as protojson reads bytes: standard or URL-safe alphabet, padded or not. Node's decoder
 * skips characters outside the alphabet instead of failing, so validity is checked by length:
 * every skipped character makes the output shorter than the input's length promises. That costs
 * nothing, where a regular expression over a 1.4 MB message costs about a millisecond.
 */
import { invalidArgument } from '../errors/errors.js';

/** Bytes a base64 text of `length` characters (after padding is stripped) decodes to; -1 if none. */
function decodedLength(text: string): { bytes: number; end: number } {
  let end = text.length;
  if (end > 0 && text.charCodeAt(end - 1) === 0x3d) end--;
  if (end > 0 && text.charCodeAt(end - 1) === 0x3d) end--;
  if (end % 4 === 1) return { bytes: -1, end };
  return { bytes: Math.floor((end * 3) / 4), end };
}

/** Decodes `text` into `into` (grown when too small) and returns the bytes as a view of it. */
export function decodeBase64Into(text: string, field: string, into?: Buffer): Buffer {
  const { bytes } = decodedLength(text);
  if (bytes < 0) throw invalidArgument(`${field} is not valid base64`);
  const out = into && into.length >= bytes ? into : Buffer.allocUnsafe(bytes);
  const written = out.write(text, 0, 'base64');
  if (written !== bytes) throw invalidArgument(`${field} is not valid base64`);
  return out.subarray(0, bytes);
}

/** Decodes into a new buffer. */
export function decodeBase64(text: string, field: string): Buffer {
  return decodeBase64Into(text, field);
}
