/**
 * The fast path of a small raw store: a body of known length up to one chunk (1 MiB, and at most
 * smallBlobMaxBytes), of a policy the service takes this way (BlobService.takesSmallStore: a
 * whole blob, not erasure coded). In a cluster its record carries the replicate flag and its
 * answer waits for BlobService.copiesOf, as a store the long way waits at the commit point. The general path (BlobWriter through
 * Intake.receive) costs a body buffer, an Exchange, closures and a promise per layer; this one
 * costs none of them:
 *
 *   route ─▶ a pooled SmallStore (handlers bound once) ─▶ onData: the body in one piece?
 *      yes: copied into its log record straight from uWS's buffer (Engine.putSmall), hashed with
 *           the turn's other small stores as the log's next turn begins
 *      no:  gathered in a pooled 1 MiB chunk (watched for idleness), then the same
 *   ─▶ stored(): the record is durable (or the bytes were stored already) ─▶ 201 / 200
 *
 * A SmallStore goes back to the pool once its answer is written, or once the client is gone and
 * nothing can call it any more. Upload slots, graceful shutdown and idle bodies work as on the
 * general path (intake.ts).
 */
import { CHUNK_BYTES } from '../blob/chunk.js';
import type { Policy } from '../blob/policy.js';
import type { NodeConfig } from '../config/settings.js';
import { BlobstoreError, invalidArgument, toBlobstoreError } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { BlobService, SmallStoreDone } from '../service/blob-service.js';
import type { Intake, Receiving } from './intake.js';
import type { PutResult } from '../blob/meta.js';
import { clientRequestId } from './logged-response.js';
import { errorAnswer, writeAnswer } from './reply.js';
import { statusLine } from './status-line.js';
import type { HttpResponse } from './uws.js';
import type { Wire } from './wire.js';
import { type Ticks, ticks } from '../metrics/clock.js';
import { copyBytes } from '../util/copy-bytes.js';

/** SmallStore states: receiving its body, waiting for the engine, or with nobody left to answer. */
const RECEIVING = 0;
const STORING = 1;
const GONE = 2;

/** The id of a store that failed before it had one. */
const EMPTY_ID = Buffer.alloc(16);

/** At most this many idle SmallStores are kept for reuse. */
const POOL_MAX = 256;

export class SmallStores {
  private readonly free: SmallStore[] = [];
  readonly answers: AnswerWriter;

  constructor(
    readonly service: BlobService,
    readonly config: NodeConfig,
    readonly intake: Intake,
    readonly wire: Wire,
    readonly log: Logger,
  ) {
    this.answers = new AnswerWriter(wire);
  }

  /** Bodies this path takes: up to one pooled chunk, and no larger than a segment record may hold. */
  get maxBytes(): number {
    return Math.min(CHUNK_BYTES, this.config.smallBlobMaxBytes);
  }

  /**
   * Takes over the request (from the route, its headers checked): an upload slot (503 when none is
   * free, thrown before anything is registered), then the body.
   */
  begin(res: HttpResponse, policy: Policy, labels: Buffer, length: number, start: Ticks): void {
    this.service.takeUpload();
    const s = this.free.pop() ?? new SmallStore(this);
    s.start(res, policy, labels, length, start);
  }

  /** A SmallStore is done with its request (and may serve another if `reuse`). */
  recycle(s: SmallStore, reuse: boolean): void {
    this.service.releaseUpload();
    this.intake.inflight--;
    if (reuse && this.free.length < POOL_MAX) this.free.push(s);
  }
}

class SmallStore implements SmallStoreDone, Receiving {
  private res: HttpResponse | undefined;
  private state = GONE;
  private policy: Policy = 0;
  private labels: Buffer | undefined;
  private length = 0;
  private received = 0;
  /** The clock at the request (ticks). */
  private startAt = 0 as Ticks;
  /** The body so far, when it comes in more than one piece. */
  private gathered: Buffer | undefined;
  private lastMs = 0;
  /** What stored() answers (read by `answer`, run inside cork). */
  private id: Buffer | undefined;
  /** The bytes of a store that replicates, for the replicator (store()). */
  private copy: Buffer | undefined;
  private existed = false;
  private error: BlobstoreError | undefined;

