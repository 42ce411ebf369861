/** Parsers for the value forms settings accept: sizes ("64MiB"), durations ("5s"), addresses. */

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1,
  k: 1e3, kb: 1e3, kib: 1024,
  m: 1e6, mb: 1e6, mib: 1024 ** 2,
  g: 1e9, gb: 1e9, gib: 1024 ** 3,
  t: 1e12, tb: 1e12, tib: 1024 ** 4,
};

export function parseBytes(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return undefined;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const value = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(value) ? value : undefined;
}

const DURATION_UNITS: Record<string, number> = { '': 1, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds from "250ms", "5s", "2m", or a bare number of milliseconds. */
export function parseDurationMs(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|)\s*$/.exec(text);
  if (!m) return undefined;
  const value = Number(m[1]) * DURATION_UNITS[m[2]!]!;
  return Number.isFinite(value) ? Math.round(value) : undefined;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Whether a host name or address (IPv6 with or without brackets) is this host's loopback. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** "host:port", ":port" (all interfaces) or "[v6]:port". Port 0 asks the OS for a free port. */
export function parseHostPort(text: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]*)):(\d{1,5})$/.exec(text.trim());
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  const host = m[1] ?? (m[2] || '0.0.0.0');
  return { host, port };
}
