/**
 * The standard process and Node.js runtime series (prom-client's default collectors: process_*
 * CPU, memory, file descriptors, start time; nodejs_* event-loop lag, heap spaces, GC durations,
 * active handles and resources, version), in the node's registry, so they carry its `node`
 * label. Their names are the ones the usual Node.js dashboards query; nodejs_gc_duration_seconds
 * (label `kind`) uses the spec's latency buckets.
 *
 * prom-client declares three of them, nodejs_active_{handles,requests,resources}_total, as gauges
 * named like counters, which promtool rejects; no spec fixes their type, so they are exposed
 * untyped instead (Prometheus stores and queries untyped like a gauge) and promtool's findings stay
 * the spec's four (src/metrics/README.md).
 */
import { collectDefaultMetrics, type Gauge, type Registry } from 'prom-client';
import { type Collected, type CollectedMetric, SPEC_BUCKETS } from './series.js';

const GAUGES_NAMED_LIKE_COUNTERS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

export function registerRuntimeMetrics(registry: Registry): void {
  // GC durations take the spec's bounds too: every histogram on /metrics has the same buckets.
  collectDefaultMetrics({ register: registry, gcDurationBuckets: [...SPEC_BUCKETS] });
  for (const name of GAUGES_NAMED_LIKE_COUNTERS) {
    const metric = registry.getSingleMetric(name);
    if (metric === undefined) continue;
    registry.removeSingleMetric(name);
    registry.registerMetric(new Untyped(metric as unknown as CollectedMetric) as unknown as Gauge);
  }
}

/** Another metric's values under the type `untyped`. */
class Untyped implements CollectedMetric {
  readonly name: string;
  readonly help: string;

  constructor(private readonly inner: CollectedMetric) {
    this.name = inner.name;
    this.help = `${inner.help} (A gauge; untyped because of its name.)`;
  }

  async get(): Promise<Collected> {
    return { ...(await this.inner.get()), help: this.help, type: 'untyped' };
  }

  reset(): void {
    this.inner.reset();
  }
}
