import type { Region } from '../stack/settings.js';
import { envName } from '../../config/settings.js';
import type { ClusterDescription, HostNode, TlsFiles } from './cluster.js';
import { DATA_DIR, IMAGE_UID } from './image.js';
import { privilegedPort, stopTimeoutSeconds } from './node-env.js';
import { type RenderedFile, file, renderedBy } from './rendered.js';
import { toYamlDocuments } from './yaml.js';

/**
 * The Kubernetes target: one StatefulSet per region (`<cluster>-<region>`), its headless Service
 * (the pods' DNS names are their SeedNodes), a client Service, a PodDisruptionBudget and a
 * Prometheus ServiceMonitor, in one `blobstore.yaml`.
 *
 *   <set>-0.<set>.<ns>.svc.<domain>:8080 ... <set>-(n-1)...   SeedNodes of every pod (itself among them)
 *   pod name (downward API)                                   NodeID
 *   Secret <cluster>-cluster-secret, key cluster-secret       ClusterSecretFile, mounted read-only
 *   Secret <cluster>-tls (tls.crt, tls.key, ca.crt)           TLS files, when the description has tls
 *   Secret <cluster>-auth-tokens, key tokens                  AuthTokensFile, when the description has one
 *   Secret <cluster>-metrics-token, key token                 the ServiceMonitor's bearer token (scope read), with tokens
 *
 * The headless Service publishes pods that are not ready: a node is ready only once it joined its
 * cluster, and it finds its peers through those very names. gRPC health mirrors /healthz (both
 * NOT_SERVING until the node joined), so a startup probe gives the bootstrap its time before the
 * liveness probe counts.
 */

const SECRET_DIR = '/etc/blobstore/secrets';
const TLS_DIR = '/etc/blobstore/tls';
const AUTH_DIR = '/etc/blobstore/auth';

export type Manifest = Record<string, unknown>;

/** The Secret holding the token (scope read) the ServiceMonitor scrapes with, when tokens are on. */
export const metricsTokenSecret = (cluster: ClusterDescription): string => `${cluster.name}-metrics-token`;

export const statefulSetName = (cluster: ClusterDescription, region: Region): string => `${cluster.name}-${region}`;

/** The objects, for the test to validate one by one. */
export function kubernetesObjects(cluster: ClusterDescription, region: Region, nodes: readonly HostNode[]): Manifest[] {
  const set = statefulSetName(cluster, region);
  const k = cluster.kubernetes;
  const replicas = k.replicas ?? nodes.length;
  const labels = { 'app.kubernetes.io/name': 'blobstore', 'app.kubernetes.io/instance': set, 'blobstore.io/region': region };
  const selector = { 'app.kubernetes.io/name': 'blobstore', 'app.kubernetes.io/instance': set };
  const meta = (name: string, component?: string): Manifest => ({
    name, namespace: k.namespace, labels: component ? { ...labels, 'app.kubernetes.io/component': component } : labels,
  });
  const ports = cluster.ports;
  const servicePorts = [
    { name: 'api', port: ports.api, targetPort: 'api' },
    { name: 'grpc', port: ports.grpc, targetPort: 'grpc' },
    { name: 'metrics', port: ports.metrics, targetPort: 'metrics' },
  ];
  const headless = {
    apiVersion: 'v1', kind: 'Service', metadata: meta(set, 'peers'),
    spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector, ports: servicePorts },
  };
  const client = {
    apiVersion: 'v1', kind: 'Service', metadata: meta(`${set}-api`, 'api'),
    spec: { type: 'ClusterIP', selector, ports: servicePorts.filter((p) => p.name !== 'metrics') },
  };
  const statefulSet = {
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: meta(set),
    spec: {
      serviceName: set, replicas, podManagementPolicy: 'Parallel', selector: { matchLabels: selector },
      updateStrategy: { type: 'RollingUpdate' },
      template: { metadata: { labels }, spec: podSpec(cluster, region, set, replicas, tlsOf(cluster, nodes)) },
      volumeClaimTemplates: [{
        metadata: { name: 'data', labels: selector },
        spec: {
          accessModes: ['ReadWriteOnce'], resources: { requests: { storage: k.storageSize } },
          ...(k.storageClassName ? { storageClassName: k.storageClassName } : {}),
        },
      }],
    },
  };
  const budget = {
    apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: meta(set),
    spec: { maxUnavailable: 1, selector: { matchLabels: selector } },
  };
  const tls = tlsOf(cluster, nodes) !== undefined;
  // Prometheus scrapes each pod by its IP and checks the certificate for serverName: the set's
  // first pod's name is one the documented wildcard (*.<set>.<namespace>.svc.<domain>) covers.
  const serverName = `${set}-0.${set}.${k.namespace}.svc.${k.clusterDomain}`;
  const monitor = {
    apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: meta(set),
    spec: {
      selector: { matchLabels: { ...selector, 'app.kubernetes.io/component': 'peers' } },
      namespaceSelector: { matchNames: [k.namespace] },
      endpoints: [{
        port: 'metrics', path: '/metrics', interval: '30s',
        ...(tls ? { scheme: 'https', tlsConfig: { ca: { secret: { name: `${cluster.name}-tls`, key: 'ca.crt' } }, serverName } } : {}),
        // With a token file, /metrics wants a token of scope read, kept in a Secret of its own.
        ...(cluster.authTokensFile !== undefined ? { authorization: { type: 'Bearer', credentials: { name: metricsTokenSecret(cluster), key: 'token' } } } : {}),
      }],
    },
  };
  return [headless, client, statefulSet, budget, monitor];
}

