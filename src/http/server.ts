/**
 * The API listener (uWebSockets.js): the route table and graceful close. As grpc-gateway does, a
 * known /v1 path with a method it lacks answers 501 and an unknown path 404. Every /v1 route
 * asks the auth gate first; /healthz stays open.
 */
import { type HttpRoute, scopeOf } from '../auth/access.js';
import { type Gate, OPEN_GATE, type Scope } from '../auth/gate.js';
import type { NodeConfig } from '../config/settings.js';
import type { Logger } from '../log/logger.js';
import { AccessLog } from '../log/access-log.js';
import { parseHostPort } from '../config/units.js';
import { BlobstoreError, invalidArgument, notFound } from '../errors/errors.js';
import type { BlobService } from '../service/blob-service.js';
import { BatchStores } from './batch-store.js';
import { BlobRoutes } from './blob-routes.js';
import { ClusterApi } from '../cluster/cluster-api.js';
import type { ClusterSlot } from '../cluster/cluster-slot.js';
import { ClusterRoutes } from './cluster-routes.js';
import { INTERNAL_BLOB_PATH, INTERNAL_STAT_PATH, INTERNAL_REPLICA_PATH, InternalRoutes } from './internal-routes.js';
import { INTERNAL_SHARD_PATH } from '../cluster/transport/http-column.js';
import { Intake } from './intake.js';
import { errorAnswer, writeAnswer, writeError } from './reply.js';
import { Router } from './router.js';
import { StreamRoutes } from './stream-routes.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import { Listener } from './listener.js';
import type { NodeTls } from '../tls/node-tls.js';
import { type Wire, wireOf } from './wire.js';

export interface ApiServerOptions {
  gate?: Gate;
  /**
   * Adds routes of other listeners to this one (the `same` metrics layout); they are registered
   * before the catch-all 404.
   */
  mount?: (routes: Router) => void;
  /** The cluster endpoints (/v1/cluster/*). */
  cluster?: ClusterApi;
  /** The cluster's slot, for the node-to-node data path (/internal/v1/*); none on a node alone. */
  internal?: ClusterSlot;
  /** TLS on this listener (SSLApp), with the node's certificate. */
  tls?: NodeTls;
}

/** A blob's path with its id empty: GET, HEAD or DELETE /v1/blobs/, GET /v1/blobs//stat and //stream. */
const EMPTY_ID_PATH = /^\/v1\/blobs\/(?:\/(?:stat|stream))?$/;

export class ApiServer {
  readonly routes: BlobRoutes;
  readonly intake: Intake;
  private readonly listener: Listener;
  private readonly wire: Wire;
  private readonly gate: Gate;
  private readonly sweeper: NodeJS.Timeout;
  private ready = false;

