/**
 * The API listener (uWebSockets.js): the route table and graceful close. As grpc-gateway does, a
 * known /v1 path with a method it lacks answers 501 and an unknown path 404.
 */
import type { NodeConfig } from '../config/settings.js';
import { parseHostPort } from '../config/units.js';
import { BlobstoreError, notFound } from '../errors/errors.js';
import type { Engine } from '../engine/engine.js';
import { BlobRoutes } from './blob-routes.js';
import { errorBody, statusLine } from './reply.js';
import { type HttpResponse, type TemplatedApp, type us_listen_socket, loadUws } from './uws.js';

const uws = loadUws();

function answer(res: HttpResponse, err: BlobstoreError): void {
  res.cork(() => res.writeStatus(statusLine(err.status)).writeHeader('Content-Type', 'application/json').end(errorBody(err)));
}

const methodNotAllowed = (res: HttpResponse): void =>
  answer(res, new BlobstoreError('unimplemented', 'Method Not Allowed'));

export class ApiServer {
  readonly routes: BlobRoutes;
  private readonly app: TemplatedApp;
  private listenSocket: us_listen_socket | undefined;
  private readonly sweeper: NodeJS.Timeout;
  ready = false;

  /**
   * `mount` adds routes of other listeners to this one (the `same` metrics layout); they are
   * registered before the catch-all 404.
   */
  constructor(
    private readonly engine: Engine,
    private readonly config: NodeConfig,
    mount?: (app: TemplatedApp) => void,
  ) {
    this.routes = new BlobRoutes(engine, config);
    const r = this.routes;
    this.app = uws
      .App()
      .post('/v1/blobs', r.store)
      .put('/v1/blobs', r.store)
      .get('/v1/blobs', r.list)
      .any('/v1/blobs', methodNotAllowed)
      .get('/v1/blobs/:id', r.get)
      .head('/v1/blobs/:id', r.head)
      .del('/v1/blobs/:id', r.delete)
      .any('/v1/blobs/:id', methodNotAllowed)
      // Streams and stat (variant A) come with the full-API issue; cluster with the cluster issue.
      .any('/v1/blobs/:id/stream', methodNotAllowed)
      .any('/v1/blobs/:id/stat', methodNotAllowed)
      .any('/v1/cluster/*', methodNotAllowed)
      .get('/healthz', (res) => this.healthz(res));
    mount?.(this.app);
    this.app
      .any('/*', (res, req) => answer(res, notFound(`no route for ${req.getCaseSensitiveMethod()} ${req.getUrl().slice(0, 200)}`)));
    this.sweeper = setInterval(() => this.routes.sweepIdle(Date.now()), 1000);
    this.sweeper.unref();
  }

  private healthz(res: HttpResponse): void {
    const ok = this.ready && !this.engine.failure;
    res.cork(() => res.writeStatus(ok ? '200 OK' : '503 Service Unavailable').writeHeader('Content-Type', 'text/plain').end(ok ? 'OK' : 'UNAVAILABLE'));
  }

  /** Listens on `listen` (host:port; port 0 picks a free one) and returns the bound port. */
  listen(): Promise<number> {
    const addr = parseHostPort(this.config.listen)!;
    return new Promise((resolve, reject) => {
      this.app.listen(addr.host, addr.port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${this.config.listen}`));
        this.listenSocket = socket;
        this.ready = true;
        resolve(uws.us_socket_local_port(socket));
      });
    });
  }

  /** Stops accepting connections, then waits (at most `timeoutMs`) for requests in progress. */
  async close(timeoutMs: number): Promise<boolean> {
    this.ready = false;
    clearInterval(this.sweeper);
    if (this.listenSocket) uws.us_listen_socket_close(this.listenSocket);
    this.listenSocket = undefined;
    const deadline = Date.now() + timeoutMs;
    while (this.routes.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return this.routes.inflight === 0;
  }
}
