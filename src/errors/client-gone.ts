/**
 * The client went away before its answer was complete: it closed the connection during a
 * download, or cancelled a gRPC call. The transport throws this into the read to stop it. It is
 * not a failure of the node (nothing is answered or logged, and it never counts as a storage
 * error, which operators alert on): metrics count it as errors_total{type="cancelled"}.
 */
export class ClientGone extends Error {
  constructor() {
    super('client went away');
    this.name = 'ClientGone';
  }
}

/** Whether `err` is a ClientGone, or an error caused by one (toBlobstoreError wraps it). */
export function isClientGone(err: unknown): boolean {
  return err instanceof ClientGone || (err instanceof Error && err.cause instanceof ClientGone);
}
