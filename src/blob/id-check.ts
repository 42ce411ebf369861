/**
 * A whole blob's bytes checked against its id as they pass on their way to a client, for a node
 * that serves bytes it did not read from its own disk (a peer's copy, EC columns). The check runs
 * when the last byte has come, before those bytes are handed on: a mismatch then cuts the answer
 * short of its length, so no client takes wrong bytes as the blob.
 */
import { createHasher, type IncrementalHasher } from '../hash/blake3.js';
import { idOfDigest } from './id.js';

export class IdCheck {
  private readonly hasher: IncrementalHasher = createHasher();
  private seen = 0;
  private checked = false;

  constructor(
    private readonly id: Buffer,
    private readonly size: number,
  ) {}

  /** Adds the next bytes; false when they complete the blob and it does not hash to the id. */
  add(bytes: Buffer): boolean {
    this.hasher.update(bytes);
    this.seen += bytes.length;
    return this.seen !== this.size || this.matches();
  }

  /** Whether the bytes seen are the blob (for one that ended without add() seeing its last byte: an empty one). */
  matches(): boolean {
    this.checked = true;
    return this.seen === this.size && idOfDigest(this.hasher.digest()).equals(this.id);
  }

  /** The check has run (add() saw the last byte, or matches() was asked). */
  get done(): boolean {
    return this.checked;
  }
}
