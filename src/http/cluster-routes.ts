/**
 * /v1/cluster/*: the spec's cluster endpoints over HTTP, a transcoding of ClusterApi (the same
 * calls gRPC's ClusterService makes). A peer presents the cluster secret in
 * `X-Blobstore-Cluster-Secret`; anyone else needs a token with the admin scope, or with tokens
 * off, on a node reachable beyond loopback, the secret too (src/auth/access.ts). Bodies are small
 * JSON objects (at most clusterBodyMaxBytes). Variant A writes int64 fields as strings (protojson).
 */
import { checkPeerOrAdmin } from '../auth/access.js';
import { type ClusterApi, HeartbeatDenied } from '../cluster/cluster-api.js';
import { SECRET_METADATA } from '../cluster/transport/peer-link.js';
import { invalidArgument, payloadTooLarge } from '../errors/errors.js';
import type { Gate } from '../auth/gate.js';
import { type Exchange, newExchange, sendError, sendJson, writeAnswer, writeError } from './reply.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import type { Wire } from './wire.js';
import type { Logger } from '../log/logger.js';

/** Cluster request bodies are a few hundred bytes; a join carries the member list at most. */
const BODY_MAX_BYTES = 1024 * 1024;

/** Fields that are int64/uint64 in cluster.proto (strings in variant A). */
const INT64_FIELDS = new Set(['ring_version', 'capacity_bytes', 'used_bytes', 'blob_count', 'incarnation', 'bytes_left', 'bytes_repaired', 'bytes_checked']);

function encode(wire: Wire, value: unknown): string {
  if (wire.variant === 'b') return JSON.stringify(value);
  return JSON.stringify(value, (key, v: unknown) => (INT64_FIELDS.has(key) && typeof v === 'number' ? String(v) : v));
}

export class ClusterRoutes {
  constructor(
    private readonly api: ClusterApi,
    private readonly gate: Gate,
    private readonly wire: Wire,
    private readonly log: Logger,
  ) {}

  private authorize(req: HttpRequest, reading = false): void {
    const fromPeer = this.api.fromPeer(req.getHeader(SECRET_METADATA));
    checkPeerOrAdmin(this.gate, { fromPeer, authorization: req.getHeader('authorization') }, { guarded: this.api.guarded, reading });
  }

  /** A POST route: the JSON body is read (bounded), then `handle` answers it. */
  private post(handle: (body: unknown) => unknown): (res: HttpResponse, req: HttpRequest) => void {
    return (res, req) => {
      const x = newExchange(res, this.wire, this.log);
      try {
        this.authorize(req);
      } catch (err) {
        res.onData(() => undefined);
        return sendError(x, err, 'drain');
      }
      const parts: Buffer[] = [];
      let size = 0;
      res.onData((chunk, isLast) => {
        if (x.done || x.aborted) return;
        size += chunk.byteLength;
        if (size > BODY_MAX_BYTES) return sendError(x, payloadTooLarge(`cluster request body over ${BODY_MAX_BYTES} bytes`), 'drain');
        parts.push(Buffer.from(chunk.slice(0)));
        if (!isLast) return;
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}');
        } catch {
          return sendError(x, invalidArgument('the request body is not JSON'));
        }
        void this.answer(x, () => handle(body));
      });
    };
  }

  private async answer(x: Exchange, fn: () => unknown): Promise<void> {
    try {
      sendJson(x, 200, encode(this.wire, await fn()));
    } catch (err) {
      if (err instanceof HeartbeatDenied) {
        // The spec's 404 for a heartbeat of an unknown node carries `commands` beside the error.
        const error = JSON.parse(this.wire.errorBody(err)) as object;
        return sendJson(x, 404, encode(this.wire, { ...error, ...err.response }));
      }
      sendError(x, err);
    }
  }

  readonly join = this.post((body) => this.api.join(body));
  readonly leave = this.post((body) => this.api.leave(body));
  readonly heartbeat = this.post((body) => this.api.heartbeat(body));
  readonly syncRing = this.post((body) => this.api.syncRing(body));
  readonly repair = this.post((body) => this.api.repair(body));
  readonly bootstrap = this.post((body) => this.api.bootstrap(body));

  /** GET (and HEAD, through the Router) /v1/cluster/state. */
  readonly state = (res: HttpResponse, req: HttpRequest, head: boolean): void => {
    try {
      this.authorize(req, true);
      writeAnswer(res, { status: 200, contentType: 'application/json', body: encode(this.wire, this.api.state()) }, head);
    } catch (err) {
      writeError(res, err, this.wire, this.log, head);
    }
  };
}
