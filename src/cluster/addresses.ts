/**
 * The addresses a node tells its peers: its API (NodeInfo.address, what SeedNodes name) and its
 * gRPC listener (how peers reach InternalService). Both come from the bound listeners, so nodes
 * started with port 0, or that fell back to a free port, are still found.
 */
import { networkInterfaces } from 'node:os';
import { isLoopbackHost, parseHostPort } from '../config/units.js';

const WILDCARD = new Set(['', '0.0.0.0', '::', '[::]']);

/** The first non-internal IPv4 address of this host, else loopback. */
function hostAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

const join = (host: string, port: number): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** The API address to announce: the setting, or the listen host (a wildcard made concrete) and bound port. */
export function advertisedApi(advertiseAddr: string, listen: string, boundPort: number): string {
  if (advertiseAddr !== '') return advertiseAddr;
  const host = parseHostPort(listen)?.host ?? '127.0.0.1';
  return join(WILDCARD.has(host) ? hostAddress() : host, boundPort);
}

/** The gRPC address to announce: the gRPC host (a wildcard: the API's host) and bound port. */
export function advertisedGrpc(grpcAddr: string, apiAddress: string, boundPort: number): string {
  const host = parseHostPort(grpcAddr)?.host ?? '';
  const apiHost = parseHostPort(apiAddress)?.host ?? '127.0.0.1';
  return join(WILDCARD.has(host) ? apiHost : host, boundPort);
}

/**
 * Why peers on other hosts cannot make this node's control calls (heartbeats, membership changes,
 * anti-entropy), or undefined: a gRPC address on loopback beside an API address beyond it, the
 * shape of a GrpcAddr set by hand to loopback on a host peers reach by its address.
 */
export function grpcUnreachable(apiAddress: string, grpcAddress: string): string | undefined {
  const api = parseHostPort(apiAddress)?.host;
  const grpc = parseHostPort(grpcAddress)?.host;
  if (api === undefined || grpc === undefined || isLoopbackHost(api) || !isLoopbackHost(grpc)) return undefined;
  return `GrpcAddr ${grpcAddress} is on loopback while peers reach this node at ${apiAddress}: peers on other hosts cannot send it heartbeats or membership changes (leave GrpcAddr unset to listen on the API's host)`;
}
