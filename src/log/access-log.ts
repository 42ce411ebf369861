/**
 * The access log: one line per request a listener answered (HTTP: the API and metrics
 * listeners, src/http/logged-response.ts; gRPC: every call, src/grpc/access.ts), with what an
 * operator asks of a request and nothing a client sent beyond its request id and trace context:
 *
 *   {"level":"debug",...,"access":"http","method":"GET","route":"/v1/blobs/:id","status":200,"bytes":4096,
 *    "ms":0.087,"peer":"127.0.0.1","reqId":"abc-1","msg":"GET /v1/blobs/:id 200 4096 B 0.087 ms"}
 *
 * `route` is the pattern the request matched (for gRPC, `method` is the rpc and `status` its
 * code), `bytes` the body bytes sent, `ms` the time from the route's start to the last byte
 * handed to the socket (or to the abort, with `aborted`). No header other than X-Request-Id
 * and traceparent is read for it: never Authorization, a token or the cluster secret. Nor is
 * the path: a client may put anything in it, a misplaced token included (test/auth/logs.test.ts
 * sends some there), and a token made of 32 hex digits would pass for a blob id.
 *
 * Which requests: at log level debug (or trace) every one, written at debug; at info, one in
 * `accessLogEvery` (0, the default: none), written at info. A node taking 30k small requests a
 * second would write 30k lines a second at info otherwise. The choice is made once per request,
 * before anything is measured: a request not logged costs a counter and a comparison or two
 * (bench/node/access-log-4KiB.bench.ts; docs/adr/0014-access-log.md). The level is read when the
 * listener is built: the node sets it once, at start.
 *
 * Trace context: a request's W3C `traceparent` (when well formed) is on its line, and a direct
 * call made to a peer on its behalf (a blob read from the peer's API listener,
 * src/cluster/http-fetcher.ts) carries it on, so the peer's line of that read has it too.
 * Batched background work (replication batches, anti-entropy, repair, handoff) serves many
 * requests at once and carries none.
 */
import type { Logger } from './logger.js';

/** One answered request, as its line gives it. */
export interface AccessEntry {
  /** `http` or `grpc`. */
  access: 'http' | 'grpc';
  /** HTTP method (upper case), or the gRPC rpc (`BlobService.Get`). */
  method: string;
  /** HTTP: the route pattern matched (`/v1/blobs/:id`). */
  route?: string;
  /** HTTP status, or the gRPC status code. */
  status: number;
  bytes: number;
  ms: number;
  reqId?: string;
  peer: string;
  traceparent?: string;
  /** The client went away before the answer was complete (or it was cut short). */
  aborted?: boolean;
}

/** A W3C traceparent of version 00 (https://www.w3.org/TR/trace-context/#traceparent-header). */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** `value` when it is a well-formed traceparent, else undefined (a malformed one is not passed on). */
export function traceparentOf(value: string | undefined): string | undefined {
  return value !== undefined && value.length === 55 && TRACEPARENT.test(value) ? value : undefined;
}

export class AccessLog {
  /** Log one request in this many; 0: none. */
  private readonly every: number;
  private count = 0;
  private readonly level: 'debug' | 'info';
  /**
   * The node's logger without its redaction: an entry's fields are these few, none a header a
   * secret travels in, and redaction's wildcard paths cost a line ~2/3 of its time (~14 of ~23 us
   * per line, a loaded 2-core VM).
   */
  private readonly log: Logger;

  /** `every`: the setting accessLogEvery (used at info; debug logs every request). */
  constructor(log: Logger, every: number) {
    this.log = log.child({}, { redact: { paths: [] } });
    if (log.isLevelEnabled('debug')) {
      this.every = 1;
      this.level = 'debug';
    } else {
      this.every = log.isLevelEnabled('info') ? every : 0;
      this.level = 'info';
    }
  }

  /** Whether the request beginning now is logged (called once per request). */
  sampled(): boolean {
    const every = this.every;
    if (every === 0) return false;
    if (++this.count < every) return false;
    this.count = 0;
    return true;
  }

  write(e: AccessEntry): void {
    const what = e.access === 'http' ? `${e.method} ${e.route}` : `gRPC ${e.method}`;
    const msg = `${what} ${e.status}${e.aborted ? ' (aborted)' : ''} ${e.bytes} B ${e.ms} ms`;
    if (this.level === 'debug') this.log.debug(e, msg);
    else this.log.info(e, msg);
  }
}

/** Milliseconds since `startNs` (process.hrtime.bigint()), to the microsecond. */
export function msSince(startNs: bigint): number {
  return Math.round(Number(process.hrtime.bigint() - startNs) / 1e3) / 1e3;
}
