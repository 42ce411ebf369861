/**
 * A part of a node that a later stage of its start makes, as the parts made before it see it.
 * The metrics exist before the engine (it records into them as it opens) and the listeners before
 * the cluster (peers learn the node's ports from them): each of those takes a LateRead of what
 * comes later, and the node's builder (src/node/) sets it once, when it has made the part.
 *
 *   builder: new Late(...) ──▶ given to the early parts ──▶ set(part), once
 *   early part:              peek(): undefined, then the part
 *                            get():  the `early` error (a 503 for the cluster), then the part
 */
import { AssertionError, assert } from './assert.js';

/** The read side: what an early part holds. Only the builder holds the Late that sets it. */
export interface LateRead<T> {
  /** The part, or undefined while the node's start has not made it. */
  peek(): T | undefined;
  /** The part; before it is made, throws the error the handle was made with. */
  get(): T;
}

export class Late<T> implements LateRead<T> {
  private value: T | undefined;

  constructor(
    /** What the part is, for the messages of a bug (a second set, a get nobody expected early). */
    private readonly what: string,
    /** What get() throws before the part is made, when that is part of the protocol (a 503). */
    private readonly early?: () => Error,
  ) {}

  /** The builder's one write: the part is made. */
  set(value: T): void {
    assert(value !== undefined, `${this.what} is set to a part, not undefined`);
    assert(this.value === undefined, `${this.what} is set once`);
    this.value = value;
  }

  peek(): T | undefined {
    return this.value;
  }

  get(): T {
    if (this.value !== undefined) return this.value;
    // Without an `early` error, nobody was meant to read it before it is made: a bug.
    throw this.early?.() ?? new AssertionError(`${this.what} was read before the node's start made it`);
  }
}
