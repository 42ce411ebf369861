/**
 * What the request path reports to metrics. Transports and the blob service call a Recorder;
 * src/metrics implements it with prom-client. Calls take a start time in ticks (clock.ts: a
 * small integer, no heap number) and must not allocate: they run once or more per request on the
 * hot path.
 */
import { type BlobstoreError, toBlobstoreError } from '../errors/errors.js';
import type { Ticks } from './clock.js';

export const OPERATIONS = ['put', 'get', 'delete', 'stat', 'list'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Stages of a request, each with its own latency histogram (the spec's buckets). */
export const STAGES = ['receive', 'hash', 'write', 'fsync', 'index', 'read', 'verify', 'respond'] as const;
export type Stage = (typeof STAGES)[number];

export interface Recorder {
  /** A request that succeeded: latency since `start`; `bytes` read or written (0 for none). */
  done(op: Operation, start: Ticks, bytes: number): void;
  /**
   * A request that failed with `err`: counted in request_failures_total, and in errors_total
   * unless it is a corruption (those are counted once, where the corrupt copy is found).
   */
  failed(op: Operation, err: BlobstoreError): void;
  /** An error outside a request's outcome: a corrupt copy found (served from elsewhere, or by a scrub), a failed background copy. */
  countError(err: BlobstoreError): void;
  /**
   * One stage of a request took from `start` until now; returns that now (the next stage's
   * start: one clock reading, not two). Without metrics (NO_RECORDER) it reads no clock: 0.
   */
  stage(stage: Stage, start: Ticks): Ticks;
}

export const NO_RECORDER: Recorder = { done() {}, failed() {}, countError() {}, stage: () => 0 as Ticks };

/** The errors already counted as a request's failure (by the original object thrown). */
const counted = new WeakSet<object>();

/**
 * Counts a request's failure once, however many layers it passes on its way out: the service
 * counts what fails inside it, and a transport counts at its boundary what failed before or
 * around the service (a bad argument, a credential, an upload slot), so that every request a
 * transport answers with an error is counted, whichever transport it came by.
 */
export function countFailure(recorder: Recorder, op: Operation, err: unknown): void {
  if (typeof err === 'object' && err !== null) {
    if (counted.has(err)) return;
    counted.add(err);
  }
  recorder.failed(op, toBlobstoreError(err));
}
