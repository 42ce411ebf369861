/**
 * The separate metrics listener (MetricsAddr host:port, default `:9090`): the operations routes
 * and a 404 for every other path. With MetricsAddr `same` the API server mounts the same routes
 * instead (opsMount), and with an empty MetricsAddr neither runs.
 */
import { parseHostPort } from '../config/units.js';
import { notFound } from '../errors/errors.js';
import { errorAnswer, writeAnswer, writeError } from '../http/reply.js';
import { AccessLog } from '../log/access-log.js';
import { wireOf } from '../http/wire.js';
import { Router } from '../http/router.js';
import { Listener } from '../http/listener.js';
import type { HttpRequest, HttpResponse } from '../http/uws.js';
import type { NodeTls } from '../tls/node-tls.js';
import { type OpsContext, registerOpsRoutes } from './ops-routes.js';
import { type UiConfig, uiPage } from './ui-page.js';

/** How the operations routes are served, from MetricsAddr. */
export type OpsLayout = { kind: 'off' } | { kind: 'same' } | { kind: 'separate'; host: string; port: number };

export function opsLayout(metricsAddr: string): OpsLayout {
  const value = metricsAddr.trim();
  if (value === '') return { kind: 'off' };
  if (value.toLowerCase() === 'same') return { kind: 'same' };
  const addr = parseHostPort(value);
  if (!addr) throw new Error(`MetricsAddr ${JSON.stringify(metricsAddr)}: expected host:port, "same" or ""`);
  return { kind: 'separate', host: addr.host, port: addr.port };
}

/**
 * GET /ui/ (and /ui) on the API port: the UI page beside the blob API it browses. Open, like the
 * page on the metrics listener (its requests carry the token).
 */
export function registerUiOnApiPort(routes: Router, config: () => UiConfig): void {
  let page: string | undefined;
  const serve = (res: HttpResponse, _req: HttpRequest, head: boolean): void => {
    page ??= uiPage(config());
    writeAnswer(res, { status: 200, contentType: 'text/html; charset=utf-8', body: page, headers: { 'Cache-Control': 'no-cache' } }, head);
  };
  routes.get('/ui/', serve).get('/ui', serve);
}

/** For ApiServer's `mount` hook (the `same` layout). */
export function opsMount(ctx: OpsContext): (routes: Router) => void {
  return (routes) => void registerOpsRoutes(routes, ctx);
}

export class OpsServer {
  private readonly listener: Listener;

  constructor(ctx: OpsContext, tls?: NodeTls) {
    const wire = wireOf(ctx.variant === 'a' ? 'a' : 'b');
    this.listener = new Listener(tls, 'metrics', ctx.log);
    const routes = registerOpsRoutes(new Router(this.listener.app, (err) => errorAnswer(err, wire, ctx.log), new AccessLog(ctx.log, ctx.accessLogEvery ?? 0)), ctx);
    routes.any('/*', (res, req) => {
      writeError(res, notFound(`no route for ${req.getUrl().slice(0, 200)}`), wire, ctx.log, req.getMethod() === 'head');
    });
  }

  /** Listens on host:port (port 0 picks a free one) and returns the bound port. */
  listen(host: string, port: number): Promise<number> {
    return this.listener.listen(host, port);
  }

  /** Stops accepting connections (scrapes are short; open keep-alive connections end with the process). */
  close(): void {
    this.listener.close();
  }
}
