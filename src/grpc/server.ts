/**
 * The gRPC listener (@grpc/grpc-js; TLS with the node's certificate when it has one): BlobService,
 * ClusterService and InternalService (UNIMPLEMENTED on a node without its cluster), and the
 * standard health and reflection services (standard-services.ts).
 * Messages above grpcMaxMessageBytes are refused by grpc-js itself (RESOURCE_EXHAUSTED).
 */
import { scopeOf } from '../auth/access.js';
import * as grpc from '@grpc/grpc-js';
import type http2 from 'node:http2';
import type { Gate } from '../auth/gate.js';
import type { NodeConfig } from '../config/settings.js';
import { parseHostPort } from '../config/units.js';
import { unimplemented } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { AccessLog } from '../log/access-log.js';
import { accessInterceptor } from './access.js';
import type { BlobService } from '../service/blob-service.js';
import { blobServiceHandlers } from './blob-handlers.js';
import { type DirectHandler, interceptStreams } from './direct-seam.js';
import { directRoutes } from './direct-streams.js';
import type { ClusterApi } from '../cluster/cluster-api.js';
import type { ClusterSlot } from '../cluster/cluster-slot.js';
import { clusterServiceHandlers } from './cluster-handlers.js';
import { internalServiceHandlers } from './internal-handlers.js';
import { serverDefinition } from '../proto/loader.js';
import { growHeapForHttp2 } from './heap-growth.js';
import { MAX_FRAME_BYTES } from './http2-frames.js';
import { type ConnectionLimits, limitPerAddress } from './connection-limits.js';
import { StandardServices } from './standard-services.js';
import { authorization, toStatus } from './status.js';
import { format } from 'node:util';
import { serverCredentials } from '../tls/grpc-tls.js';
import type { NodeTls } from '../tls/node-tls.js';
import { ListenError } from '../util/listen-refusal.js';

/** Answers every rpc of a service UNIMPLEMENTED; `admin` first when the service needs the scope. */
function unimplementedHandlers(definition: grpc.ServiceDefinition, service: string, gate: Gate | undefined, log: Logger): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    const fail = (metadata: grpc.Metadata): grpc.ServerErrorResponse => {
      try {
        gate?.check(authorization(metadata), scopeOf('ClusterService/*'));
        throw unimplemented(`${service}.${name} is not implemented yet: it comes with cluster support`);
      } catch (err) {
        return toStatus(err, `${service}.${name}`, log, metadata);
      }
    };
    if (method.responseStream) {
      handlers[name] = (call: grpc.ServerWritableStream<unknown, unknown>) => call.emit('error', fail(call.metadata));
    } else {
      handlers[name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => callback(fail(call.metadata));
    }
  }
  return handlers;
}

/** The part of a grpc-js Server this module reaches into (server.js of grpc-js 1.14). */
interface Http2Making {
  commonServerOptions?: http2.ServerOptions;
  createHttp2Server?: (credentials: unknown) => http2.Http2Server;
  /** Counts an open call of the stream's connection for grpc.max_connection_idle_ms, until its close. */
  onStreamOpened?: (stream: http2.ServerHttp2Stream) => void;
}

/**
 * grpc-js gives its HTTP/2 server no flow-control or frame-size setting, so every stream receives
 * through Node's default 64 KiB window in 16 KiB frames: a put stream then waits for a
 * WINDOW_UPDATE round trip through the event loop every 64 KiB. This grpc-js server (only it:
 * node:http2 itself is left alone, so any other HTTP/2 server or client in the process keeps
 * Node's defaults) announces `windowBytes` per stream and per connection and frames of up to
 * MAX_FRAME_BYTES, and hands the streams of `routes` to their direct handlers (direct-seam.ts).
 * Returns whether grpc-js has made its HTTP/2 server this way since (checked after bindAsync).
 * Exported for test/grpc/direct-seam.test.ts.
 */
export function widenHttp2Windows(grpcServer: grpc.Server, windowBytes: number, routes: ReadonlyMap<string, DirectHandler>, limits?: ConnectionLimits): () => boolean {
  const inner = grpcServer as unknown as Http2Making;
  const make = inner.createHttp2Server;
  if (typeof make !== 'function' || typeof inner.commonServerOptions !== 'object') {
    throw new Error('grpc-js no longer makes its HTTP/2 server through createHttp2Server(commonServerOptions): src/grpc/server.ts needs updating');
  }
  // Read by grpc-js for every HTTP/2 server it makes (plain and TLS alike).
  inner.commonServerOptions.settings = { ...inner.commonServerOptions.settings, initialWindowSize: windowBytes, maxFrameSize: MAX_FRAME_BYTES };
  // A TLS connection whose handshake has not finished is closed after as long as an idle one
  // (Node's default: 2 minutes); grpc-js passes these options on to its TLS server.
  if (limits) (inner.commonServerOptions as { handshakeTimeout?: number }).handshakeTimeout = limits.idleMs;
  let created = false;
  inner.createHttp2Server = (credentials: unknown): http2.Http2Server => {
    const server = make.call(grpcServer, credentials);
    created = true;
    server.on('session', (session: http2.ServerHttp2Session) => session.setLocalWindowSize(windowBytes));
    // Nagle's algorithm held small frames (a unary answer, a stream's last message) until the
    // peer's delayed ACK, ~40 ms: a node's read from a peer took 20-60 ms instead of 2.
    server.on('connection', (socket: import('node:net').Socket) => socket.setNoDelay(true));
    if (limits) limitPerAddress(server, limits.perAddress);
    // PutStream and GetStream are served on their streams, not through grpc-js (direct-seam.ts).
    // Their calls keep the connection from counting as idle (connection-limits.ts), as grpc-js's own do.
    const opened = inner.onStreamOpened;
    interceptStreams(server, routes, typeof opened === 'function' ? (stream) => opened.call(grpcServer, stream) : undefined);
    return server;
  };
  return () => created;
}

