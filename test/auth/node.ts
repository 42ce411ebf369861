/** A real node with a token file, and HTTP calls with or without a bearer token. */
import { rmSync } from 'node:fs';
import { expect } from 'vitest';
import { type NodeProcess, startNode } from '../helpers/node-process.js';
import { waitFor } from '../helpers/wait.js';
import { TOKENS, type TokenName, sha256Hex, tokenFile } from './helpers.js';

export type Cred = 'none' | 'wrong' | 'read' | 'write' | 'admin';
export const CREDS: readonly Cred[] = ['none', 'wrong', 'read', 'write', 'admin'];

export function authorization(cred: Cred | TokenName): Record<string, string> {
  return cred === 'none' ? {} : { authorization: `Bearer ${TOKENS[cred]}` };
}

export interface AuthNode {
  readonly node: NodeProcess;
  readonly tokensPath: string;
  /** The metrics listener's base URL, when the node was started with one. */
  readonly metricsUrl: string | undefined;
  /** The gRPC port, when the node was started with one. */
  readonly grpcPort: number | undefined;
  stop(): Promise<void>;
}

/** The port a listener printed, or undefined when it printed none within five seconds (required() says so). */
async function portIn(node: NodeProcess, pattern: RegExp): Promise<number | undefined> {
  let port: number | undefined;
  const printed = (): boolean => {
    const m = pattern.exec(node.output());
    if (m) port = Number(m[1]);
    return port !== undefined;
  };
  await waitFor(printed, { what: `a line matching ${pattern}`, timeoutMs: 5000 }).catch(() => undefined);
  return port;
}

/** Starts a node with the standard token file; `metrics` / `grpc` add those listeners on free ports. */
export async function startAuthNode(options: { metrics?: boolean; grpc?: boolean; args?: string[]; entries?: object[] } = {}): Promise<AuthNode> {
  const { dir, path } = tokenFile(options.entries);
  const args = ['--auth-tokens-file', path, ...(options.args ?? [])];
  if (options.metrics) args.push('--metrics-addr', '127.0.0.1:0');
  if (options.grpc) args.push('--grpc-addr', '127.0.0.1:0');
  const node = await startNode({ args });
  const metricsPort = options.metrics ? await portIn(node, /metrics[^\n]*?http:\/\/[^\s/]*:(\d+)/i) : undefined;
  const grpcPort = options.grpc ? await portIn(node, /gRPC listening on \S*:(\d+)/) : undefined;
  return {
    node,
    tokensPath: path,
    metricsUrl: metricsPort === undefined ? undefined : `http://127.0.0.1:${metricsPort}`,
    grpcPort,
    stop: async () => {
      await node.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fails a test clearly when a listener another issue adds is not there yet. */
export function required<T>(value: T | undefined, what: string, node: NodeProcess): T {
  if (value === undefined) throw new Error(`${what} not wired yet: the node printed no port for it:\n${node.output()}`);
  return value;
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

export async function call(url: string, method: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Reply> {
  const res = await fetch(url, { method, headers, body, ...(body !== undefined ? { duplex: 'half' } : {}) } as RequestInit);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The variant's 401 / 403 answer: status, WWW-Authenticate, body shape and message (HEAD: no body). */
export function expectDenied(r: Reply, status: 401 | 403, scope: string, variant: 'a' | 'b', method: string): void {
  expect(r.status, r.text).toBe(status);
  const message = status === 401 ? 'missing or invalid bearer token' : `token lacks the ${scope} scope`;
  if (status === 401) expect(r.headers.get('www-authenticate')).toBe('Bearer');
  else expect(r.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
  if (method === 'HEAD') return;
  const body = JSON.parse(r.text) as Record<string, unknown>;
  if (variant === 'b') expect(body).toStrictEqual({ code: status, error: status === 401 ? 'Unauthorized' : 'Forbidden', message });
  else expect(body).toStrictEqual({ code: status === 401 ? 16 : 7, message });
}

/** Tokens (any 8 characters of one) and their digests must never appear in a node's output. */
export function expectNoTokenIn(output: string): void {
  expect(output.length).toBeGreaterThan(0);
  for (const token of Object.values(TOKENS)) {
    for (let i = 0; i + 8 <= token.length; i++) {
      if (output.includes(token.slice(i, i + 8))) throw new Error(`the node's output holds part of a token: ${JSON.stringify(token.slice(i, i + 8))}`);
    }
    const digest = sha256Hex(token);
    if (output.toLowerCase().includes(digest.slice(0, 16))) throw new Error('the node\'s output holds a token digest');
  }
}

/** Which credentials pass a scope: admin implies read and write. */
export function passes(cred: Cred, scope: 'read' | 'write' | 'admin' | 'open'): boolean {
  if (scope === 'open') return true;
  if (cred === 'none' || cred === 'wrong') return false;
  return cred === 'admin' || cred === scope;
}
