/**
 * gRPC's side of the error catalog: every error a handler throws becomes a status with the
 * catalog's gRPC code and message (unknown failures: INTERNAL without details, logged here).
 */
import { Metadata, type ServerErrorResponse } from '@grpc/grpc-js';
import { invalidArgument, toBlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { requestId } from '../log/request-id.js';
import { MalformedMessage } from '../proto/loader.js';
import type { BlobService } from '../service/blob-service.js';

/**
 * The status of a failed call. A server failure is logged with a request id (the caller's
 * `x-request-id` metadata, or a new one), which travels back as trailing metadata `x-request-id`.
 */
export function toStatus(error: unknown, method: string, log: Logger, request?: Metadata): ServerErrorResponse {
  const err = toBlobstoreError(error);
  let metadata: Metadata | undefined;
  if (err.logged) {
    const cause = err.cause === undefined ? '' : `: ${(err.cause as Error).message ?? String(err.cause)}`;
    const sent = request?.get('x-request-id')[0];
    const reqId = requestId(typeof sent === 'string' ? sent : undefined);
    log.error({ reqId, method, grpcCode: err.grpcCode, err: err.cause ?? err }, `gRPC ${method}: ${err.message}${cause}`);
    metadata = new Metadata();
    metadata.set('x-request-id', reqId);
  }
  if (err.headers) {
    // Retry-After (503) travels as trailing metadata `retry-after`.
    metadata ??= new Metadata();
    for (const [key, value] of Object.entries(err.headers)) metadata.set(key.toLowerCase(), value);
  }
  return Object.assign(new Error(err.message), { code: err.grpcCode, details: err.message, metadata });
}

/** What counts a blob request's failure (BlobService.recordFailure). */
type FailureCounter = Pick<BlobService, 'recordFailure'>;

const OPERATION_OF: Readonly<Record<string, Parameters<BlobService['recordFailure']>[0]>> = {
  Put: 'put', PutStream: 'put', Get: 'get', GetStream: 'get', Stat: 'stat', Delete: 'delete', List: 'list',
};

/**
 * The status of a failed BlobService call, the failure counted in the node's metrics as HTTP's
 * are: a bad argument, a credential refused and a full upload slot as well as what failed inside
 * the service (counted once, whichever layer saw it first).
 */
export function blobCallStatus(counter: FailureCounter, error: unknown, method: string, log: Logger, request?: Metadata): ServerErrorResponse {
  const op = OPERATION_OF[method];
  if (op !== undefined) counter.recordFailure(op, error);
  return toStatus(error, method, log, request);
}

/** The raw `authorization` metadata value ('' when absent), for Gate.check. */
export function authorization(metadata: Metadata): string {
  const value = metadata.get('authorization')[0];
  return value === undefined ? '' : typeof value === 'string' ? value : value.toString('latin1');
}

/** The request, or INVALID_ARGUMENT when it did not decode. */
export function wellFormed<T>(message: T | MalformedMessage): T {
  if (message instanceof MalformedMessage) throw invalidArgument(message.problem);
  return message;
}
