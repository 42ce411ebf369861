/**
 * The Kubernetes target: every rendered object validates against its schema (kubernetes-models:
 * the Kubernetes 1.27 OpenAPI schemas; the ServiceMonitor against prometheus-operator's own CRD
 * schema, @kubernetes-models/prometheus-operator), the YAML reads back as the same objects with an
 * independent parser (yaml), and the pieces that make a cluster are there: seeds from the
 * headless Service's DNS names, NodeID from the pod name, the secret by a mounted file, the probes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { type ClusterDescription, parseCluster } from '../../src/apps/hosts/cluster.js';
import { type Manifest, kubernetesObjects, renderKubernetes } from '../../src/apps/hosts/kubernetes.js';
import { toYaml } from '../../src/apps/hosts/yaml.js';
import { REPO } from './helpers.js';

const example = (): Record<string, unknown> => JSON.parse(readFileSync(join(REPO, 'deploy/cluster.example.json'), 'utf8')) as Record<string, unknown>;

/** Validates one object with the model of its kind; throws the schema's complaint. */
function validate(object: Manifest): void {
  const models: Record<string, new (data: never) => { validate(): void }> = {
    'v1/Service': Service, 'apps/v1/StatefulSet': StatefulSet, 'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
    'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  };
  const Model = models[`${object.apiVersion as string}/${object.kind as string}`];
  if (!Model) throw new Error(`no schema for ${object.apiVersion as string} ${object.kind as string}`);
  new Model(object as never).validate();
}

type Any = Record<string, any>;
const byKind = (objects: Manifest[], kind: string, name?: string): Any =>
  objects.find((o) => o.kind === kind && (name === undefined || (o.metadata as Any).name === name)) as Any;

describe.each([
  ['the example (TLS, auth tokens, settings)', (): ClusterDescription => parseCluster(example())],
  ['a plain cluster (no TLS, no tokens, 5 replicas, a storage class)', (): ClusterDescription => {
    const { tls: _tls, secrets: _secrets, ...rest } = example();
    return parseCluster({ ...rest, secrets: { clusterSecretFile: '/etc/blobstore/cluster-secret' }, kubernetes: { replicas: 5, storageClassName: 'fast-ssd', namespace: 'blobs' } });
  }],
])('Kubernetes manifests of %s', (_what, make) => {
  const cluster = make();
  const objects = kubernetesObjects(cluster, 'us-east-1', cluster.nodes);
  const set = byKind(objects, 'StatefulSet');
  const pod = set.spec.template.spec;
  const container = pod.containers[0];
  const env = Object.fromEntries((container.env as Any[]).map((e) => [e.name, e.value ?? e.valueFrom]));
  const ns = cluster.kubernetes.namespace;

  it('are a headless Service, a client Service, a StatefulSet, a PodDisruptionBudget and a ServiceMonitor', () => {
    expect(objects.map((o) => `${o.kind as string}/${(o.metadata as Any).name as string}`)).toEqual([
      'Service/prod-us-east-1', 'Service/prod-us-east-1-api', 'StatefulSet/prod-us-east-1', 'PodDisruptionBudget/prod-us-east-1', 'ServiceMonitor/prod-us-east-1',
    ]);
    expect(objects.every((o) => (o.metadata as Any).namespace === ns)).toBe(true);
  });

  it('each validates against its schema', () => {
    for (const object of objects) expect(() => validate(object), `${object.kind as string}`).not.toThrow();
    for (const claim of set.spec.volumeClaimTemplates) expect(() => new PersistentVolumeClaim(claim).validate()).not.toThrow();
  });

  it('the validator does catch a broken object (a port given as a word where a number belongs)', () => {
    const broken = structuredClone(set);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
    expect(() => validate(broken)).toThrow(/containerPort must be integer/);
    const monitor = structuredClone(byKind(objects, 'ServiceMonitor'));
    monitor.spec.endpoints = 'metrics';
    expect(() => validate(monitor)).toThrow(/endpoints must be array/);
  });

  it('read back from the YAML as the same objects (parsed by the yaml package)', () => {
    const text = renderKubernetes(cluster, 'us-east-1', cluster.nodes)[0]!.text;
    const docs = parseAllDocuments(text);
    expect(docs.every((d) => d.errors.length === 0)).toBe(true);
    expect(docs.map((d) => d.toJSON() as unknown)).toEqual(JSON.parse(JSON.stringify(objects)));
  });

  it('the headless Service publishes pods before they are ready (they find each other through it)', () => {
    const headless = byKind(objects, 'Service', 'prod-us-east-1');
    expect(headless.spec.clusterIP).toBe('None');
    expect(headless.spec.publishNotReadyAddresses).toBe(true);
    expect(set.spec.serviceName).toBe('prod-us-east-1');
  });

  it('a StatefulSet of N pods started in parallel, each with its own PersistentVolumeClaim for the data dir', () => {
    expect(set.spec.replicas).toBe(cluster.kubernetes.replicas ?? 3);
    expect(set.spec.podManagementPolicy).toBe('Parallel');
    const claim = set.spec.volumeClaimTemplates[0];
    expect(claim.metadata.name).toBe('data');
    expect(claim.spec.resources.requests.storage).toBe(cluster.kubernetes.storageSize);
    expect(claim.spec.storageClassName).toBe(cluster.kubernetes.storageClassName);
    expect(container.volumeMounts).toContainEqual({ name: 'data', mountPath: '/var/lib/blobstore' });
  });

  it("SeedNodes are the pods' DNS names; NodeID is the pod name (downward API); the advertised address its DNS name", () => {
    const n = set.spec.replicas as number;
    const seeds = Array.from({ length: n }, (_, i) => `prod-us-east-1-${i}.prod-us-east-1.${ns}.svc.cluster.local:8080`);
    expect(env.BLOBSTORE_SEED_NODES).toBe(seeds.join(','));
    expect(env.BLOBSTORE_NODE_ID).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(env.BLOBSTORE_ADVERTISE_ADDR).toBe(`$(POD_NAME).prod-us-east-1.${ns}.svc.cluster.local:8080`);
    expect(env.BLOBSTORE_REGION).toBe('us-east-1');
  });

  it('the cluster secret comes from a Secret mounted read-only, by file', () => {
    expect(env.BLOBSTORE_CLUSTER_SECRET_FILE).toBe('/etc/blobstore/secrets/cluster-secret');
    expect(env.BLOBSTORE_CLUSTER_SECRET).toBeUndefined();
    expect(container.volumeMounts).toContainEqual({ name: 'cluster-secret', mountPath: '/etc/blobstore/secrets', readOnly: true });
    expect(pod.volumes).toContainEqual({ name: 'cluster-secret', secret: { secretName: 'prod-cluster-secret', defaultMode: 0o440 } });
  });

  it('readiness is GET /healthz; liveness and startup are gRPC health (TCP with TLS, which the gRPC probe cannot speak)', () => {
    const tls = cluster.tls !== undefined;
    expect(container.readinessProbe.httpGet).toEqual({ path: '/healthz', port: 'api', scheme: tls ? 'HTTPS' : 'HTTP' });
    const live = tls ? { tcpSocket: { port: 'grpc' } } : { grpc: { port: 50051 } };
    expect(container.livenessProbe).toMatchObject(live);
    expect(container.startupProbe).toMatchObject(live);
    expect(container.startupProbe.failureThreshold * container.startupProbe.periodSeconds).toBeGreaterThanOrEqual(60);
  });

  it('runs as the non-root image user with a read-only root file system and no capabilities', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001 });
    expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(container.resources.requests).toBeDefined();
  });

  it('lets the non-root pod bind a port below 1024 by its namespace\'s port floor, only when one is', () => {
    expect(pod.securityContext.sysctls).toBeUndefined();
    const low = parseCluster({ ...example(), ports: { api: 443, grpc: 50051, metrics: 900 } });
    const lowPod = byKind(kubernetesObjects(low, 'us-east-1', low.nodes), 'StatefulSet').spec.template.spec;
    expect(lowPod.securityContext.sysctls).toEqual([{ name: 'net.ipv4.ip_unprivileged_port_start', value: '443' }]);
    expect(lowPod.containers[0].securityContext.capabilities).toEqual({ drop: ['ALL'] });
    validate(byKind(kubernetesObjects(low, 'us-east-1', low.nodes), 'StatefulSet') as Manifest);
  });

  it('a PodDisruptionBudget lets one pod go at a time', () => {
    const budget = byKind(objects, 'PodDisruptionBudget');
    expect(budget.spec).toEqual({ maxUnavailable: 1, selector: set.spec.selector });
  });

  it('a ServiceMonitor scrapes /metrics on the metrics port of the headless Service', () => {
    const monitor = byKind(objects, 'ServiceMonitor');
    const headless = byKind(objects, 'Service', 'prod-us-east-1');
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: 'metrics', path: '/metrics' });
    expect(headless.spec.ports).toContainEqual({ name: 'metrics', port: 9090, targetPort: 'metrics' });
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels as Record<string, string>)) expect(headless.metadata.labels[k]).toBe(v);
    const client = byKind(objects, 'Service', 'prod-us-east-1-api');
    expect(client.metadata.labels['app.kubernetes.io/component']).not.toBe(monitor.spec.selector.matchLabels['app.kubernetes.io/component']);
  });

  it('the ServiceMonitor scrapes with a read token when tokens are on, and checks a name the documented wildcard covers', () => {
    const endpoint = byKind(objects, 'ServiceMonitor').spec.endpoints[0];
    if (cluster.authTokensFile !== undefined) {
      expect(endpoint.authorization).toEqual({ type: 'Bearer', credentials: { name: 'prod-metrics-token', key: 'token' } });
    } else {
      expect(endpoint.authorization).toBeUndefined();
    }
    if (cluster.tls !== undefined) {
      // docs/install.md: the certificate names *.<set>.<namespace>.svc.cluster.local (one label).
      const wildcard = `.prod-us-east-1.${ns}.svc.cluster.local`;
      expect(endpoint.tlsConfig.serverName.endsWith(wildcard)).toBe(true);
      expect(endpoint.tlsConfig.serverName.slice(0, -wildcard.length)).toMatch(/^[a-z0-9-]+$/);
    } else {
      expect(endpoint.tlsConfig).toBeUndefined();
    }
  });
});

describe('the YAML writer', () => {
  it('quotes what a YAML reader would take for something else', () => {
    const value = { a: 'yes', b: '8080', c: '', d: 'x: y', e: '$(POD_NAME).svc:1', f: [], g: {}, h: null, 'odd key': 1, i: [{ j: [1, 'on'] }] };
    const text = toYaml(value);
    expect(parseAllDocuments(text)[0]!.toJSON()).toEqual(value);
    expect(text).toContain('a: "yes"\n');
    expect(text).toContain('b: "8080"\n');
  });
});