export class GrpcServer {
  private readonly server: grpc.Server;
  /** grpc.health.v1 and server reflection. */
  private readonly standard: StandardServices;
  /** PutStream and GetStream, served without grpc-js (direct-streams.ts). */
  private readonly routes: ReadonlyMap<string, DirectHandler>;

  constructor(
    private readonly config: NodeConfig,
    service: BlobService,
    gate: Gate,
    log: Logger,
    /** ClusterService and InternalService; UNIMPLEMENTED without them (a node without a cluster). */
    cluster?: { api: ClusterApi; internal: ClusterSlot },
    /** TLS only, with the node's certificate. */
    private readonly tls?: NodeTls,
  ) {
    // Every call's access line and request id (access.ts): grpc-js's through the interceptor,
    // PutStream's and GetStream's through their DirectCall.
    const access = new AccessLog(log, config.accessLogEvery);
    routeGrpcLog(log);
    this.server = new grpc.Server({
      interceptors: [accessInterceptor(access)],
      'grpc.max_receive_message_length': config.grpcMaxMessageBytes,
      'grpc.max_send_message_length': config.grpcMaxMessageBytes,
      // channelz keeps per-call bookkeeping (trace events, counters) that nothing here reads.
      'grpc.enable_channelz': 0,
      // A connection with no call open this long is closed (connection-limits.ts).
      'grpc.max_connection_idle_ms': config.grpcIdleTimeoutMs,
    });
    // grpc-js keeps its PutStream and GetStream handlers: a call that direct-seam.ts leaves to
    // grpc-js (a compressed one) is still answered.
    this.server.addService(serverDefinition('BlobService'), blobServiceHandlers(service, gate, log));
    this.routes = directRoutes(service, gate, log, access);
    const clusterService = serverDefinition('ClusterService');
    const internalService = serverDefinition('InternalService');
    if (cluster) {
      this.server.addService(clusterService, clusterServiceHandlers(cluster.api, gate, log));
      // InternalService carries no user credentials: peers present the cluster secret.
      this.server.addService(internalService, internalServiceHandlers(() => cluster.internal.peek(), log));
    } else {
      this.server.addService(clusterService, unimplementedHandlers(clusterService, 'ClusterService', gate, log));
      this.server.addService(internalService, unimplementedHandlers(internalService, 'InternalService', undefined, log));
    }
    // SERVING is what /healthz answers 200 for: a backend that cannot take stores (a full disk, a
    // failed log write) still serves reads, and a probe that restarted it would take those away too.
    this.standard = new StandardServices(this.server, () => service.ready, cluster !== undefined);
  }

  /** Listens on grpcAddr (port 0: a free port; `port` overrides the setting's) and returns the bound port. */
  listen(port?: number): Promise<number> {
    const addr = parseHostPort(this.config.grpcAddr);
    if (!addr) return Promise.reject(new Error(`invalid gRPC address ${JSON.stringify(this.config.grpcAddr)}`));
    const p = port ?? addr.port;
    const target = addr.host.includes(':') ? `[${addr.host}]:${p}` : `${addr.host}:${p}`;
    return new Promise((resolve, reject) => {
      let created: () => boolean;
      try {
        created = widenHttp2Windows(this.server, this.config.grpcWindowBytes, this.routes, { idleMs: this.config.grpcIdleTimeoutMs, perAddress: this.config.grpcMaxConnectionsPerAddress });
      } catch (err) {
        return reject(err);
      }
      this.server.bindAsync(target, serverCredentials(this.tls), (err, bound) => {
        if (err) return reject(new ListenError(`cannot listen for gRPC on ${target}: ${err.message}`));
        // The seam of direct-seam.ts (and the window settings) need grpc-js to make its server
        // through createHttp2Server: a grpc-js that stops doing so must not start silently slower.
        if (!created()) return reject(new Error('grpc-js did not make its HTTP/2 server through createHttp2Server: the stream seam (src/grpc/direct-seam.ts) needs updating'));
        growHeapForHttp2(this.config.grpcHeapGrowingPercent);
        this.standard.serving();
        resolve(bound);
      });
    });
  }

  /**
   * Stops accepting calls and waits for those in progress, at most `timeoutMs`; then cuts the rest
   * (their partial put streams are discarded). Resolves true when everything finished in time.
   */
  close(timeoutMs: number): Promise<boolean> {
    this.standard.stopping();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve(false);
      }, timeoutMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

/**
 * grpc-js writes its own diagnostics to stderr as plain text ("E No address added out of total 1
 * resolved" when the default port is taken), lines that break a JSON log. They go to the node's
 * log at debug level instead: each failure they describe reaches this node's code as an error,
 * which logs what it does about it (the free port it takes instead, a peer call that failed).
 */
function routeGrpcLog(log: Logger): void {
  const line = (...args: unknown[]): void => log.debug({ source: 'grpc-js' }, format(...args));
  grpc.setLogger({ error: line, info: line, debug: line } as unknown as Partial<Console>);
}
