/**
 * What the client's calls fail with: one class, a kind a caller (or the CLI's exit code) can act
 * on, the node's status and message when a node answered.
 *
 *   usage        the caller's input (an id that is no id, no URL)           never sent
 *   invalid      the node refused the request (400, 412, 413, 415)
 *   auth         401, 403
 *   not_found    404
 *   unavailable  503, 507, 502, 504: worth another node or a later attempt
 *   timeout      408, or no progress for timeoutMs
 *   network      refused, reset, or a body cut short
 *   corrupt      the bytes read are not the blob the id names
 *   failed       anything else a node answered
 */
export type ClientErrorKind = 'usage' | 'invalid' | 'auth' | 'not_found' | 'unavailable' | 'timeout' | 'network' | 'corrupt' | 'failed';

export class BlobClientError extends Error {
  override readonly name: string = 'BlobClientError';
  /** The node's HTTP status, when one answered. */
  readonly status: number | undefined;
  /** The node's Retry-After, in ms. */
  readonly retryAfterMs: number | undefined;
  /** Not to be retried even where the kind would be (bytes already went to the caller). */
  readonly final: boolean;

  constructor(
    readonly kind: ClientErrorKind,
    message: string,
    options: { status?: number; retryAfterMs?: number; final?: boolean; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.final = options.final ?? false;
  }
}

/** The bytes a node sent for `id` hash to another id: they were never the blob's. */
export class BlobIdMismatch extends BlobClientError {
  override readonly name = 'BlobIdMismatch';

  constructor(
    readonly id: string,
    readonly actual: string,
    readonly url: string,
  ) {
    super('corrupt', `the bytes ${url} sent for ${id} hash to ${actual}: not the blob`, { final: true });
  }
}
