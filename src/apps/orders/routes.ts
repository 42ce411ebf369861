import { methodNotAllowed, notFound } from './errors.js';

/**
 * The orders API's routes, matched the way Starlette does: against the percent-decoded path, a
 * `{param}` segment is `[^/]+`, a known path with another method is 405 with `Allow`, and a path
 * that only differs by a trailing slash from a route is redirected (307, redirect_slashes).
 *
 * Two deliberate differences, both for HTTP's sake: GET routes answer HEAD (RFC 9110 section 9.1:
 * general-purpose servers support GET and HEAD; FastAPI's APIRoute, unlike Starlette's Route, does
 * not add HEAD and answers 405), and `Allow` lists every method of the path (RFC 9110 section
 * 10.2.1), where Starlette names only the methods of the first route that matched the path.
 */

export type RouteName = 'list' | 'create' | 'get' | 'cancel' | 'health' | 'openapi' | 'docs';

export type RouteMatch =
  | { readonly kind: 'route'; readonly name: RouteName; readonly orderId: string }
  | { readonly kind: 'redirect'; readonly path: string };

interface PathRoute {
  /** The path as the OpenAPI document writes it (test/openapi checks the two agree). */
  readonly template: string;
  /** Method -> route; HEAD is implied by GET. */
  readonly methods: Readonly<Record<string, RouteName>>;
  readonly allow: readonly string[];
  match(path: string): string | undefined;
}

const ORDERS: PathRoute = {
  template: '/orders',
  methods: { GET: 'list', POST: 'create' },
  allow: ['GET', 'HEAD', 'POST'],
  match: (path) => (path === '/orders' ? '' : undefined),
};

const ORDER: PathRoute = {
  template: '/orders/{order_id}',
  methods: { GET: 'get', DELETE: 'cancel' },
  allow: ['DELETE', 'GET', 'HEAD'],
  match: (path) => {
    if (!path.startsWith('/orders/')) return undefined;
    const id = path.slice('/orders/'.length);
    return id !== '' && !id.includes('/') ? id : undefined;
  },
};

/** Not part of the reference API: the readiness probe `deploy` waits on. Never authenticated. */
const HEALTH: PathRoute = {
  template: '/healthz',
  methods: { GET: 'health' },
  allow: ['GET', 'HEAD'],
  match: (path) => (path === '/healthz' ? '' : undefined),
};

/** The OpenAPI document and its readable page, as FastAPI serves them by default. Never authenticated. */
const OPENAPI: PathRoute = {
  template: '/openapi.json',
  methods: { GET: 'openapi' },
  allow: ['GET', 'HEAD'],
  match: (path) => (path === '/openapi.json' ? '' : undefined),
};

const DOCS: PathRoute = {
  template: '/docs',
  methods: { GET: 'docs' },
  allow: ['GET', 'HEAD'],
  match: (path) => (path === '/docs' ? '' : undefined),
};

const ROUTES: readonly PathRoute[] = [ORDERS, ORDER, HEALTH, OPENAPI, DOCS];

/** Every route's path template and methods (HEAD implied by GET left out), for test/openapi. */
export const ROUTE_TABLE: readonly { readonly path: string; readonly methods: readonly string[] }[] =
  ROUTES.map((r) => ({ path: r.template, methods: Object.keys(r.methods) }));

/** Routes that never ask for a credential. */
export const OPEN_ROUTES: ReadonlySet<RouteName> = new Set(['health', 'openapi', 'docs']);

/** Resolves a request or throws the 404/405 answer. `path` is already percent-decoded. */
export function matchRoute(method: string, path: string): RouteMatch {
  for (const route of ROUTES) {
    const param = route.match(path);
    if (param === undefined) continue;
    const name = route.methods[method === 'HEAD' ? 'GET' : method];
    if (name === undefined) throw methodNotAllowed(route.allow);
    return { kind: 'route', name, orderId: param };
  }
  if (path.length > 1 && path.endsWith('/')) {
    const trimmed = path.replace(/\/+$/, ''); // Starlette: path.rstrip("/")
    if (ROUTES.some((route) => route.match(trimmed) !== undefined)) return { kind: 'redirect', path: trimmed };
  }
  throw notFound();
}

/** urllib.parse.unquote (errors="replace"): %XX sequences as UTF-8 bytes, invalid ones kept. */
export function percentDecode(text: string): string {
  if (!text.includes('%')) return text;
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '%' && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      const cp = text.codePointAt(i)!;
      if (cp > 0xffff) i++;
      bytes.push(...encoder.encode(String.fromCodePoint(cp)));
    }
  }
  return new TextDecoder('utf-8').decode(new Uint8Array(bytes));
}

/** parse_qsl(keep_blank_values=True) as Starlette uses it; the last value of a repeated key wins. */
export function parseQuery(query: string): Map<string, string> {
  const result = new Map<string, string>();
  if (query === '') return result;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    result.set(percentDecode(name.replaceAll('+', ' ')), percentDecode(value.replaceAll('+', ' ')));
  }
  return result;
}
