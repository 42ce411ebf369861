/**
 * The operations routes: metrics (text and JSON), health and the web UI. One function registers
 * them on a uWS app, so the same handlers serve the separate metrics listener (MetricsAddr
 * host:port) and the API port (MetricsAddr `same`).
 *
 *   GET /metrics                 text exposition              gate: read
 *   GET /api/v1/metrics          the spec's JSON snapshot     gate: read
 *   GET /api/v1/metrics/detail   percentiles etc. for the UI  gate: read
 *   GET /health                  200 OK / 503 UNHEALTHY       open
 *   GET /                        the web UI page              open (its requests carry the token)
 *
 * The spec's two metrics endpoints take GET only: any other method, HEAD too, answers 405 with
 * `Allow: GET`. On the others HEAD answers as GET does, without the body (RFC 9110), and any other
 * method 405 with `Allow: GET, HEAD`. `/metrics/` is an unknown path.
 */
import { scopeOf } from '../auth/access.js';
import { Registry } from 'prom-client';
import type { Gate } from '../auth/gate.js';
import { BlobstoreError, toBlobstoreError } from '../errors/errors.js';
import { type Answer, errorAnswer, errorBody, writeAnswer as write, writeError } from '../http/reply.js';
import type { GetHandler, Router } from '../http/router.js';
import type { HttpRequest, HttpResponse } from '../http/uws.js';
import { type Wire, wireOf } from '../http/wire.js';
import type { Logger } from '../log/logger.js';
import type { NodeMetrics } from '../metrics/node-metrics.js';
import { type UiConfig, uiPage } from './ui-page.js';

export type ApiVariant = 'a' | 'b';

export interface OpsContext {
  readonly metrics: NodeMetrics;
  /** Bearer authentication: /metrics and /api/v1/metrics need the `read` scope. */
  readonly gate: Gate;
  /** The node's API variant (setting apiVariant, 'a' or 'b'): the shape of error bodies. */
  readonly variant: string;
  readonly log: Logger;
  /** The setting accessLogEvery, for the access log of the metrics listener (router.ts); 0 when absent. */
  readonly accessLogEvery?: number;
  /** What the UI page served here may do; read at the first request (ports are bound by then). */
  readonly ui: () => UiConfig;
}

export const OPS_PATHS = ['/metrics', '/api/v1/metrics', '/api/v1/metrics/detail', '/health', '/'] as const;

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json';

/**
 * Answers with what `work` resolves to, unless the client went away meanwhile; a failure gets the
 * one error answer (errorAnswer: logged with a request id when it is a fault of this node).
 */
function later(res: HttpResponse, head: boolean, work: () => Promise<Answer>, wire: Wire, log: Logger): void {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  work()
    .catch((err: unknown): Answer => errorAnswer(toBlobstoreError(err), wire, log))
    .then((answer) => {
      if (!aborted) write(res, answer, head);
    });
}

/**
 * 405 body: variant B's shape with code 405; variant A's {code, message} with gRPC code 12
 * (UNIMPLEMENTED), which grpc-gateway gives a method a path lacks.
 */
/** The spec: "Any other method gives 405" on these, HEAD included. */
const GET_ONLY: ReadonlySet<string> = new Set(['/metrics', '/api/v1/metrics']);

function methodNotAllowedBody(variant: ApiVariant, path: string): string {
  const message = GET_ONLY.has(path) ? `${path} answers GET only` : `${path} answers GET and HEAD only`;
  return variant === 'a'
    ? errorBody(new BlobstoreError('unimplemented', message), 'a')
    : JSON.stringify({ code: 405, error: 'Method Not Allowed', message });
}

export function registerOpsRoutes(router: Router, ctx: OpsContext): Router {
  const { metrics, gate, log } = ctx;
  let page: string | undefined;
  const variant: ApiVariant = ctx.variant === 'a' ? 'a' : 'b';
  const wire = wireOf(variant);

  /** The gate's verdict: undefined to go on, else the 401/403 answer already sent. */
  const denied = (res: HttpResponse, req: HttpRequest, head: boolean): boolean => {
    try {
      gate.check(req.getHeader('authorization'), scopeOf('GET /metrics'));
      return false;
    } catch (err) {
      writeError(res, err, wire, log, head);
      return true;
    }
  };

  // GET handlers; HEAD comes to them too (`head`: the same answer without its body).
  const routes: Record<(typeof OPS_PATHS)[number], GetHandler> = {
    '/metrics': (res, req, head) => {
      if (denied(res, req, head)) return;
      later(res, head, async () => ({ status: 200, contentType: Registry.PROMETHEUS_CONTENT_TYPE, body: await metrics.exposition() }), wire, log);
    },
    '/api/v1/metrics': (res, req, head) => {
      if (denied(res, req, head)) return;
      later(res, head, async () => ({
        status: 200, contentType: JSON_TYPE, body: JSON.stringify(await metrics.snapshot()), headers: { 'Cache-Control': 'no-cache' },
      }), wire, log);
    },
    '/api/v1/metrics/detail': (res, req, head) => {
      if (denied(res, req, head)) return;
      write(res, { status: 200, contentType: JSON_TYPE, body: JSON.stringify(metrics.detail()), headers: { 'Cache-Control': 'no-cache' } }, head);
    },
    '/health': (res, _req, head) => {
      later(res, head, async () => {
        const status = await metrics.backend.check();
        const ok = status.healthy && !metrics.stopping;
        return ok
          ? { status: 200, contentType: TEXT, body: 'OK', headers: { 'Cache-Control': 'no-cache' } }
          : { status: 503, contentType: TEXT, body: 'UNHEALTHY: backend error', headers: { 'Cache-Control': 'no-cache' } };
      }, wire, log);
    },
    '/': (res, _req, head) => {
      page ??= uiPage(ctx.ui());
      write(res, { status: 200, contentType: 'text/html; charset=utf-8', body: page, headers: { 'Cache-Control': 'no-cache' } }, head);
    },
  };

  for (const path of OPS_PATHS) {
    const body = methodNotAllowedBody(variant, path);
    const allow = GET_ONLY.has(path) ? 'GET' : 'GET, HEAD';
    const notAllowed = (res: HttpResponse, head = false): void => write(res, { status: 405, contentType: JSON_TYPE, body, headers: { Allow: allow } }, head);
    router.get(path, routes[path], GET_ONLY.has(path) ? (res) => notAllowed(res, true) : undefined).any(path, (res) => notAllowed(res));
  }
  return router;
}
