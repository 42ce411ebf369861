import { failure, usageError } from '../../cli/errors.js';
import { isLoopbackHost } from '../../config/units.js';

/**
 * The check `deploy` runs against the orders API once the stack is healthy: GET /orders through
 * ORDERS_API_BASE_URL (default: the deployed service) with ORDERS_API_KEY as the bearer credential
 * when set. The base URL must be a fully qualified https URL; plain http only for loopback hosts,
 * so a credential never crosses a network in clear text.
 */

const CHECK_TIMEOUT_MS = 5000;

/** Validates ORDERS_API_BASE_URL (a usage error, exit 2, before any work); undefined when unset. */
export function ordersBaseUrlFromEnv(env: NodeJS.ProcessEnv): URL | undefined {
  const raw = env.ORDERS_API_BASE_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(`ORDERS_API_BASE_URL must be a fully qualified https URL such as https://orders.example.com, got "${raw}"`);
  }
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return url;
  if (url.protocol === 'http:') {
    throw usageError(`ORDERS_API_BASE_URL must use https (plain http is accepted only for loopback hosts), got "${raw}"`);
  }
  throw usageError(`ORDERS_API_BASE_URL must be an https URL, got "${raw}"`);
}

/** GET {base}/orders?limit=1 answers 200 with the list object, or throws a failure (exit 1). */
export async function checkOrdersApi(base: URL, apiKey: string | undefined): Promise<void> {
  const url = new URL(base.pathname.replace(/\/$/, '') + '/orders?limit=1', base);
  const headers: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
  } catch (err) {
    throw failure(`orders check: GET ${url.href} failed: ${(err as Error).message}`, err);
  }
  const text = await res.text();
  if (res.status === 401 || res.status === 403) {
    const hint = apiKey ? 'ORDERS_API_KEY was refused' : 'the service requires a key: set ORDERS_API_KEY';
    throw failure(`orders check: GET ${url.href} answered ${res.status} (${hint})`);
  }
  let body: { status?: unknown; limit?: unknown; orders?: unknown } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  if (res.status !== 200 || typeof body?.status !== 'string' || !Array.isArray(body.orders)) {
    throw failure(`orders check: GET ${url.href} answered ${res.status}, not the orders list`);
  }
}
