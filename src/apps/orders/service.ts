import type { Logger } from '../../log/logger.js';
import { REQUEST_ID_HEADER, requestId } from '../../log/request-id.js';
import { docsPage } from '../../openapi/docs-page.js';
import { ordersApiDocument } from './openapi.js';
import { packageVersion } from '../../version.js';
import type { ApiKeys } from './auth.js';
import { OrdersHttpError, RequestValidationError, bodyParseFailed, notFound } from './errors.js';
import { BodyParseError, JsonDecodeError, decodeJsonBytes, parsePyJson } from '../../util/json-parse.js';
import { writePyJson } from './json-write.js';
import { type RequestBody, validateCreateOrder, validateListQuery, validateOrderId } from './model.js';
import { OPEN_ROUTES, type RouteName, matchRoute, parseQuery, percentDecode } from './routes.js';
import type { Order, OrderStore } from './store.js';

/**
 * The orders API's handlers, independent of the HTTP library: the transport (server.ts) decodes a
 * request into an OrdersRequest, calls `prepare` (routing, authentication: nothing read yet), reads
 * the body only for the route that takes one, calls `respond`, and writes what comes back.
 */

export interface OrdersRequest {
  readonly method: string;
  /** Raw path, without the query. */
  readonly path: string;
  readonly query: string;
  readonly authorization: string;
  /** Undefined when the header is absent. */
  readonly contentType: string | undefined;
  readonly host: string;
}

