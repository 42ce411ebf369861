/**
 * The standard gRPC services beside blobstore's own, from maintained npm packages:
 *
 * - grpc.health.v1.Health (grpc-health-check): Check and Watch for "" (the whole server) and for
 *   blobstore.v1.BlobService, so Kubernetes gRPC probes and grpc_health_probe work. A service is
 *   SERVING while the node serves (what /healthz answers 200 for, a full disk included: reads
 *   still work), NOT_SERVING before listening, while a cluster node has not joined yet and from
 *   the start of shutdown.
 *   ClusterService and InternalService are listed with them once the node has its cluster (a
 *   node serving with gRPC has one, alone or not); before, they are NOT_FOUND.
 * - grpc.reflection.v1 and v1alpha ServerReflection (@grpc/reflection), describing the blobstore
 *   protos and the health service, so `grpcurl list` and `grpcurl describe` work without .proto
 *   files.
 *
 * Both are open like /healthz: probes carry no token, and the schema is the repository's .proto.
 */
import type { Server, ServerWritableStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, type ServingStatus, protoPath as healthProtoPath } from 'grpc-health-check';
import { LOADER_OPTIONS, PROTO_PACKAGE, loadProtos } from '../proto/loader.js';
import { reflectedPackage } from './map-entries.js';

/** The services health always answers for: the whole server ('') and BlobService. */
export const HEALTH_SERVICES = ['', `${PROTO_PACKAGE}.BlobService`] as const;

/** Answered for too once the node has its cluster (the services are implemented then). */
export const CLUSTER_HEALTH_SERVICES = [`${PROTO_PACKAGE}.ClusterService`, `${PROTO_PACKAGE}.InternalService`] as const;

/**
 * How often the node's state is carried into Watch streams (a Check, and a Watch's first answer,
 * read it at once, so they answer as /healthz would at that moment).
 */
const HEALTH_POLL_MS = 250;

export class StandardServices {
  private readonly health: HealthImplementation;
  private readonly services: readonly string[];
  private status: ServingStatus = 'NOT_SERVING';
  /** Statuses follow healthy() only while listening: NOT_SERVING before, and from shutdown on. */
  private live = false;
  private timer: NodeJS.Timeout | undefined;
  /** Open Watch calls: ended at shutdown, which would otherwise wait for them until its timeout. */
  private readonly watches = new Set<ServerWritableStream<unknown, unknown>>();

  /**
   * `healthy` says whether the node can serve (its engine has not failed, it is not joining);
   * `cluster`, whether ClusterService and InternalService are implemented (and so listed).
   */
  constructor(server: Pick<Server, 'addService'>, private readonly healthy: () => boolean, cluster: boolean) {
    this.services = cluster ? [...HEALTH_SERVICES, ...CLUSTER_HEALTH_SERVICES] : HEALTH_SERVICES;
    this.health = new HealthImplementation(Object.fromEntries(this.services.map((s) => [s, 'NOT_SERVING'])));
    this.health.addToServer({
      addService: (definition, implementation: UntypedServiceImplementation) => {
        const watch = implementation.watch as (call: ServerWritableStream<unknown, unknown>) => void;
        const check = implementation.check as (call: unknown, callback: unknown) => void;
        server.addService(definition, {
          ...implementation,
          check: (call: unknown, callback: unknown) => {
            this.update();
            check(call, callback);
          },
          watch: (call: ServerWritableStream<unknown, unknown>) => {
            this.watches.add(call);
            const forget = (): void => void this.watches.delete(call);
            call.once('cancelled', forget);
            call.once('finish', forget);
            this.update();
            watch(call);
          },
        });
      },
    });
    const health = loadSync(healthProtoPath, LOADER_OPTIONS);
    new ReflectionService(reflectedPackage({ ...loadProtos(), ...health })).addToServer(server);
  }

  /** Listening: SERVING while healthy() holds. */
  serving(): void {
    this.live = true;
    this.update();
    this.timer = setInterval(() => this.update(), HEALTH_POLL_MS);
    this.timer.unref();
  }

  /**
   * Shutdown begins: NOT_SERVING from now on (probes take the node out before it stops); Watch
   * streams get that status, then end (OK), so they do not hold the shutdown.
   */
  stopping(): void {
    this.live = false;
    clearInterval(this.timer);
    this.set('NOT_SERVING');
    for (const call of this.watches) call.end();
    this.watches.clear();
  }

  private update(): void {
    if (this.live) this.set(this.healthy() ? 'SERVING' : 'NOT_SERVING');
  }

  private set(status: ServingStatus): void {
    if (status === this.status) return;
    this.status = status;
    for (const service of this.services) this.health.setStatus(service, status);
  }
}
