/**
 * Now in ns (ms resolution), as records carry it (createdAtNs): the wall clock is read, and a
 * BigInt made, once per millisecond of the monotonic clock (ticks: a small integer), not per
 * record (Date.now() answers a heap number).
 */
import { ticks, TICKS_MASK } from '../metrics/clock.js';

let nowTicksCached = 0;
let nowNsCached = -1n;

export const nowNs = (): bigint => {
  const t = ticks();
  if (nowNsCached < 0n || ((t - nowTicksCached) & TICKS_MASK) >= 1000) {
    nowTicksCached = t;
    nowNsCached = BigInt(Date.now()) * 1_000_000n;
  }
  return nowNsCached;
};