  constructor(private readonly owner: SmallStores) {}

  start(res: HttpResponse, policy: Policy, labels: Buffer, length: number, startAt: Ticks): void {
    this.res = res;
    this.state = RECEIVING;
    this.policy = policy;
    this.labels = labels;
    this.length = length;
    this.received = 0;
    this.startAt = startAt;
    this.owner.intake.inflight++;
    res.onAborted(this.onAborted);
    res.onData(this.onData);
  }

  private readonly onData = (ab: ArrayBuffer, isLast: boolean): void => {
    if (this.state !== RECEIVING) return;
    const n = ab.byteLength;
    if (this.received === 0 && isLast) {
      if (n !== this.length) return this.fail(invalidArgument(`body of ${n} bytes does not match its Content-Length of ${this.length}`));
      this.received = n;
      // uWS's ArrayBuffer itself (valid during this call): no view of it is made.
      return this.store(ab);
    }
    if (this.received + n > this.length) return this.fail(invalidArgument(`body longer than its Content-Length of ${this.length} bytes`));
    if (this.gathered === undefined) {
      this.gathered = this.owner.service.store.pool.tryAcquire() ?? Buffer.allocUnsafeSlow(this.length);
      this.owner.intake.watch(this);
    }
    // Native memcpy, no view: set() into a pool buffer (shared memory) is V8's slow relaxed copy.
    copyBytes(ab, this.gathered, this.received);
    this.received += n;
    this.lastMs = Date.now();
    if (!isLast) return;
    this.owner.intake.unwatch(this);
    if (this.received !== this.length) return this.fail(invalidArgument(`body of ${this.received} bytes does not match its Content-Length of ${this.length}`));
    this.store(this.gathered.subarray(0, this.received));
    this.releaseGathered();
  };

  /** The whole body is in (bytes valid during this call): to the engine, which copies it. */
  private store(body: Uint8Array | ArrayBuffer): void {
    const { service } = this.owner;
    service.recorder.stage('receive', this.startAt);
    this.state = STORING;
    const replicate = service.replicates(this.policy);
    // In a cluster the replicator sends these bytes to the owners rather than reading them back.
    if (replicate) this.copy = service.freshCopy(body);
    try {
      service.putSmall(body, this.policy, this.labels!, this, replicate);
    } catch (err) {
      // Nothing was appended (putSmall calls back once whenever it returns): answered here.
      this.stored(err as Error, EMPTY_ID, false);
    }
  }

  stored(err: Error | undefined, id: Buffer, existed: boolean): void {
    const copy = this.copy;
    this.copy = undefined;
    if (err !== undefined || copy === undefined) return this.finish(err, id, existed);
    // Durable here; its copies go out (and, with replicationAcks, are waited for) before the
    // answer. The id belongs to the engine's pooled record: copied.
    const own = Buffer.from(id);
    const copies = this.owner.service.copiesOf(own, copy);
    if (copies === undefined) return this.finish(undefined, own, existed);
    copies.then(() => this.finish(undefined, own, existed), (e: Error) => this.finish(e, own, existed));
  }

  /** The store is over (stored, and copied where it must be): answered, unless the client left. */
  private finish(err: Error | undefined, id: Buffer, existed: boolean): void {
    if (this.state === GONE) return this.recycle(true);
    const { service } = this.owner;
    if (err) {
      this.error = toBlobstoreError(err);
      service.recordFailure('put', this.error);
    } else {
      this.id = id;
      this.existed = existed;
      service.recorder.done('put', this.startAt, this.received);
    }
    const respondStart = ticks();
    this.res!.cork(this.answer);
    service.recorder.stage('respond', respondStart);
    this.recycle(true);
  }

  /** Writes the answer stored() set (inside cork). */
  private readonly answer = (): void => {
    const res = this.res!;
    if (this.error !== undefined) {
      const { wire, log } = this.owner;
      writeAnswer(res, errorAnswer(this.error, wire, log, clientRequestId(res)));
      return;
    }
    this.owner.answers.write(res, this.id!, this.received, !this.existed);
  };

