/**
 * OpenStack Swift on this machine, as the peer our EC figures are held against
 * (../shared/peers/swift: setup.sh starts a loopback SAIO with an EC 4+2 policy, bench.sh measures
 * it, stop.sh stops it). Measured in the same run as ours, so "x times Swift" is of one machine in
 * one hour. The bench installs nothing: without Swift's Debian packages the comparison is skipped.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, envInt, log } from '../node/lib.js';

const execFileAsync = promisify(execFile);

/** Where the peer's scripts are (the repository's sibling `shared/peers/swift` unless told). */
const PEER_DIR = process.env.BENCH_SWIFT_DIR ?? join(ROOT, '../shared/peers/swift');
/** Swift's proxy, as setup.sh starts it. */
const PROXY = 'http://127.0.0.1:8080';
/** Runs of the peer's EC measurement (one 64 MiB PUT and GET each). */
const RUNS = envInt('BENCH_SWIFT_RUNS', 3);

export interface SwiftEc {
  putMiBs: number;
  getMiBs: number;
  runs: { put: number; get: number }[];
  ecType: string;
}

async function proxyUp(): Promise<boolean> {
  try {
    const res = await fetch(`${PROXY}/healthcheck`, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

async function packagesInstalled(): Promise<boolean> {
  try {
    await execFileAsync('dpkg', ['-s', 'swift-proxy', 'swift-object', 'python3-pyeclib'], { timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Swift's EC 4+2 MiB/s for `mib` MiB objects, PUT and GET, over RUNS runs (total bytes over total
 * seconds, as ours); undefined, with the reason logged, where Swift cannot run here.
 */
export async function swiftEc(mib: number): Promise<SwiftEc | undefined> {
  if (!existsSync(join(PEER_DIR, 'bench.sh'))) {
    log(`swift: no peer scripts at ${PEER_DIR} (BENCH_SWIFT_DIR): comparison skipped`);
    return undefined;
  }
  let started = false;
  if (!(await proxyUp())) {
    if (!(await packagesInstalled())) {
      log('swift: its Debian packages are not installed (the peer\'s setup.sh installs them): comparison skipped');
      return undefined;
    }
    log('swift: starting the loopback SAIO (setup.sh)');
    await execFileAsync('bash', [join(PEER_DIR, 'setup.sh')], { timeout: 300_000 });
    started = true;
  }
  try {
    const runs: { put: number; get: number }[] = [];
    let ecType = '';
    for (let i = 0; i < RUNS; i++) {
      // POLICIES of one space: no replicated policy, only the EC object.
      const { stdout } = await execFileAsync('bash', [join(PEER_DIR, 'bench.sh')], {
        env: { ...process.env, POLICIES: ' ', EC_MIB: String(mib) }, timeout: 600_000, maxBuffer: 16 << 20,
      });
      const last = stdout.trim().split('\n').pop() ?? '';
      const ec = (JSON.parse(last) as { ec42?: Record<string, number | string | null> }).ec42;
      const put = ec?.[`put${mib}m_mibs`];
      const get = ec?.[`get${mib}m_mibs`];
      if (typeof put !== 'number' || typeof get !== 'number') throw new Error(`swift: bench.sh gave no EC figures: ${last.slice(0, 300)}`);
      ecType = String(ec?.ec_type ?? '');
      runs.push({ put, get });
      log(`swift: EC 4+2 ${mib} MiB run ${i + 1}/${RUNS}: PUT ${put} MiB/s, GET ${get} MiB/s (${ecType})`);
    }
    const overall = (pick: (r: { put: number; get: number }) => number): number => (runs.length * mib) / runs.reduce((s, r) => s + mib / pick(r), 0);
    return { putMiBs: overall((r) => r.put), getMiBs: overall((r) => r.get), runs, ecType };
  } finally {
    if (started) await execFileAsync('bash', [join(PEER_DIR, 'stop.sh')], { timeout: 120_000 }).catch((err: Error) => log(`swift: stop.sh: ${err.message}`));
  }
}
