/**
 * Request header names the hot paths read, as bytes: uWS takes a name given as a string by
 * converting it to UTF-8 on every getHeader call, and one given as bytes as it is. (The value it
 * answers is a new string either way.)
 */
const name = (lowerCase: string): Buffer => Buffer.from(lowerCase, 'latin1');

export const AUTHORIZATION = name('authorization');
export const CONTENT_LENGTH = name('content-length');
export const CONTENT_TYPE = name('content-type');
export const IF_NONE_MATCH = name('if-none-match');
export const RANGE = name('range');
export const TRACEPARENT = name('traceparent');
export const TRANSFER_ENCODING = name('transfer-encoding');
export const X_BLOBSTORE_LABELS = name('x-blobstore-labels');
export const X_BLOBSTORE_POLICY = name('x-blobstore-policy');
export const X_BLOBSTORE_SIZE = name('x-blobstore-size');
