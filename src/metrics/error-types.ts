/**
 * The values of the `type` label of blobstore_errors_total: which part of the system an error
 * points at. The spec names `storage` and `network`; the rest split what a user of the metrics
 * would want to tell apart (an alert on `storage` must not fire on clients sending bad ids).
 *
 *   storage     the local backend failed (I/O error, index failure): 500; or the disk is full: 507
 *   network     a peer or a connection failed (refused, reset, timed out at the socket; a 503
 *               because peers could not be reached or did not answer)
 *   corruption  a stored copy failed its checksum (never served)
 *   client      the request was wrong: 400, 404, 409, 412, 413, 415, 501
 *   auth        401, 403
 *   timeout     408 (a body that stalled), 504-style deadlines
 *   overload    503 without a failing backend or peer: too many uploads in flight (Retry-After)
 *   cancelled   the client went away before its answer was complete (a download closed early, a
 *               cancelled gRPC call): no failure of the node, and not a request failure
 */
import { ClientGone } from '../errors/client-gone.js';
import type { BlobstoreError } from '../errors/errors.js';

export const ERROR_TYPES = ['storage', 'network', 'corruption', 'client', 'auth', 'timeout', 'overload', 'cancelled'] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

/** Index of each type in ERROR_TYPES (the series of errors_total). */
export const ErrorTypeIndex: Readonly<Record<ErrorType, number>> = Object.freeze(
  Object.fromEntries(ERROR_TYPES.map((t, i) => [t, i])) as Record<ErrorType, number>,
);

/** errno codes of a failing connection rather than a failing disk. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

function causeCode(err: BlobstoreError): string | undefined {
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The errors_total series an error counts in. Allocates nothing. */
export function errorTypeIndex(err: BlobstoreError): number {
  switch (err.kind) {
    case 'corruption':
      return ErrorTypeIndex.corruption;
    case 'unauthenticated':
    case 'permission_denied':
      return ErrorTypeIndex.auth;
    case 'request_timeout':
      return ErrorTypeIndex.timeout;
    case 'insufficient_storage':
      return ErrorTypeIndex.storage;
    case 'internal': {
      // toBlobstoreError wraps a ClientGone (thrown into a read whose client left) as internal.
      if (err.cause instanceof ClientGone) return ErrorTypeIndex.cancelled;
      const code = causeCode(err);
      return code !== undefined && NETWORK_CODES.has(code) ? ErrorTypeIndex.network : ErrorTypeIndex.storage;
    }
    case 'unavailable': {
      if (err.peer) return ErrorTypeIndex.network;
      // Disk full carries its ENOSPC cause; an unreachable peer its socket error; overload neither.
      const code = causeCode(err);
      if (code === undefined) return ErrorTypeIndex.overload;
      return NETWORK_CODES.has(code) ? ErrorTypeIndex.network : ErrorTypeIndex.storage;
    }
    default:
      return ErrorTypeIndex.client;
  }
}