export interface OrdersResponse {
  readonly status: number;
  readonly body: string;
  /** application/json unless given. */
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export type Prepared =
  | { readonly kind: 'done'; readonly response: OrdersResponse }
  | { readonly kind: 'route'; readonly name: RouteName; readonly orderId: string; readonly needsBody: boolean };

export interface OrdersServiceOptions {
  /** Undefined: no keys configured, the API is open. */
  readonly keys: ApiKeys | undefined;
  /** Unexpected failures (500) are logged here with a request id. */
  readonly log: Logger;
}

const HEALTHY: OrdersResponse = { status: 200, body: '{"status":"ok"}' };
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export class OrdersService {
  constructor(
    private readonly store: OrderStore,
    private readonly options: OrdersServiceOptions,
  ) {
    const doc = ordersApiDocument({ auth: options.keys !== undefined, version: packageVersion() });
    this.docs = {
      json: { status: 200, body: writePyJson(doc) },
      page: { status: 200, body: docsPage(doc), contentType: 'text/html; charset=utf-8' },
    };
  }

  /** The OpenAPI document (/openapi.json) and its page (/docs), rendered once. */
  private readonly docs: { json: OrdersResponse; page: OrdersResponse };

  /** The answer to a failure (errorResponse with this service's logger). */
  readonly failed = (err: unknown): OrdersResponse => errorResponse(err, this.options.log);

  prepare(req: OrdersRequest): Prepared {
    try {
      const match = matchRoute(req.method, percentDecode(req.path));
      if (match.kind === 'redirect') {
        const query = req.query ? `?${req.query}` : '';
        const location = `http://${req.host}${match.path}${query}`;
        return { kind: 'done', response: { status: 307, body: '', headers: { Location: location } } };
      }
      if (!OPEN_ROUTES.has(match.name) && this.options.keys) {
        const writes = match.name === 'create' || match.name === 'cancel';
        this.options.keys.authorize(req.authorization, writes, Date.now());
      }
      return { kind: 'route', name: match.name, orderId: match.orderId, needsBody: match.name === 'create' };
    } catch (err) {
      return { kind: 'done', response: this.failed(err) };
    }
  }

  respond(route: Prepared & { kind: 'route' }, req: OrdersRequest, body: Uint8Array | undefined): OrdersResponse | Promise<OrdersResponse> {
    try {
      switch (route.name) {
        case 'health': return HEALTHY;
        case 'openapi': return this.docs.json;
        case 'docs': return this.docs.page;
        case 'list': return this.list(req.query);
        case 'get': return this.get(route.orderId);
        case 'create': return this.create(readBody(body, req.contentType)).catch(this.failed);
        case 'cancel': return this.cancel(route.orderId).catch(this.failed);
      }
    } catch (err) {
      return this.failed(err);
    }
  }

  private list(query: string): OrdersResponse {
    const checked = validateListQuery(parseQuery(query));
    if (!checked.ok) throw new RequestValidationError(checked.errors);
    const { status, limit } = checked.value;
    // The page is as long as what exists, whatever the limit: no more ids than safe integers.
    const orders = this.store.list(status, limit > MAX_SAFE ? Number.MAX_SAFE_INTEGER : Number(limit)).map(orderJson).join(',');
    return { status: 200, body: `{"status":${JSON.stringify(status)},"limit":${limit},"orders":[${orders}]}` };
  }

  private get(rawId: string): OrdersResponse {
    const order = this.store.get(storeId(rawId));
    if (order === undefined) throw notFound();
    return { status: 200, body: orderJson(order) };
  }

  private async create(body: RequestBody): Promise<OrdersResponse> {
    const checked = validateCreateOrder(body);
    if (!checked.ok) throw new RequestValidationError(checked.errors);
    const order = await this.store.create(checked.value);
    return { status: 200, body: orderJson(order) };
  }

  private async cancel(rawId: string): Promise<OrdersResponse> {
    const order = await this.store.cancel(storeId(rawId));
    if (order === undefined) throw notFound();
    return { status: 200, body: `{"id":${order.id},"status":${JSON.stringify(order.status)}}` };
  }
}

/** A validated order_id as a store key; ids beyond the safe integers cannot exist (404). */
function storeId(rawId: string): number {
  const checked = validateOrderId(rawId);
  if (!checked.ok) throw new RequestValidationError(checked.errors);
  const id = checked.value;
  return id >= 1n && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : 0;
}

function orderJson(order: Order): string {
  return `{"id":${order.id},"amount":${order.amount},"currency":${JSON.stringify(order.currency)},"status":${JSON.stringify(order.status)}}`;
}

/**
 * fastapi/routing.py get_request_handler (FastAPI 0.141.1, c3f316b7): an empty body is no body;
 * a JSON content type (application/json or application/*+json, parsed like email.message) gets
 * json.loads; any other or no content type leaves the raw bytes for validation
 * (strict_content_type, FastAPI >= 0.132).
 */
function readBody(bytes: Uint8Array | undefined, contentType: string | undefined): RequestBody {
  if (bytes === undefined || bytes.length === 0) return { kind: 'none' };
  if (!isJsonContentType(contentType)) {
    return { kind: 'bytes', text: new TextDecoder('utf-8').decode(bytes) };
  }
  try {
    return { kind: 'json', value: parsePyJson(decodeJsonBytes(bytes)) };
  } catch (err) {
    if (err instanceof JsonDecodeError) {
      throw new RequestValidationError([
        { type: 'json_invalid', loc: ['body', err.pos], msg: 'JSON decode error', input: {}, ctx: { error: err.message } },
      ]);
    }
    if (err instanceof BodyParseError) throw bodyParseFailed();
    throw err;
  }
}

function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const type = header.split(';', 1)[0]!.trim().toLowerCase();
  const parts = type.split('/');
  if (parts.length !== 2 || parts[0] !== 'application') return false;
  return parts[1] === 'json' || parts[1]!.endsWith('+json');
}

/**
 * The one place errors become responses; anything unexpected is a 500 without details, logged with
 * a request id that the answer carries in X-Request-Id.
 */
export function errorResponse(err: unknown, log: Logger): OrdersResponse {
  if (err instanceof RequestValidationError) {
    return { status: 422, body: `{"detail":${writePyJson(err.errors)}}` };
  }
  if (err instanceof OrdersHttpError) {
    return { status: err.status, body: `{"detail":${JSON.stringify(err.detail)}}`, headers: err.headers };
  }
  const reqId = requestId();
  log.error({ reqId, err }, `unexpected error: ${(err as Error)?.message ?? String(err)}`);
  return { status: 500, body: '{"detail":"Internal Server Error"}', headers: { [REQUEST_ID_HEADER]: reqId } };
}