  constructor(
    private readonly service: BlobService,
    private readonly config: NodeConfig,
    private readonly log: Logger,
    options: ApiServerOptions = {},
  ) {
    this.wire = wireOf(config.apiVariant);
    this.gate = options.gate ?? OPEN_GATE;
    this.intake = new Intake(config, service);
    this.routes = new BlobRoutes(service, config, this.gate, this.intake, this.wire, log);
    const r = this.routes;
    const s = new StreamRoutes(service, config, r, this.intake);
    const b = new BatchStores(service, config, this.gate, this.intake, this.wire, log, r.smallMaxBytes);
    const c = new ClusterRoutes(options.cluster ?? new ClusterApi(undefined), this.gate, this.wire, log);
    // grpc-gateway's answer for a method a known path lacks: 501 "Method Not Allowed".
    const unimplemented = (route: HttpRoute) => (res: HttpResponse, req: HttpRequest) =>
      this.unimplemented(res, req, scopeOf(route), 'Method Not Allowed');
    // Every GET route answers HEAD as well (router.ts); in variant B, HEAD /v1/blobs/{id} is the
    // spec's metadata answer instead.
    this.listener = new Listener(options.tls, 'API', log);
    const routes = new Router(this.listener.app, (err) => errorAnswer(err, this.wire, log), new AccessLog(log, config.accessLogEvery))
      .post('/v1/blobs', r.store, 'stream')
      .put('/v1/blobs', r.store, 'stream')
      .get('/v1/blobs', r.list)
      .any('/v1/blobs', unimplemented('ANY /v1/blobs'))
      // GET, HEAD and DELETE /v1/blobs/stream and /v1/blobs/batch fall to /v1/blobs/:id: neither is an id (400).
      .post('/v1/blobs/stream', s.putStream, 'stream')
      .post('/v1/blobs/batch', b.store)
      .get('/v1/blobs/:id', r.get, this.wire.variant === 'b' ? r.head : undefined)
      .del('/v1/blobs/:id', r.delete)
      .any('/v1/blobs/:id', unimplemented('ANY /v1/blobs/:id'))
      .get('/v1/blobs/:id/stream', s.getStream)
      .any('/v1/blobs/:id/stream', unimplemented('ANY /v1/blobs/:id/stream'))
      .get('/v1/blobs/:id/stat', r.stat)
      .any('/v1/blobs/:id/stat', unimplemented('ANY /v1/blobs/:id/stat'))
      .post('/v1/cluster/join', c.join)
      .post('/v1/cluster/leave', c.leave)
      .post('/v1/cluster/heartbeat', c.heartbeat)
      .post('/v1/cluster/sync-ring', c.syncRing)
      .post('/v1/cluster/repair', c.repair)
      .post('/v1/cluster/bootstrap', c.bootstrap)
      .get('/v1/cluster/state', c.state)
      .any('/v1/cluster/*', unimplemented('ANY /v1/cluster/*'))
      .get('/healthz', (res, _req, head) => this.healthz(res, head));
    const slot = options.internal;
    if (slot) {
      const internal = new InternalRoutes(() => slot.peek(), this.intake, this.wire, log);
      routes.get(`${INTERNAL_BLOB_PATH}:id`, internal.get).get(`${INTERNAL_STAT_PATH}:id`, internal.stat).put(`${INTERNAL_REPLICA_PATH}:id`, internal.putReplica, 'stream')
        .post(INTERNAL_REPLICA_PATH.slice(0, -1), internal.postReplicas).post(INTERNAL_SHARD_PATH.slice(0, -1), internal.postShards)
        .get(`${INTERNAL_SHARD_PATH}:id/:index`, internal.getShard).put(`${INTERNAL_SHARD_PATH}:id/:index`, internal.putShard, 'stream');
    }
    options.mount?.(routes);
    // The message names the path only: HEAD must answer what GET does, to the byte. A blob path
    // whose id is empty matches no route, yet the spec answers it 400 (the id is missing).
    routes.any('/*', (res, req) => {
      const method = req.getMethod();
      const url = req.getUrl();
      const emptyId = EMPTY_ID_PATH.test(url) && (method === 'get' || method === 'head' || (method === 'delete' && url === '/v1/blobs/'));
      this.answer(res, emptyId ? invalidArgument('invalid blob ID: missing or empty') : notFound(`no route for ${url.slice(0, 200)}`), method === 'head');
    });
    this.sweeper = setInterval(() => this.intake.sweepIdle(Date.now()), 1000);
    this.sweeper.unref();
  }

  /** The error answer (to HEAD without its body). */
  private answer(res: HttpResponse, err: BlobstoreError, head: boolean): void {
    writeError(res, err, this.wire, this.log, head);
  }

  private unimplemented(res: HttpResponse, req: HttpRequest, scope: Scope, message: string): void {
    try {
      if (this.gate.enabled) this.gate.check(req.getHeader('authorization'), scope);
    } catch (err) {
      if (err instanceof BlobstoreError) return this.answer(res, err, req.getMethod() === 'head');
      throw err;
    }
    this.answer(res, new BlobstoreError('unimplemented', message), req.getMethod() === 'head');
  }

  /**
   * Ready to serve: 200 once the node has started (every listener bound: started()) until
   * shutdown, except while a cluster node has not joined yet
   * (it could not tell who holds a blob). A backend that cannot take stores (a full disk, a failed
   * log write) still serves reads, so it stays ready here; /health reports it.
   */
  private healthz(res: HttpResponse, head: boolean): void {
    const ok = this.ready && this.service.ready;
    writeAnswer(res, { status: ok ? 200 : 503, contentType: 'text/plain', body: ok ? 'OK' : 'UNAVAILABLE' }, head);
  }

  /** Listens on `listen` (host:port; port 0 picks a free one) and returns the bound port. */
  listen(): Promise<number> {
    const addr = parseHostPort(this.config.listen)!;
    return this.listener.listen(addr.host, addr.port);
  }

  /** `https` when the listener speaks TLS. */
  get scheme(): 'http' | 'https' {
    return this.listener.scheme;
  }

  /** The node is up (every listener bound, the cluster running): /healthz may answer 200. */
  started(): void {
    this.ready = true;
  }

  /** Stops accepting connections, then waits (at most `timeoutMs`) for requests in progress. */
  async close(timeoutMs: number): Promise<boolean> {
    this.ready = false;
    clearInterval(this.sweeper);
    this.listener.close();
    const deadline = Date.now() + timeoutMs;
    while (this.intake.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return this.intake.inflight === 0;
  }
}
