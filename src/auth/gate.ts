/**
 * What a transport asks before it serves a request: does this Authorization header carry a token
 * with the scope? src/auth implements it from the token file; with authentication off the gate
 * lets everything through.
 */
export type Scope = 'read' | 'write' | 'admin';

export interface Gate {
  /** True when requests must carry a bearer token. */
  readonly enabled: boolean;
  /**
   * Throws BlobstoreError 'unauthenticated' (401) without a valid bearer token, or
   * 'permission_denied' (403) when the token lacks `scope`. `authorization` is the raw header
   * (or gRPC metadata value), '' when absent.
   */
  check(authorization: string, scope: Scope): void;
}

export const OPEN_GATE: Gate = { enabled: false, check() {} };
