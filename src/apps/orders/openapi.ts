/**
 * The OpenAPI 3.1 document of the orders service, served at GET /openapi.json (and rendered at
 * /docs), shaped the way FastAPI generates one for the reference service: the same schema names
 * (CreateOrderBody, Order, HTTPValidationError, ValidationError), 422 on every operation that
 * validates input. Bearer auth is listed when API keys are configured. Written with writePyJson, as
 * FastAPI's json.dumps would: the amount's bound (2^63 - 1) exactly, not as a double.
 */
import { type Operation, type Schema, json, ref } from '../../openapi/schema.js';
import { I64_MAX } from './pydantic.js';

const detail = (description: string) => ({ description, content: json({ type: 'object', required: ['detail'], properties: { detail: { type: 'string' } } }) });
const validationError = { description: 'Validation Error', content: json(ref('HTTPValidationError')) };
const orderId = { name: 'order_id', in: 'path', required: true, schema: { type: 'integer', title: 'Order Id' } };

function schemas(): Record<string, Schema> {
  return {
    CreateOrderBody: {
      type: 'object', title: 'CreateOrderBody', required: ['amount', 'currency'], additionalProperties: true,
      properties: {
        amount: {
          type: 'integer', title: 'Amount', exclusiveMinimum: 0, maximum: I64_MAX,
          description: 'whole number in the smallest currency unit; as pydantic reads an int, 42.0 and "42" are taken as 42 and 42.5 is rejected',
        },
        currency: { type: 'string', title: 'Currency', description: 'ISO 4217 code', pattern: '^[A-Z]{3}$' },
        note: { anyOf: [{ type: 'string', maxLength: 1000 }, { type: 'null' }], title: 'Note', default: null },
      },
    },
    Order: {
      type: 'object', title: 'Order', required: ['id', 'amount', 'currency', 'status'],
      properties: {
        id: { type: 'integer', title: 'Id' },
        amount: { type: 'integer', title: 'Amount' },
        currency: { type: 'string', title: 'Currency' },
        status: { type: 'string', title: 'Status', enum: ['pending', 'paid', 'canceled'] },
      },
    },
    OrderList: {
      type: 'object', title: 'OrderList', required: ['status', 'limit', 'orders'],
      properties: { status: { type: 'string', title: 'Status' }, limit: { type: 'integer', title: 'Limit' }, orders: { type: 'array', items: ref('Order'), title: 'Orders' } },
    },
    CanceledOrder: {
      type: 'object', title: 'CanceledOrder', required: ['id', 'status'],
      properties: { id: { type: 'integer', title: 'Id' }, status: { type: 'string', const: 'canceled', title: 'Status' } },
    },
    ValidationError: {
      type: 'object', title: 'ValidationError', required: ['loc', 'msg', 'type'],
      properties: {
        loc: { type: 'array', title: 'Location', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
        msg: { type: 'string', title: 'Message' },
        type: { type: 'string', title: 'Error Type' },
        input: { title: 'Input' },
        ctx: { type: 'object', title: 'Context' },
      },
    },
    HTTPValidationError: {
      type: 'object', title: 'HTTPValidationError',
      properties: { detail: { type: 'array', title: 'Detail', items: ref('ValidationError') } },
    },
  };
}

function paths(auth: boolean): Record<string, Record<string, Operation>> {
  const denied = auth ? { 401: detail('missing, wrong or expired API key'), 403: detail('the key may not do this (read-only key on a write)') } : {};
  return {
    '/orders': {
      get: {
        operationId: 'list_orders_orders_get', summary: 'List Orders',
        parameters: [
          { name: 'status', in: 'query', required: false, schema: { type: 'string', default: 'paid', title: 'Status' } },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, default: 20, title: 'Limit' }, description: 'any positive integer; echoed as given; the list holds at most this many orders' },
        ],
        responses: { 200: { description: 'Successful Response', content: json(ref('OrderList')) }, ...denied, 422: validationError },
      },
      post: {
        operationId: 'create_order_orders_post', summary: 'Create Order',
        requestBody: { required: true, content: json(ref('CreateOrderBody')) },
        responses: {
          200: { description: 'Successful Response (status pending)', content: json(ref('Order')) }, ...denied,
          413: detail('the body is over OrdersMaxBodyBytes'), 422: validationError,
        },
      },
    },
    '/orders/{order_id}': {
      get: {
        operationId: 'get_order_orders__order_id__get', summary: 'Get Order', parameters: [orderId],
        responses: { 200: { description: 'Successful Response', content: json(ref('Order')) }, ...denied, 404: detail('Not Found'), 422: validationError },
      },
      delete: {
        operationId: 'cancel_order_orders__order_id__delete', summary: 'Cancel Order', description: 'Sets the status to canceled; not reversible; idempotent.', parameters: [orderId],
        responses: { 200: { description: 'Successful Response', content: json(ref('CanceledOrder')) }, ...denied, 404: detail('Not Found'), 422: validationError },
      },
    },
    '/healthz': {
      get: {
        operationId: 'healthz', summary: 'Readiness (open; not part of the reference API)', security: [],
        responses: { 200: { description: 'ready', content: json({ type: 'object', properties: { status: { type: 'string', const: 'ok' } } }) } },
      },
    },
  };
}

export function ordersApiDocument(options: { auth: boolean; version: string }): object {
  return {
    openapi: '3.1.0',
    info: { title: 'orders', version: options.version, description: 'Create, list, fetch and cancel orders. The document itself is at /openapi.json, a readable page at /docs.' },
    paths: paths(options.auth),
    components: {
      schemas: schemas(),
      ...(options.auth ? { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key of OrdersApiKeysFile (scope read or read-write)' } } } : {}),
    },
    ...(options.auth ? { security: [{ bearer: [] }] } : {}),
  };
}
