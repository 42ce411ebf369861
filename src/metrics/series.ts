/**
 * Hot-path series kept in preallocated typed arrays and published to prom-client at scrape time.
 *
 * prom-client's own observe()/inc() take a labels object, build a hash string from it and (for
 * histograms) a closure per call: bench/metrics/recorder.bench.ts measures that at ~10x the cost of
 * an indexed typed-array update, with garbage per call. Here a request updates a few numbers in a
 * Float64Array by index; the objects prom-client's Registry formats are built only when scraped.
 *
 * A family has one series per value of its label (or one unlabelled series):
 *
 *   HistogramFamily counts: [series 0: b0 b1 ... b15 +Inf][series 1: ...]   (per-bucket, not cumulative)
 *                   sums:   [series 0][series 1]...
 *   CounterFamily   values: [series 0][series 1]...
 */

/** The spec's latency bounds in seconds (fixed: they cannot be configured); +Inf follows them. */
export const SPEC_BUCKETS: readonly number[] = Object.freeze([
  0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]);
const BOUNDS = Float64Array.from(SPEC_BUCKETS);
/** The bounds in microseconds (whole: 100 us is the least). */
const BOUNDS_US = Float64Array.from(SPEC_BUCKETS, (s) => Math.round(s * 1e6));
/** Buckets per series, +Inf included. */
export const SLOTS = SPEC_BUCKETS.length + 1;

type Labels = Record<string, string | number>;

/** One sample line as prom-client's Registry formats it (it adds the registry's `node` label). */
export interface CollectedValue {
  metricName?: string;
  labels: Labels;
  value: number;
}

/** What prom-client's Registry reads of a metric at scrape time (its .d.ts types the type field as an enum; at run time it is this string). */
export interface Collected {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  values: CollectedValue[];
  aggregator: 'sum';
}

/** A metric prom-client's Registry can hold: a name, and get() at scrape time. */
export interface CollectedMetric {
  readonly name: string;
  readonly help: string;
  get(): Promise<Collected>;
  reset(): void;
}

/** A histogram with the spec's buckets and one series per label value. */
export class HistogramFamily implements CollectedMetric {
  readonly counts: Float64Array;
  readonly sums: Float64Array;

  constructor(
    readonly name: string,
    readonly help: string,
    /** Label name, or '' for a single unlabelled series. */
    readonly labelName: string,
    readonly labelValues: readonly string[],
  ) {
    const series = labelName === '' ? 1 : labelValues.length;
    this.counts = new Float64Array(series * SLOTS);
    this.sums = new Float64Array(series);
  }

  /** Records one value (seconds) in series `series`. No allocation. */
  observe(series: number, seconds: number): void {
    let i = 0;
    while (i < BOUNDS.length && seconds > BOUNDS[i]!) i++;
    this.counts[series * SLOTS + i]! += 1;
    this.sums[series]! += seconds;
  }

  /** observe() of a span in whole microseconds (a small integer: passing it allocates nothing, where a double argument is a heap number). */
  observeMicros(series: number, micros: number): void {
    let i = 0;
    while (i < BOUNDS_US.length && micros > BOUNDS_US[i]!) i++;
    this.counts[series * SLOTS + i]! += 1;
    this.sums[series]! += micros / 1e6;
  }

  count(series: number): number {
    let n = 0;
    for (let i = 0; i < SLOTS; i++) n += this.counts[series * SLOTS + i]!;
    return n;
  }

  /**
   * The q-quantile (0..1) of series `series`, estimated from its buckets the way Prometheus's
   * histogram_quantile() does: linear inside the bucket that holds it; a quantile in the +Inf
   * bucket answers the highest finite bound (60 s). 0 when the series is empty.
   */
  quantile(series: number, q: number): number {
    const total = this.count(series);
    if (total === 0) return 0;
    const rank = q * total;
    let below = 0;
    for (let i = 0; i < SLOTS; i++) {
      const inBucket = this.counts[series * SLOTS + i]!;
      if (below + inBucket >= rank && inBucket > 0) {
        if (i === SLOTS - 1) return BOUNDS[BOUNDS.length - 1]!;
        const lower = i === 0 ? 0 : BOUNDS[i - 1]!;
        return lower + (BOUNDS[i]! - lower) * ((rank - below) / inBucket);
      }
      below += inBucket;
    }
    return BOUNDS[BOUNDS.length - 1]!;
  }

  async get(): Promise<Collected> {
    const values: CollectedValue[] = [];
    const series = this.labelName === '' ? 1 : this.labelValues.length;
    for (let s = 0; s < series; s++) {
      const base: Labels = this.labelName === '' ? {} : { [this.labelName]: this.labelValues[s]! };
      let cumulative = 0;
      for (let i = 0; i < SLOTS; i++) {
        cumulative += this.counts[s * SLOTS + i]!;
        const le = i < BOUNDS.length ? BOUNDS[i]! : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...base, le }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: base, value: this.sums[s]! });
      values.push({ metricName: `${this.name}_count`, labels: base, value: cumulative });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }

  reset(): void {
    this.counts.fill(0);
    this.sums.fill(0);
  }
}

/** A counter with one series per label value (or one unlabelled series). */
export class CounterFamily implements CollectedMetric {
  readonly values: Float64Array;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelName: string,
    readonly labelValues: readonly string[],
  ) {
    this.values = new Float64Array(labelName === '' ? 1 : labelValues.length);
  }

  add(series: number, amount: number): void {
    this.values[series]! += amount;
  }

  value(series: number): number {
    return this.values[series]!;
  }

  async get(): Promise<Collected> {
    const values: CollectedValue[] = [];
    for (let s = 0; s < this.values.length; s++) {
      const labels: Labels = this.labelName === '' ? {} : { [this.labelName]: this.labelValues[s]! };
      values.push({ labels, value: this.values[s]! });
    }
    return { name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' };
  }

  reset(): void {
    this.values.fill(0);
  }
}
