/**
 * One error catalog. Every error the service raises is a BlobstoreError with a stable code, the
 * spec's HTTP status and gRPC code, and a message; each transport maps it in one place
 * (src/http/reply.ts errorAnswer for HTTP, src/grpc/status.ts for gRPC). Never throw strings.
 */

/** gRPC status codes (the numbers are part of the wire format). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type ErrorKind =
  | 'invalid_argument'
  | 'unauthenticated'
  | 'permission_denied'
  | 'not_found'
  | 'already_exists'
  | 'failed_precondition'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'request_timeout'
  | 'length_required'
  | 'range_not_satisfiable'
  | 'unavailable'
  | 'insufficient_storage'
  | 'unimplemented'
  | 'internal'
  | 'unfinished_stream'
  | 'corruption';

interface KindInfo {
  readonly status: number;
  readonly grpc: number;
  /** Short form used as `error` in variant B bodies. */
  readonly short: string;
}

const KINDS: Record<ErrorKind, KindInfo> = {
  invalid_argument: { status: 400, grpc: GrpcCode.INVALID_ARGUMENT, short: 'Bad Request' },
  unauthenticated: { status: 401, grpc: GrpcCode.UNAUTHENTICATED, short: 'Unauthorized' },
  permission_denied: { status: 403, grpc: GrpcCode.PERMISSION_DENIED, short: 'Forbidden' },
  not_found: { status: 404, grpc: GrpcCode.NOT_FOUND, short: 'Not Found' },
  already_exists: { status: 409, grpc: GrpcCode.ALREADY_EXISTS, short: 'Conflict' },
  failed_precondition: { status: 412, grpc: GrpcCode.FAILED_PRECONDITION, short: 'Precondition Failed' },
  payload_too_large: { status: 413, grpc: GrpcCode.RESOURCE_EXHAUSTED, short: 'Payload Too Large' },
  length_required: { status: 411, grpc: GrpcCode.INVALID_ARGUMENT, short: 'Length Required' },
  unsupported_media_type: { status: 415, grpc: GrpcCode.INVALID_ARGUMENT, short: 'Unsupported Media Type' },
  range_not_satisfiable: { status: 416, grpc: GrpcCode.OUT_OF_RANGE, short: 'Range Not Satisfiable' },
  request_timeout: { status: 408, grpc: GrpcCode.DEADLINE_EXCEEDED, short: 'Request Timeout' },
  unavailable: { status: 503, grpc: GrpcCode.UNAVAILABLE, short: 'Service Unavailable' },
  // The disk cannot hold the store (RFC 4918 §11.5); nothing of it is written or visible.
  insufficient_storage: { status: 507, grpc: GrpcCode.RESOURCE_EXHAUSTED, short: 'Insufficient Storage' },
  unimplemented: { status: 501, grpc: GrpcCode.UNIMPLEMENTED, short: 'Not Implemented' },
  internal: { status: 500, grpc: GrpcCode.INTERNAL, short: 'Internal Server Error' },
  // A put stream that ended before its final chunk: the spec answers 500 (INTERNAL), but the
  // mistake is the client's, so it is neither logged nor counted as a failing backend.
  unfinished_stream: { status: 500, grpc: GrpcCode.INTERNAL, short: 'Internal Server Error' },
  // A stored copy that fails its checksum: never served, answered as an internal error.
  corruption: { status: 500, grpc: GrpcCode.DATA_LOSS, short: 'Internal Server Error' },
};

export interface ErrorOptions {
  readonly cause?: unknown;
  /** Extra response headers (for example Retry-After on 503). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The failure is a peer's (unreachable, failing or silent), not this node's: counted as `network`. */
  readonly peer?: boolean;
}

export class BlobstoreError extends Error {
  readonly kind: ErrorKind;
  readonly status: number;
  readonly grpcCode: number;
  readonly short: string;
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** A peer failed the request (ErrorOptions.peer). */
  readonly peer: boolean;

  /**
   * Whether each occurrence deserves a log line: a fault of this node (500: a failing backend, a
   * corrupt copy). Overload, a full disk (the engine logs when it fills and when it has room
   * again) and client mistakes are counted in metrics instead of flooding the log.
   */
  get logged(): boolean {
    return this.kind === 'internal' || this.kind === 'corruption';
  }

  constructor(kind: ErrorKind, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const info = KINDS[kind];
    this.name = 'BlobstoreError';
    this.kind = kind;
    this.status = info.status;
    this.grpcCode = info.grpc;
    this.short = info.short;
    this.headers = options.headers;
    this.peer = options.peer === true;
  }
}

export const invalidArgument = (message: string): BlobstoreError => new BlobstoreError('invalid_argument', message);
export const notFound = (message: string): BlobstoreError => new BlobstoreError('not_found', message);
export const payloadTooLarge = (message: string): BlobstoreError => new BlobstoreError('payload_too_large', message);
export const unimplemented = (message: string): BlobstoreError => new BlobstoreError('unimplemented', message);
export const internal = (message: string, cause?: unknown): BlobstoreError =>
  new BlobstoreError('internal', message, { cause });
export const unavailable = (message: string, retryAfterS: number): BlobstoreError =>
  new BlobstoreError('unavailable', message, { headers: { 'Retry-After': String(retryAfterS) } });

/** Wraps anything thrown into a BlobstoreError; unknown failures become 500 without leaking details. */
export function toBlobstoreError(err: unknown): BlobstoreError {
  if (err instanceof BlobstoreError) return err;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new BlobstoreError('insufficient_storage', 'not enough disk space: the storage backend is full', { cause: err });
  }
  return new BlobstoreError('internal', 'storage backend failure', { cause: err });
}
