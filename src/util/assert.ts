/** Invariant checks. A failed assertion is a bug, never control flow. */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
