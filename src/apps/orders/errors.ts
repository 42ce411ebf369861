import type { ErrorItem } from './pydantic.js';

/**
 * The orders API's error catalog. FastAPI answers every error as `{"detail": ...}`: a string for
 * HTTP errors (Starlette's HTTPException), the list of pydantic items for 422. Each error is raised
 * as one of these and rendered in one place (server.ts).
 */
export class OrdersHttpError extends Error {
  override readonly name = 'OrdersHttpError';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
  }
}

/** 422: one item per failing field, all at once. */
export class RequestValidationError extends Error {
  override readonly name = 'RequestValidationError';
  constructor(readonly errors: readonly ErrorItem[]) {
    super(`${errors.length} validation error(s)`);
  }
}

const BEARER = { 'WWW-Authenticate': 'Bearer' };

export const notFound = (): OrdersHttpError => new OrdersHttpError(404, 'Not Found');
export const methodNotAllowed = (allow: readonly string[]): OrdersHttpError =>
  new OrdersHttpError(405, 'Method Not Allowed', { Allow: allow.join(', ') });
/** fastapi/security/http.py HTTPBearer (0.141.1): no credential, or another scheme. */
export const notAuthenticated = (): OrdersHttpError => new OrdersHttpError(401, 'Not authenticated', BEARER);
export const invalidCredentials = (): OrdersHttpError => new OrdersHttpError(401, 'Invalid authentication credentials', BEARER);
export const notEnoughPermissions = (): OrdersHttpError => new OrdersHttpError(403, 'Not enough permissions');
/** fastapi/routing.py: a body json.loads fails on other than by a JSONDecodeError. */
export const bodyParseFailed = (): OrdersHttpError => new OrdersHttpError(400, 'There was an error parsing the body');
export const bodyTooLarge = (limitBytes: number): OrdersHttpError =>
  new OrdersHttpError(413, `Request body exceeds ${limitBytes} bytes`);
