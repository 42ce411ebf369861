/**
 * EC errors. The native codec returns a status number (native/src/rs.h: code in the low byte,
 * shard index above it); `checkStatus` is the one place that turns a nonzero status into an
 * EcError with a stable `code` and a message that names the offending argument.
 */
import { BlobstoreError, type ErrorKind } from '../errors/errors.js';

/** Stable codes, one per native status (the numbers are rs.h's enum rs_code). */
export const EcErrorCode = {
  K_RANGE: 'EC_K_RANGE',
  M_RANGE: 'EC_M_RANGE',
  SHARD_COUNT: 'EC_SHARD_COUNT',
  SHARD_TYPE: 'EC_SHARD_TYPE',
  SHARD_LENGTH: 'EC_SHARD_LENGTH',
  TOO_MANY_MISSING: 'EC_TOO_MANY_MISSING',
  PRESENT_TYPE: 'EC_PRESENT_TYPE',
  ARG_TYPE: 'EC_ARG_TYPE',
  OVERLAP: 'EC_OVERLAP',
  NO_MEMORY: 'EC_NO_MEMORY',
  PATH_UNKNOWN: 'EC_PATH_UNKNOWN',
  PATH_UNAVAILABLE: 'EC_PATH_UNAVAILABLE',
  INTERNAL: 'EC_INTERNAL',
  INDEX_RANGE: 'EC_INDEX_RANGE',
  ADDON_MISSING: 'EC_ADDON_MISSING',
} as const;
export type EcErrorCode = (typeof EcErrorCode)[keyof typeof EcErrorCode];

export class EcError extends BlobstoreError {
  readonly code: EcErrorCode;
  /** The shard the error is about, when there is one. */
  readonly shardIndex: number | undefined;

  constructor(code: EcErrorCode, message: string, shardIndex?: number, cause?: unknown) {
    const kind: ErrorKind = code === EcErrorCode.NO_MEMORY || code === EcErrorCode.INTERNAL || code === EcErrorCode.ADDON_MISSING
      ? 'internal'
      : 'invalid_argument';
    super(kind, message, { cause });
    this.name = 'EcError';
    this.code = code;
    this.shardIndex = shardIndex;
  }
}

/** What the caller passed, for messages. */
export interface StatusContext {
  readonly op: string;
  readonly k?: number;
  readonly m?: number;
  /** encodeUpdate's data shard index. */
  readonly index?: number;
  readonly kMax: number;
  readonly mMax: number;
  readonly pathName?: string;
}

type Describe = (index: number, c: StatusContext) => string;

/** Indexed by the native status code (rs.h). */
const STATUS: readonly (readonly [EcErrorCode, Describe])[] = [
  [EcErrorCode.INTERNAL, () => 'no error'],
  [EcErrorCode.K_RANGE, (_, c) => `k must be an integer in 1..${c.kMax}, got ${String(c.k)}`],
  [EcErrorCode.M_RANGE, (_, c) => `m must be an integer in 1..${c.mMax}, got ${String(c.m)}`],
  [EcErrorCode.SHARD_COUNT, (i, c) => shardCountMessage(i, c)],
  [EcErrorCode.SHARD_TYPE, (i) => `shard ${i} is not a Buffer, Uint8Array or ArrayBuffer`],
  [EcErrorCode.SHARD_LENGTH, (i, c) => shardLengthMessage(i, c)],
  [EcErrorCode.TOO_MANY_MISSING, (i, c) => `${i} shards are missing but at most m = ${String(c.m)} may be`],
  [EcErrorCode.PRESENT_TYPE, (_, c) => `present must be an array of k + m = ${(c.k ?? 0) + (c.m ?? 0)} booleans`],
  [EcErrorCode.ARG_TYPE, (_, c) => (c.op === 'encodeUpdate' ? 'k, m and index must be integers and parity an array' : 'k and m must be integers and the shards arrays')],
  [EcErrorCode.OVERLAP, (i) => `output shard ${i} overlaps another shard of the stripe`],
  [EcErrorCode.NO_MEMORY, () => 'out of memory building the decode matrix'],
  [EcErrorCode.PATH_UNKNOWN, (_, c) => `unknown EC kernel path ${JSON.stringify(c.pathName)} (portable, ssse3, avx2, gfni256, gfni512 or auto)`],
  [EcErrorCode.PATH_UNAVAILABLE, (_, c) => `EC kernel path ${JSON.stringify(c.pathName)} is compiled out or not supported by this CPU`],
  [EcErrorCode.INTERNAL, () => 'singular decode matrix (a bug: the Cauchy matrix is always invertible)'],
  [EcErrorCode.INDEX_RANGE, (_, c) => `index must be an integer in 0..${(c.k ?? 0) - 1} (a data shard of k = ${String(c.k)}), got ${String(c.index)}`],
];

/** A code this table lacks: the addon is newer than this module, a bug. */
const UNKNOWN_STATUS: readonly [EcErrorCode, Describe] = [EcErrorCode.INTERNAL, () => 'unknown native status (native/src/rs.h and this table disagree)'];

function shardCountMessage(which: number, c: StatusContext): string {
  const k = c.k ?? 0;
  const m = c.m ?? 0;
  if (c.op === 'encodeUpdate') return `expected m = ${m} parity shards`;
  if (c.op === 'encode') return which === 0 ? `expected k = ${k} data shards` : `expected m = ${m} parity shards`;
  return `expected k + m = ${k + m} shards`;
}

function shardLengthMessage(which: number, c: StatusContext): string {
  if (c.op === 'encodeUpdate') return `shard ${which} differs in length from data shard ${String(c.index)}: the data and parity shards must be the same length`;
  return `shard ${which} differs in length from shard 0: all shards of a stripe must be the same length`;
}

/** Throws the EcError for a nonzero native status; returns normally on 0. */
export function checkStatus(status: number, context: StatusContext): void {
  if (status === 0) return;
  const code = status & 0xff;
  const index = status >> 8;
  const entry = STATUS[code] ?? UNKNOWN_STATUS;
  const [errorCode, describe] = entry;
  const isShard = errorCode === EcErrorCode.SHARD_TYPE || errorCode === EcErrorCode.SHARD_LENGTH || errorCode === EcErrorCode.OVERLAP;
  throw new EcError(errorCode, `${context.op}: ${describe(index, context)}`, isShard ? index : undefined);
}
