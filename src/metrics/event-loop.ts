/**
 * Event-loop lag, sampled by perf_hooks.monitorEventLoopDelay, published as a summary: quantiles
 * of the last full window (WINDOW_MS; the window in progress until the first one ends), and
 * _sum/_count over the whole run.
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
    return { p50: h.percentile(50) / NS_PER_S, p99: h.percentile(99) / NS_PER_S, max: h.max / NS_PER_S };
  }

  private roll(): void {
    const h = this.histogram;
    this.window = this.current();
    this.count += h.count;
    this.sumSeconds += (h.mean * h.count) / NS_PER_S;
    h.reset();
  }

  quantiles(): LagQuantiles {
    return this.window ?? this.current();
  }

  /** Lifetime sample count and sum, including the window in progress. */
  totals(): { count: number; sumSeconds: number } {
    const h = this.histogram;
    return { count: this.count + h.count, sumSeconds: this.sumSeconds + (h.count === 0 ? 0 : (h.mean * h.count) / NS_PER_S) };
  }

  close(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
