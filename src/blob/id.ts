import { invalidArgument } from '../errors/errors.js';
import { ID_BYTES } from '../hash/blake3.js';

/** Variant B's id: lower-case hex only (the interface spec), as every answer writes it. */
export const LOWER_HEX_ID = /^[0-9a-f]{32}$/;
/** Variant A reads hex in either case (besides base64). */
export const HEX_ID = /^[0-9a-fA-F]{32}$/;

/**
 * Whether `text` is 32 lower-case hex characters: LOWER_HEX_ID by hand, for the cached GET (a
 * RegExp test there took ~1.5% of a GET load's samples: the builtin's call more than the match).
 */
export function isLowerHexId(text: string): boolean {
  if (text.length !== 32) return false;
  for (let i = 0; i < 32; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}

/** Parses a variant-B path id (exactly 32 lower-case hex characters) into 16 bytes. */
export function parseBlobId(text: string | undefined): Buffer {
  if (text === undefined || text === '') throw invalidArgument('invalid blob ID: missing or empty');
  if (!LOWER_HEX_ID.test(text)) {
    throw invalidArgument(`invalid blob ID ${JSON.stringify(text.slice(0, 80))}: expected 32 lower-case hex characters (16 bytes)`);
  }
  return Buffer.from(text, 'hex');
}

/**
 * A list prefix in variant B: lower-case hex, as ids are read (one longer than an id matches
 * nothing); variant A also takes upper case (read as lower case).
 */
export function parseIdPrefix(text: string, lowerCaseOnly: boolean): string {
  if (!(lowerCaseOnly ? /^[0-9a-f]*$/ : /^[0-9a-fA-F]*$/).test(text)) {
    throw invalidArgument(`invalid prefix ${JSON.stringify(text.slice(0, 80))}: expected ${lowerCaseOnly ? 'lower-case ' : ''}hex characters`);
  }
  return text.toLowerCase();
}

export function formatBlobId(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, ID_BYTES).toString('hex');
}

/** The blob ID of a content digest: its first 16 bytes (a view, not a copy). */
export function idOfDigest(digest: Buffer): Buffer {
  return digest.subarray(0, ID_BYTES);
}

/** A blob id given as bytes (gRPC, variant A JSON): exactly 16 of them. */
export function blobIdFromBytes(bytes: Uint8Array | undefined | null): Buffer {
  if (!bytes || bytes.length === 0) throw invalidArgument('invalid blob ID: missing or empty');
  if (bytes.length !== ID_BYTES) throw invalidArgument(`invalid blob ID: ${bytes.length} bytes, expected 16`);
  return Buffer.from(bytes);
}

const BASE64_ID = /^[A-Za-z0-9+/_-]{22}(==)?$/;

/**
 * A variant-A path id: 32 hex characters, or the 16 bytes in base64 (standard or URL-safe,
 * padded or not; `%2B`, `%2F` and `%3D` arrive percent-decoded).
 */
export function parseBlobIdLiberal(text: string | undefined): Buffer {
  if (text === undefined || text === '') throw invalidArgument('invalid blob ID: missing or empty');
  let decoded = text;
  if (text.includes('%')) {
    try {
      decoded = decodeURIComponent(text);
    } catch {
      throw invalidArgument('invalid blob ID: bad percent-encoding');
    }
  }
  if (HEX_ID.test(decoded)) return Buffer.from(decoded, 'hex');
  if (BASE64_ID.test(decoded)) {
    const bytes = Buffer.from(decoded, 'base64');
    if (bytes.length === ID_BYTES) return bytes;
  }
  throw invalidArgument(
    `invalid blob ID ${JSON.stringify(decoded.slice(0, 80))}: expected 16 bytes as 32 hex characters or base64`,
  );
}
