import { sleep } from './processes.js';

/** Readiness probes: GET <healthUrl> answers 200 when a service is ready. */

const PROBE_TIMEOUT_MS = 1000;
const POLL_MS = 40;

export async function probe(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

export interface WaitTarget {
  readonly name: string;
  readonly healthUrl: string;
  /** False once the process is gone: waiting longer is pointless. */
  alive(): boolean;
}

export type WaitResult = { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly service: string };

/** Polls every target until all answer 200, one dies, or the timeout passes. */
export async function waitHealthy(
  targets: readonly WaitTarget[],
  timeoutMs: number,
  onProgress: (healthy: number, total: number, pending: readonly string[]) => void,
): Promise<WaitResult> {
  const healthy = new Set<string>();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await Promise.all(
      targets.filter((t) => !healthy.has(t.name)).map(async (t) => {
        if (await probe(t.healthUrl, Math.min(PROBE_TIMEOUT_MS, Math.max(1, deadline - Date.now())))) healthy.add(t.name);
      }),
    );
    const pending = targets.filter((t) => !healthy.has(t.name));
    onProgress(healthy.size, targets.length, pending.map((t) => t.name));
    if (pending.length === 0) return { ok: true };
    const dead = pending.find((t) => !t.alive());
    if (dead) return { ok: false, service: dead.name, reason: 'exited before it became healthy' };
    if (Date.now() >= deadline) return { ok: false, service: pending[0]!.name, reason: `not healthy after ${timeoutMs} ms` };
    await sleep(POLL_MS);
  }
}
