/**
 * Single byte ranges of a raw GET (RFC 9110 §14): `bytes=a-b`, `bytes=a-`, `bytes=-n`. A header
 * that is not a single well-formed byte range is ignored (the whole blob is sent, as the RFC
 * allows); a range that starts past the end is 416 with a `Content-Range` of `bytes *\/size`. If-Range
 * with another entity tag also sends the whole blob.
 */
import { BlobstoreError } from '../errors/errors.js';
import type { ByteRange } from '../service/local-store.js';

export type { ByteRange } from '../service/local-store.js';

const SINGLE = /^bytes=(\d{0,16})-(\d{0,16})$/;

export function parseRange(header: string, ifRange: string, etag: string, size: number): ByteRange | undefined {
  if (header === '') return undefined;
  if (ifRange !== '' && ifRange.trim() !== etag) return undefined;
  const m = SINGLE.exec(header.trim().replace(/\s+/g, ''));
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) throw unsatisfiable(size);
    start = Math.max(size - suffix, 0);
    end = size;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size : Math.min(Number(m[2]) + 1, size);
    if (m[2] !== '' && Number(m[2]) < start) return undefined;
  }
  if (start >= size) throw unsatisfiable(size);
  return { start, end };
}

function unsatisfiable(size: number): BlobstoreError {
  return new BlobstoreError('range_not_satisfiable', `range not satisfiable: the blob has ${size} bytes`, {
    headers: { 'Content-Range': `bytes */${size}` },
  });
}
