/**
 * Free ports for the processes a bench or a test starts on loopback (or a test's namespace
 * address): picked below the kernel's ephemeral range, at random, and checked by binding.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A port free on `host` now, below the kernel's ephemeral range: a port picked for a node that
 * starts later must not be taken meanwhile by a client connection's local port or by a listener
 * on port 0, which the kernel takes from that range (a node once failed to start so, its port
 * taken while the ones before it started). Random, so that test files running side by side
 * rarely pick the same one, and checked by binding it.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const low = 10_000;
  const high = ephemeralLow() - 1;
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (!handedOut.has(port) && (await bindable(host, port))) return handOut(port);
  }
  return handOut(await bindable(host, 0));
}

/**
 * Ports this process has handed out: a port picked and let go is free again until its node
 * starts, so a second pick must not land on it (a description of 3 nodes once had two nodes on
 * one port).
 */
const handedOut = new Set<number>();
const handOut = (port: number): number => {
  if (port !== 0) handedOut.add(port);
  return port;
};

/** The first port of the kernel's ephemeral range (32768 when it cannot be read). */
function ephemeralLow(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return first > 11_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/** Binds `port` (0: any) on `host` and lets it go: the port bound, or 0 when it was taken. */
function bindable(host: string, port: number): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(0));
    server.listen(port, host, () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}