  /**
   * A refused body: answered at once, the connection closed (the rest of the body is not read).
   * Not reused: nothing more of this request should reach it, but a closing connection is no
   * place to bet on that.
   */
  private fail(err: BlobstoreError): void {
    this.owner.service.recordFailure('put', err);
    this.owner.intake.unwatch(this);
    this.releaseGathered();
    writeAnswer(this.res!, errorAnswer(err, this.owner.wire, this.owner.log, clientRequestId(this.res!)), false, 'now');
    this.recycle(false);
  }

  private readonly onAborted = (): void => {
    if (this.state === GONE) return;
    const storing = this.state === STORING;
    this.state = GONE;
    this.res = undefined;
    if (storing) return; // stored() (or finish(), after the copies) comes and recycles.
    this.owner.intake.unwatch(this);
    this.releaseGathered();
    this.recycle(true);
  };

  // Receiving (intake.ts: idle bodies).
  lastActivityMs(): number {
    return this.lastMs;
  }

  expire(err: BlobstoreError): void {
    if (this.state !== RECEIVING) return;
    this.fail(err);
  }

  private releaseGathered(): void {
    const g = this.gathered;
    if (g === undefined) return;
    this.gathered = undefined;
    if (g.buffer instanceof SharedArrayBuffer && g.length === CHUNK_BYTES) this.owner.service.store.pool.release(g);
  }

  /** The request is over: its slot goes back, and this object to the pool if `reuse`. */
  private recycle(reuse: boolean): void {
    this.state = GONE;
    this.res = undefined;
    this.labels = undefined;
    this.id = undefined;
    this.copy = undefined;
    this.error = undefined;
    this.owner.recycle(this, reuse);
  }
}

/**
 * The answer of a store: status line, Content-Type and the body, which in variant B is written
 * into a reused buffer (`{"id":"<hex>","size":N}`) instead of built as a string per request.
 */
class AnswerWriter {
  private readonly body = Buffer.alloc(64);
  /** Views of `body` by length (the size's digits vary): made once each. */
  private readonly views: Buffer[] = [];
  /** The store's result as the wire reads it (reused). */
  private readonly result: PutResult = { id: Buffer.alloc(0), size: 0, created: false };

  /** '<status line>\r\nContent-Type: application/json' by status, encoded once each. */
  private readonly heads = new Map<number, Buffer>();

  constructor(private readonly wire: Wire) {
    this.body.write('{"id":"', 0, 'latin1');
  }

  private headOf(status: number): Buffer {
    const head = Buffer.from(`${statusLine(status)}\r\nContent-Type: application/json`, 'latin1');
    this.heads.set(status, head);
    return head;
  }

  write(res: HttpResponse, id: Buffer, size: number, created: boolean): void {
    const r = this.result;
    r.id = id;
    r.size = size;
    r.created = created;
    // Status line and Content-Type as one pre-encoded buffer: uWS takes a string's bytes by
    // converting it to UTF-8 on every call (~1% of the event loop under a PUT load, perf).
    const status = this.wire.putStatus(r);
    res.writeStatus(this.heads.get(status) ?? this.headOf(status));
    if (this.wire.variant !== 'b') {
      res.end(this.wire.putBody(r));
      return;
    }
    // Variant B's body, {"id":"<hex>","size":N}, in place.
    const b = this.body;
    let at = 7;
    for (let i = 0; i < 16; i++) {
      const byte = id[i]!;
      b[at++] = HEX[byte >> 4]!;
      b[at++] = HEX[byte & 15]!;
    }
    at += b.write('","size":', at, 'latin1');
    let digits = 1;
    for (let n = size; n >= 10; n = Math.floor(n / 10)) digits++;
    for (let i = digits - 1, n = size; i >= 0; i--, n = Math.floor(n / 10)) b[at + i] = 0x30 + (n % 10);
    at += digits;
    b[at++] = 0x7d; // }
    res.end(this.views[at] ??= b.subarray(0, at));
  }
}

const HEX = Buffer.from('0123456789abcdef', 'latin1');
