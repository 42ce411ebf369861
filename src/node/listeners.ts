/**
 * The listener stage: the API listener (the blob API, /v1/cluster/*, the node-to-node routes, the
 * OpenAPI document, the UI page, and the operations routes in the `same` layout), the metrics
 * listener (the `separate` layout) and the gRPC listener. A cluster node's listeners open before
 * its cluster is made, since peers learn its ports from them: the cluster's routes and handlers
 * hold its slot (src/cluster/cluster-slot.ts) and answer 503 until the builder sets it.
 *
 *   bind order: API ─▶ metrics (separate layout) ─▶ gRPC
 */
import type { Gate } from '../auth/gate.js';
import type { ClusterApi } from '../cluster/cluster-api.js';
import type { ClusterSlot } from '../cluster/cluster-slot.js';
import { isDefaulted } from '../config/load.js';
import { SETTINGS, type NodeConfig } from '../config/settings.js';
import { GrpcServer } from '../grpc/server.js';
import type { Router } from '../http/router.js';
import { ApiServer } from '../http/server.js';
import type { Logger } from '../log/logger.js';
import type { NodeMetrics } from '../metrics/node-metrics.js';
import { registerOpenApiRoute } from '../openapi/api-routes.js';
import { blobApiDocument } from '../openapi/blob-api.js';
import type { OpsContext } from '../ops/ops-routes.js';
import { type OpsLayout, OpsServer, opsMount, registerUiOnApiPort } from '../ops/ops-server.js';
import type { BlobService } from '../service/blob-service.js';
import type { NodeTls } from '../tls/node-tls.js';
import { packageVersion } from '../version.js';

/** What the listeners serve and how. */
export interface ListenerParts {
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly service: BlobService;
  readonly gate: Gate;
  readonly tls: NodeTls | undefined;
  readonly layout: OpsLayout;
  /** undefined when MetricsAddr is empty: no operations routes, no metrics listener. */
  readonly metrics: NodeMetrics | undefined;
  /** /v1/cluster/* and ClusterService (501 on a node without a cluster, 503 while it starts). */
  readonly clusterApi: ClusterApi;
  /** The cluster's slot on a cluster node; undefined on a node alone (no gRPC, no node-to-node routes). */
  readonly cluster: ClusterSlot | undefined;
}

/** The bound ports: the metrics one is the API's in `same`, undefined when off; gRPC's undefined without it. */
export interface Ports {
  readonly api: number;
  readonly metrics: number | undefined;
  readonly grpc: number | undefined;
}

export class Listeners {
  readonly server: ApiServer;
  readonly ops: OpsServer | undefined;
  readonly grpc: GrpcServer | undefined;
  // The UI pages link the node's listeners: built at their first request, once these are bound.
  private apiPort = 0;
  private metricsPort: number | undefined;

  constructor(private readonly parts: ListenerParts) {
    const { config, log, service, gate, tls, layout, metrics, clusterApi, cluster } = parts;
    const ops: OpsContext | undefined = metrics && {
      metrics, gate, variant: config.apiVariant, log, accessLogEvery: config.accessLogEvery,
      ui: () => ({ metricsHere: true, apiHere: layout.kind === 'same', apiPort: this.apiPort, metricsPort: this.metricsPort }),
    };
    const apiDocument = blobApiDocument({
      variant: config.apiVariant === 'a' ? 'a' : 'b', opsOnApiPort: ops !== undefined && layout.kind === 'same', uiOnApiPort: ops !== undefined, version: packageVersion(),
    });
    // Routes beside the blob API on its port: the OpenAPI document, the UI page with the blob browser
    // at /ui/ (monitoring links to the metrics listener), and the operations routes in `same`.
    const mount = (routes: Router): void => {
      registerOpenApiRoute(routes, apiDocument);
      if (!ops) return;
      registerUiOnApiPort(routes, () => ({ metricsHere: layout.kind === 'same', apiHere: true, apiPort: this.apiPort, metricsPort: this.metricsPort }));
      if (layout.kind === 'same') opsMount(ops)(routes);
    };
    this.server = new ApiServer(service, config, log, { gate, mount, cluster: clusterApi, internal: cluster, tls });
    this.ops = ops && layout.kind === 'separate' ? new OpsServer(ops, tls) : undefined;
    this.grpc = cluster ? new GrpcServer(config, service, gate, log, { api: clusterApi, internal: cluster }, tls) : undefined;
  }

  /** Binds the listeners in order; on a failure the caller closes them (the builder's rollback). */
  async listen(): Promise<Ports> {
    const { config, log, layout } = this.parts;
    this.apiPort = await this.server.listen();
    // The default metrics and gRPC ports may be taken by another node on this host: a free port
    // then (peers learn the gRPC one from the member state). An address set by hand must bind.
    const ops = this.ops;
    this.metricsPort = layout.kind === 'separate' && ops
      ? await orFreePort(config.metricsAddr === SETTINGS.metricsAddr.default(), 'metrics', log, (p) => ops.listen(layout.host, p ?? layout.port))
      : layout.kind === 'same' ? this.apiPort : undefined;
    const grpc = this.grpc;
    const grpcPort = grpc ? await orFreePort(isDefaulted(config, 'grpcAddr') || config.grpcAddr === SETTINGS.grpcAddr.default(), 'gRPC', log, (p) => grpc.listen(p)) : undefined;
    return { api: this.apiPort, metrics: this.metricsPort, grpc: grpcPort };
  }
}

/** Binds with `bind()`; a default address that is taken falls back to a free port (logged). */
async function orFreePort(isDefault: boolean, what: string, log: Logger, bind: (port?: number) => Promise<number>): Promise<number> {
  try {
    return await bind();
  } catch (err) {
    if (!isDefault) throw err;
    const port = await bind(0);
    log.warn({ listener: what, port }, `the default ${what} port is taken (another node on this host?): listening on free port ${port}`);
    return port;
  }
}
