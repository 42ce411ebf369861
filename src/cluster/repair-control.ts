/**
 * The repair priority knob. Repair, anti-entropy and handoff share one bandwidth cap
 * (repairBytesPerSecond); an admin raises it for a while (POST /v1/cluster/repair), and it falls
 * back to the setting when the time is up, so a heal can be sped up without a restart and without
 * being forgotten at the higher rate.
 */
import { invalidArgument } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { TokenBucket } from './token-bucket.js';

/** Longest boost one call may ask for. */
const BOOST_MAX_SECONDS = 7 * 24 * 3600;

/** What cluster/state, the metrics and the UI show of repair on a node. */
export interface RepairView {
  /**
   * Blobs queued for repair (EC blobs to rebuild columns of, and replicas a peer lacks), the bytes
   * they are estimated to need, and the rate of the last pass.
   */
  queue_depth: number;
  bytes_left: number;
  bytes_per_second: number;
  /** bytes_left at the current rate (or the cap when idle); 0 when nothing is queued. */
  eta_seconds: number;
  /** The cap in force, the setting's value, and when a raised cap ends (Unix ms; 0: none). */
  rate_limit_bytes_per_second: number;
  base_rate_bytes_per_second: number;
  boosted_until_ms: number;
  /** EC columns rebuilt, replicas copied, and the bytes of both, since start. */
  columns_repaired: number;
  blobs_repaired: number;
  bytes_repaired: number;
  scrub: { active: boolean; passes: number; bytes_checked: number; corrupt_found: number };
}

export class RepairControl {
  readonly bucket: TokenBucket;
  private timer: NodeJS.Timeout | undefined;
  private untilMs = 0;

  constructor(
    private readonly baseBytesPerSecond: number,
    private readonly log: Logger,
  ) {
    this.bucket = new TokenBucket(baseBytesPerSecond);
  }

  get baseRate(): number {
    return this.baseBytesPerSecond;
  }

  get boostedUntilMs(): number {
    return this.untilMs;
  }

  /** Sets the cap to `bytesPerSecond` (0: none) for `seconds`, then back to the setting. */
  boost(bytesPerSecond: number, seconds: number): void {
    if (!Number.isSafeInteger(bytesPerSecond) || bytesPerSecond < 0) throw invalidArgument('bytes_per_second must be a non-negative integer (0: no cap)');
    if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > BOOST_MAX_SECONDS) throw invalidArgument(`seconds must be an integer from 1 to ${BOOST_MAX_SECONDS}`);
    clearTimeout(this.timer);
    this.bucket.setRate(bytesPerSecond);
    this.untilMs = Date.now() + seconds * 1000;
    this.timer = setTimeout(() => this.reset(), seconds * 1000);
    this.timer.unref();
    this.log.info({ bytesPerSecond, seconds }, `repair: bandwidth cap ${bytesPerSecond || 'removed'} for ${seconds} s`);
  }

  /** Back to the setting. */
  reset(): void {
    clearTimeout(this.timer);
    this.untilMs = 0;
    this.bucket.setRate(this.baseBytesPerSecond);
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
