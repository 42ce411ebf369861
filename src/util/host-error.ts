/**
 * A problem of the host's or of its files, not a bug: an address taken, an index file damaged.
 * A start that fails with one says it in one log line (no stack) and exits 1.
 */
export class HostError extends Error {
  override readonly name: string = 'HostError';
}
