/**
 * The request clock (src/metrics/clock.ts): ticks are monotonic microseconds modulo 2^30, small
 * integers (no heap number per reading); spans subtract modulo 2^30, across the wrap too.
 */
import { describe, expect, it } from 'vitest';
import { microsBetween, type Ticks, ticks, ticksAgo, TICKS_MASK } from '../../src/metrics/clock.js';

const t = (n: number): Ticks => n as Ticks;

describe('ticks', () => {
  it('are whole numbers below 2^30 that count microseconds, as performance.now() counts milliseconds', async () => {
    const start = ticks();
    const startMs = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 30)); // time is the subject: a span both clocks measure
    const end = ticks();
    const spanMs = performance.now() - startMs;
    for (const x of [start, end]) {
      expect(Number.isInteger(x)).toBe(true);
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(TICKS_MASK);
    }
    // The same span by both clocks (read a few microseconds apart): the unit is right.
    expect(Math.abs(microsBetween(start, end) / 1000 - spanMs)).toBeLessThan(5);
  });

  it('a span subtracts modulo 2^30, across the wrap', () => {
    expect(microsBetween(t(100), t(350))).toBe(250);
    expect(microsBetween(t(TICKS_MASK - 9), t(5))).toBe(15);
    expect(microsBetween(t(7), t(7))).toBe(0);
  });

  it('ticksAgo gives the start of a span measured elsewhere (in ms), across the wrap too', () => {
    expect(ticksAgo(1.5, t(10_000))).toBe(8_500);
    expect(ticksAgo(0.02, t(5))).toBe(TICKS_MASK - 14);
    expect(microsBetween(ticksAgo(2, t(123)), t(123))).toBe(2000);
  });
});
