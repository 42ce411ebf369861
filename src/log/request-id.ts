/**
 * Request ids on log lines. A line about one request carries `reqId`, and the failed answer
 * carries the same id back (HTTP header `X-Request-Id`, gRPC trailing metadata `x-request-id`),
 * so an operator can find the line of a failed request. A client's own id (HTTP header
 * `X-Request-Id`, gRPC metadata `x-request-id`) is kept when it is a sane token, and echoed on
 * every answer to its request (src/http/logged-response.ts, src/grpc/access.ts); otherwise a
 * failure's id is a new UUID. Ids are made only when a line is written, never on the hot path.
 */
import { randomUUID } from 'node:crypto';

/** What a client may send as a request id: 1-128 visible ASCII characters without quotes. */
const SANE = /^[!#-~]{1,128}$/;

export function requestId(fromClient?: string): string {
  return fromClient !== undefined && SANE.test(fromClient) ? fromClient : randomUUID();
}

/** `fromClient` when it is a sane id, else '' (an insane one is neither echoed nor logged). */
export function saneRequestId(fromClient: string): string {
  return SANE.test(fromClient) ? fromClient : '';
}

export const REQUEST_ID_HEADER = 'X-Request-Id';
