/**
 * Sending a generated request to a node (fetch when it can express it, else a raw socket) and
 * judging the outcome; the node settings every fuzz suite shares.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chunkedRefused, describeRequest, fetchable, type FuzzRequest, MALFORMED_FRAMINGS, malformedTarget, serialize, UWS_METHODS } from './generators.js';
import { type Surface, verdict } from './harness.js';
import { fetchExchange, type Outcome, rawExchange } from './http-client.js';

/** Small limits, so 413s, file-backed uploads and 408s happen with small requests. */
export const FUZZ_NODE_ARGS = ['--body-idle-timeout-ms', '1000', '--small-blob-max-bytes', '16KiB', '--max-blob-bytes', '2MiB', '--max-json-body-bytes', '1MiB'];
/** Longer than any legitimate wait (body idle 1 s + sweep 1 s; uWS's header timeout ~10 s). */
export const ANSWER_TIMEOUT_MS = 15_000;

/** The hex form of a store answer's id in either variant. */
export function hexIdOf(body: { id?: unknown }): string {
  const id = body.id as string | { id?: string } | undefined;
  if (typeof id === 'string') return id;
  return Buffer.from(id?.id ?? '', 'base64').toString('hex');
}

/** Whether the node serves variant A (an error body with a gRPC code, not the HTTP status). */
export async function servesVariantA(url: string): Promise<boolean> {
  const res = await fetch(`${url}/v1/blobs/not-an-id`);
  const body = (await res.json()) as { code?: unknown };
  return res.status === 400 && body.code === 3;
}

/**
 * uWS holds a connection whose request head it cannot parse until its ~10 s idle timeout; the
 * fuzz stops waiting for those after this (framing-fuzz checks that they are closed).
 */
const MALFORMED_WAIT_MS = 1500;

/** A refused HEAD is closed without an answer (src/http/framing.ts: uWS cannot end a HEAD answer and close). */
const isMalformed = (req: FuzzRequest): boolean =>
  MALFORMED_FRAMINGS.has(req.framing) || !UWS_METHODS.includes(req.method) || malformedTarget(req.target) || (req.method === 'HEAD' && chunkedRefused(req));

/** Where requests go: a node's API port, or another listener of it. */
export interface Listener {
  readonly url: string;
  readonly port: number;
}

export async function send(node: Listener, req: FuzzRequest): Promise<Outcome> {
  if (fetchable(req, node.url)) {
    const init = { method: req.method, headers: req.headers, body: req.body.length > 0 ? req.body : undefined };
    return fetchExchange(node.url + req.target, init, ANSWER_TIMEOUT_MS);
  }
  const timeoutMs = isMalformed(req) ? MALFORMED_WAIT_MS : ANSWER_TIMEOUT_MS;
  return rawExchange(node.port, serialize(req), { timeoutMs, head: req.method === 'HEAD' });
}

export function judge(surface: Surface, req: FuzzRequest, out: Outcome): string | undefined {
  return verdict(surface, { method: req.method, target: req.target, malformed: isMalformed(req), head: req.method === 'HEAD' }, out);
}

/**
 * A failure message for a request; its bytes go to a file in the temp dir, to replay with
 * `node -e "require('net').connect(PORT,()=>{}).end(require('fs').readFileSync(FILE))"` or curl.
 */
export function failure(problem: string, req: FuzzRequest, suite: string): Error {
  const file = join(tmpdir(), `blobstore-fuzz-${suite}-failure.http`);
  writeFileSync(file, serialize(req));
  return new Error(`${problem}\nrequest (bytes in ${file}): ${describeRequest(req)}`);
}
