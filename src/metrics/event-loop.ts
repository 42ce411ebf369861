/**
 * Event-loop lag, sampled by perf_hooks.monitorEventLoopDelay, published as a summary: quantiles
 * of the last full window (WINDOW_MS; the window in progress until the first one ends), and
 * _sum/_count over the whole run. The monitor records the time between its timer's runs, which
 * includes the timer's own interval: the lag is what exceeds it.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** How often the quantiles roll over to a fresh window. */
const WINDOW_MS = 10_000;
/** Sampling resolution of the monitor (its timer fires this often). */
const RESOLUTION_MS = 10;

export interface LagQuantiles {
  p50: number;
  p99: number;
  max: number;
}

const NS_PER_S = 1e9;
const RESOLUTION_NS = RESOLUTION_MS * 1e6;

/** Seconds by which a recorded interval (ns) overran the timer's own interval. */
const lagSeconds = (ns: number): number => Math.max(0, ns - RESOLUTION_NS) / NS_PER_S;

export class EventLoopLag {
  private readonly histogram: IntervalHistogram;
  private readonly timer: NodeJS.Timeout;
  private window: LagQuantiles | undefined;
  /** Samples and their sum (seconds) in finished windows. */
  private count = 0;
  private sumSeconds = 0;

  constructor() {
    this.histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.histogram.enable();
    this.timer = setInterval(() => this.roll(), WINDOW_MS);
    this.timer.unref();
  }

  private current(): LagQuantiles {
    const h = this.histogram;
    if (h.count === 0) return { p50: 0, p99: 0, max: 0 };
    return { p50: lagSeconds(h.percentile(50)), p99: lagSeconds(h.percentile(99)), max: lagSeconds(h.max) };
  }

  private roll(): void {
    const h = this.histogram;
    this.window = this.current();
    this.count += h.count;
    this.sumSeconds += h.count === 0 ? 0 : lagSeconds(h.mean) * h.count;
    h.reset();
  }

  quantiles(): LagQuantiles {
    return this.window ?? this.current();
  }

  /** Lifetime sample count and sum, including the window in progress. */
  totals(): { count: number; sumSeconds: number } {
    const h = this.histogram;
    return { count: this.count + h.count, sumSeconds: this.sumSeconds + (h.count === 0 ? 0 : lagSeconds(h.mean) * h.count) };
  }

  close(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
