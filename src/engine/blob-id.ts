import { invalidArgument } from '../errors/errors.js';
import { ID_BYTES } from '../hash/blake3.js';

const HEX_ID = /^[0-9a-f]{32}$/;

/** Parses a variant-B path id (exactly 32 lowercase hex characters) into 16 bytes. */
export function parseBlobId(text: string | undefined): Buffer {
  if (text === undefined || text === '') throw invalidArgument('invalid blob ID: missing or empty');
  if (!HEX_ID.test(text)) {
    throw invalidArgument(`invalid blob ID ${JSON.stringify(text.slice(0, 80))}: expected 32 lowercase hex characters (16 bytes)`);
  }
  return Buffer.from(text, 'hex');
}

export function formatBlobId(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, ID_BYTES).toString('hex');
}

/** The blob ID of a content digest: its first 16 bytes (a view, not a copy). */
export function idOfDigest(digest: Buffer): Buffer {
  return digest.subarray(0, ID_BYTES);
}
