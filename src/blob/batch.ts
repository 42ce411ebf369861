/**
 * The body of a batch store (`POST /v1/blobs/batch`): many small blobs in one request, so that a
 * client with thousands of small files pays one request, one loopback send and one group commit
 * for many of them instead of one each (docs/adr/0016-batch-store.md).
 *
 *   body  = frame*            (Content-Type: application/vnd.blobstore.batch, Content-Length required)
 *   frame = length(4 bytes, unsigned big-endian) bytes(length)
 *
 * The answer lists the blobs in body order: {"blobs":[{"id":..,"size":..,"created":..}, ...]}.
 * Every blob of the batch takes the request's X-Blobstore-Policy and X-Blobstore-Labels.
 */
export const BATCH_PATH = '/v1/blobs/batch';
export const BATCH_CONTENT_TYPE = 'application/vnd.blobstore.batch';
export const BATCH_FRAME_HEAD_BYTES = 4;

/** Writes the frame head of a blob of `size` bytes at `at` in `into`; returns where its bytes go. */
export function writeFrameHead(into: Uint8Array, at: number, size: number): number {
  new DataView(into.buffer, into.byteOffset, into.byteLength).setUint32(at, size);
  return at + BATCH_FRAME_HEAD_BYTES;
}

/** Why a batch body is not one (a message for a 400), or the blobs' views into it. */
export function splitBatch(body: Uint8Array, maxBlobs: number): Uint8Array[] | string {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const blobs: Uint8Array[] = [];
  let at = 0;
  while (at < body.length) {
    if (blobs.length === maxBlobs) return `more than ${maxBlobs} blobs in one batch`;
    if (at + BATCH_FRAME_HEAD_BYTES > body.length) return `frame ${blobs.length}: its 4-byte length is cut off at byte ${at}`;
    const size = view.getUint32(at);
    at += BATCH_FRAME_HEAD_BYTES;
    if (at + size > body.length) return `frame ${blobs.length}: ${size} bytes announced, ${body.length - at} left in the body`;
    blobs.push(body.subarray(at, at + size));
    at += size;
  }
  if (blobs.length === 0) return 'an empty batch (no frames)';
  return blobs;
}
