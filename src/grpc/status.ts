/**
 * gRPC's side of the error catalog: every error a handler throws becomes a status with the
 * catalog's gRPC code and message (unknown failures: INTERNAL without details, logged here).
 */
import { Metadata, type ServerErrorResponse } from '@grpc/grpc-js';
import { invalidArgument, toBlobstoreError } from '../errors/errors.js';
import { MalformedMessage } from './proto.js';

export function toStatus(error: unknown, method: string): ServerErrorResponse {
  const err = toBlobstoreError(error);
  if (err.logged) {
    const cause = err.cause === undefined ? '' : `: ${(err.cause as Error).message ?? String(err.cause)}`;
    console.error(`blobstore: gRPC ${method}: ${err.message}${cause}`);
  }
  let metadata: Metadata | undefined;
  if (err.headers) {
    // Retry-After (503) travels as trailing metadata `retry-after`.
    metadata = new Metadata();
    for (const [key, value] of Object.entries(err.headers)) metadata.set(key.toLowerCase(), value);
  }
  return Object.assign(new Error(err.message), { code: err.grpcCode, details: err.message, metadata });
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
