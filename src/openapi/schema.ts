/** Small helpers to write OpenAPI 3.1 documents as TypeScript objects. */

export type Schema = Record<string, unknown>;
export type Operation = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const json = (schema: Schema): Record<string, { schema: Schema }> => ({ 'application/json': { schema } });

const REASONS: Record<number, string> = {
  400: 'invalid argument (blob id, body, labels, policy, cursor, limit)', 401: 'no valid bearer token', 403: 'the token lacks the scope',
  404: 'not found', 408: 'the request body stalled', 412: 'too few nodes for the policy', 413: 'too large', 415: 'unsupported content type',
  500: 'backend failure (X-Request-Id names the logged failure)', 503: 'overloaded or disk full; retry after Retry-After',
};

/** Error answers in the variant's error shape (components/schemas/Error). */
export function errorResponses(statuses: readonly number[]): Record<number, object> {
  return Object.fromEntries(statuses.map((s) => [s, { description: REASONS[s] ?? 'error', content: json(ref('Error')) }]));
}
