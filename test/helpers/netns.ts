/**
 * Separate hosts on one machine (root only): a network namespace per node, each with its own
 * address from 198.18.0.0/15 (the benchmarking range) on a veth whose other end is on a bridge
 * the test creates; the test itself reaches them through the bridge's address. A partition is a
 * node's link taken down. Everything is removed again by teardown().
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface Hosts {
  /** The namespace of host i, for `ip netns exec`. */
  ns(i: number): string;
  address(i: number): string;
  /** Cuts host i off the bridge (from every other host and from the test), or joins it again. */
  cut(i: number): void;
  heal(i: number): void;
  teardown(): void;
}

const ip = (...args: string[]): void => {
  execFileSync('ip', args, { stdio: 'pipe' });
};

/** Makes `count` hosts, or answers why it cannot. */
export function makeHosts(count: number): Hosts | string {
  if (process.getuid?.() !== 0) return 'needs root to create network namespaces';
  const tag = randomBytes(3).toString('hex');
  const bridge = `bsbr${tag}`;
  const subnet = 18 + (randomBytes(1)[0]! % 200);
  const nsName = (i: number): string => `bs${tag}n${i}`;
  const hostVeth = (i: number): string => `bsv${tag}${i}`;
  const address = (i: number): string => `198.18.${subnet}.${10 + i}`;
  const made: string[] = [];
  const teardown = (): void => {
    for (const ns of made) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // already gone
      }
    }
    try {
      ip('link', 'del', bridge);
    } catch {
      // already gone
    }
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `198.18.${subnet}.1/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    for (let i = 0; i < count; i++) {
      const ns = nsName(i);
      ip('netns', 'add', ns);
      made.push(ns);
      ip('link', 'add', hostVeth(i), 'type', 'veth', 'peer', 'name', `bsp${tag}${i}`);
      ip('link', 'set', `bsp${tag}${i}`, 'netns', ns);
      ip('link', 'set', hostVeth(i), 'master', bridge);
      ip('link', 'set', hostVeth(i), 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      ip('-n', ns, 'link', 'set', `bsp${tag}${i}`, 'name', 'eth0');
      ip('-n', ns, 'addr', 'add', `${address(i)}/24`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
    }
  } catch (err) {
    teardown();
    return `cannot create network namespaces here: ${(err as Error).message.split('\n')[0]}`;
  }
  return {
    ns: nsName,
    address,
    cut: (i) => ip('link', 'set', hostVeth(i), 'down'),
    heal: (i) => ip('link', 'set', hostVeth(i), 'up'),
    teardown,
  };
}
