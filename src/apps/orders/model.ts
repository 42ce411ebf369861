import { isIso4217 } from './currencies.js';
import type { PyJson } from '../../util/json-parse.js';
import {
  type Checked, type ErrorItem, I64_MAX, MISSING, at, greaterThan, greaterThanEqual, lessThanEqual, maxLength,
  validateInt, validateStr, valueError,
} from './pydantic.js';

/**
 * The orders API's request model, written as the FastAPI/pydantic declaration it mirrors:
 *
 *   class CreateOrderBody(BaseModel):
 *       amount: Annotated[int, Field(gt=0, le=2**63 - 1)]
 *       currency: str                      # + field_validator: a known ISO 4217 code
 *       note: Annotated[str, Field(max_length=1000)] | None = None
 *
 *   GET /orders?status: str = "paid"&limit: Annotated[int, Query(ge=1)] = 20
 *   GET|DELETE /orders/{order_id: Annotated[int, Path(le=2**63 - 1)]}
 *
 * Every failing field is reported, in declaration order, like pydantic.
 */

export const NOTE_MAX_CHARS = 1000;
export const LIST_DEFAULT_STATUS = 'paid';
export const LIST_DEFAULT_LIMIT = 20n;

export interface CreateOrder {
  /** Positive, at most 2^63-1; exact (bigint). */
  readonly amount: bigint;
  readonly currency: string;
  readonly note: string | null;
}

/** The request body as FastAPI hands it to validation. */
export type RequestBody =
  | { readonly kind: 'none' }
  | { readonly kind: 'json'; readonly value: PyJson }
  /** A body without a JSON content type: FastAPI validates the raw bytes (shown decoded). */
  | { readonly kind: 'bytes'; readonly text: string };

export type Validated<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: ErrorItem[] };

const BODY: readonly string[] = ['body'];

export function validateCreateOrder(body: RequestBody): Validated<CreateOrder> {
  // FastAPI: an absent body (or JSON null) is one `missing` item at ["body"] with input null.
  if (body.kind === 'none' || (body.kind === 'json' && body.value === null)) {
    return { ok: false, errors: [at(BODY, null, MISSING)] };
  }
  const input = body.kind === 'json' ? body.value : body.text;
  if (!(input instanceof Map)) {
    const failure = { type: 'model_attributes_type', msg: 'Input should be a valid dictionary or object to extract fields from' };
    return { ok: false, errors: [at(BODY, input, failure)] };
  }
  const errors: ErrorItem[] = [];
  const field = <T>(name: string, check: (v: PyJson) => Checked<T>, fallback?: T): T | undefined => {
    if (!input.has(name)) {
      if (fallback === undefined) errors.push(at([...BODY, name], input, MISSING));
      return fallback;
    }
    const value = input.get(name)!;
    const result = check(value);
    if (result.ok) return result.value;
    errors.push(at([...BODY, name], value, result.failure));
    return undefined;
  };
  const amount = field('amount', checkAmount);
  const currency = field('currency', checkCurrency);
  const note = field<string | null>('note', checkNote, null);
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { amount: amount!, currency: currency!, note: note ?? null } };
}

function checkAmount(value: PyJson): Checked<bigint> {
  const n = validateInt(value);
  if (!n.ok) return n;
  const positive = greaterThan(n.value, 0n);
  return positive.ok ? lessThanEqual(n.value, I64_MAX) : positive;
}

function checkCurrency(value: PyJson): Checked<string> {
  const s = validateStr(value);
  if (!s.ok) return s;
  return isIso4217(s.value) ? s : valueError(`currency must be an ISO 4217 code such as USD or EUR, got ${pyRepr(s.value)}`);
}

function checkNote(value: PyJson): Checked<string | null> {
  if (value === null) return { ok: true, value: null };
  const s = validateStr(value);
  return s.ok ? maxLength(s.value, NOTE_MAX_CHARS) : s;
}

/** Python's repr of a short str, as a ValueError message would show it. */
function pyRepr(s: string): string {
  const shown = s.length > 20 ? s.slice(0, 20) + '...' : s;
  return shown.includes("'") && !shown.includes('"') ? `"${shown}"` : `'${shown.replaceAll("'", "\\'")}'`;
}

/** `order_id` path parameter. */
export function validateOrderId(raw: string): Validated<bigint> {
  const n = validateInt(raw);
  const checked = n.ok ? lessThanEqual(n.value, I64_MAX) : n;
  return checked.ok ? checked : { ok: false, errors: [at(['path', 'order_id'], raw, checked.failure)] };
}

export interface ListQuery {
  readonly status: string;
  /**
   * The limit as given, echoed exactly: any positive integer (the spec), even one beyond a JS
   * number's exact range. The page holds at most this many orders, and never more than exist.
   */
  readonly limit: bigint;
}

/** `status` and `limit` query parameters; the last of repeated values wins, as in Starlette. */
export function validateListQuery(query: ReadonlyMap<string, string>): Validated<ListQuery> {
  const status = query.get('status') ?? LIST_DEFAULT_STATUS;
  const rawLimit = query.get('limit');
  if (rawLimit === undefined) return { ok: true, value: { status, limit: LIST_DEFAULT_LIMIT } };
  const n = validateInt(rawLimit);
  const checked = n.ok ? greaterThanEqual(n.value, 1n) : n;
  if (!checked.ok) return { ok: false, errors: [at(['query', 'limit'], rawLimit, checked.failure)] };
  return { ok: true, value: { status, limit: checked.value } };
}