export function renderKubernetes(cluster: ClusterDescription, region: Region, nodes: readonly HostNode[]): RenderedFile[] {
  const header = `${renderedBy(cluster.name, region, 'kubernetes')}\n# Secrets it mounts (create them first): docs/install.md, Kubernetes.\n`;
  return [file('blobstore.yaml', header + toYamlDocuments(kubernetesObjects(cluster, region, nodes)))];
}

/** A StatefulSet's pods share one TLS Secret: the description's shared files, else a node's. */
const tlsOf = (cluster: ClusterDescription, nodes: readonly HostNode[]): TlsFiles | undefined => cluster.tls ?? nodes.find((n) => n.tls)?.tls;

function podSpec(cluster: ClusterDescription, region: Region, set: string, replicas: number, tlsFiles: TlsFiles | undefined): Manifest {
  const k = cluster.kubernetes;
  const ports = cluster.ports;
  const domain = `${set}.${k.namespace}.svc.${k.clusterDomain}`;
  const seeds = [...Array.from({ length: replicas }, (_, i) => `${set}-${i}.${domain}:${ports.api}`), ...k.extraSeedNodes];
  const tls = tlsFiles !== undefined;
  const auth = cluster.authTokensFile !== undefined;
  const env: Manifest[] = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: envName('nodeId'), valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: envName('region'), value: region },
    { name: envName('dataDir'), value: DATA_DIR },
    { name: envName('listen'), value: `0.0.0.0:${ports.api}` },
    { name: envName('advertiseAddr'), value: `$(POD_NAME).${domain}:${ports.api}` },
    { name: envName('grpcAddr'), value: `0.0.0.0:${ports.grpc}` },
    { name: envName('metricsAddr'), value: `0.0.0.0:${ports.metrics}` },
    { name: envName('seedNodes'), value: seeds.join(',') },
    { name: envName('clusterSecretFile'), value: `${SECRET_DIR}/cluster-secret` },
    ...(auth ? [{ name: envName('authTokensFile'), value: `${AUTH_DIR}/tokens` }] : []),
    ...(tls ? [
      { name: envName('tlsCert'), value: `${TLS_DIR}/tls.crt` },
      { name: envName('tlsKey'), value: `${TLS_DIR}/tls.key` },
      ...(tlsFiles?.caFile ? [{ name: envName('tlsCa'), value: `${TLS_DIR}/ca.crt` }] : []),
    ] : []),
    { name: envName('logFormat'), value: 'json' },
    ...[...cluster.settings].map(([key, value]) => ({ name: envName(key), value })),
  ];
  const scheme = tls ? 'HTTPS' : 'HTTP';
  // Kubernetes' gRPC probe speaks plaintext only: with TLS, liveness checks that the port accepts.
  const grpcProbe = tls ? { tcpSocket: { port: 'grpc' } } : { grpc: { port: ports.grpc } };
  const mounts: Manifest[] = [
    { name: 'data', mountPath: DATA_DIR },
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'cluster-secret', mountPath: SECRET_DIR, readOnly: true },
    ...(tls ? [{ name: 'tls', mountPath: TLS_DIR, readOnly: true }] : []),
    ...(auth ? [{ name: 'auth-tokens', mountPath: AUTH_DIR, readOnly: true }] : []),
  ];
  const secretVolume = (name: string, secretName: string): Manifest => ({ name, secret: { secretName, defaultMode: 0o440 } });
  // A pod has its own network namespace: lowering its unprivileged port floor (a safe sysctl)
  // lets the non-root user bind a port below 1024 without any capability.
  const lowPort = privilegedPort(ports);
  return {
    terminationGracePeriodSeconds: stopTimeoutSeconds(cluster.settings),
    securityContext: {
      runAsNonRoot: true, runAsUser: IMAGE_UID, runAsGroup: IMAGE_UID, fsGroup: IMAGE_UID,
      fsGroupChangePolicy: 'OnRootMismatch', seccompProfile: { type: 'RuntimeDefault' },
      ...(lowPort !== undefined ? { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: String(lowPort) }] } : {}),
    },
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [{
          weight: 100,
          podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { 'app.kubernetes.io/instance': set } } },
        }],
      },
    },
    containers: [{
      name: 'blobstore', image: cluster.image, imagePullPolicy: 'IfNotPresent', args: ['serve'],
      ports: [
        { name: 'api', containerPort: ports.api },
        { name: 'grpc', containerPort: ports.grpc },
        { name: 'metrics', containerPort: ports.metrics },
      ],
      env,
      readinessProbe: { httpGet: { path: '/healthz', port: 'api', scheme }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 3 },
      startupProbe: { ...grpcProbe, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 60 },
      livenessProbe: { ...grpcProbe, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
      resources: k.resources,
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
      volumeMounts: mounts,
    }],
    volumes: [
      { name: 'tmp', emptyDir: {} },
      secretVolume('cluster-secret', `${cluster.name}-cluster-secret`),
      ...(tls ? [secretVolume('tls', `${cluster.name}-tls`)] : []),
      ...(auth ? [secretVolume('auth-tokens', `${cluster.name}-auth-tokens`)] : []),
    ],
  };
}
