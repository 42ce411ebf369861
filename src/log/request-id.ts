/**
 * Request ids on log lines. A line about one request carries `reqId`, and the failed answer
 * carries the same id back (HTTP header `X-Request-Id`, gRPC trailing metadata `x-request-id`),
 * so an operator can find the line of a failed request. gRPC calls keep the id the client sent in
 * `x-request-id` metadata when it is a sane token; otherwise the id is a new UUID. Ids are made
 * only when a line is written, never on the hot path.
 */
import { randomUUID } from 'node:crypto';

/** What a client may send as a request id: 1-128 visible ASCII characters without quotes. */
const SANE = /^[!#-~]{1,128}$/;

export function requestId(fromClient?: string): string {
  return fromClient !== undefined && SANE.test(fromClient) ? fromClient : randomUUID();
}

export const REQUEST_ID_HEADER = 'X-Request-Id';
