/** Opens an Engine in-process on a temp data dir (internals tests). */
import { loadConfig } from '../../src/config/load.js';
import type { NodeConfig } from '../../src/config/settings.js';
import { Engine } from '../../src/engine/engine.js';
import { initHashing } from '../../src/hash/blake3.js';
import { tempDir } from './node-process.js';

export function testConfig(flags: Record<string, unknown> = {}): NodeConfig {
  return loadConfig({ flags: { dataDir: tempDir(), nodeId: 'engine-test', ...flags }, env: {}, file: '/nonexistent/config.json' });
}

export async function openEngine(config: NodeConfig): Promise<Engine> {
  await initHashing();
  return Engine.open(config);
}

/** Holds every index commit until the returned function is called. */
export function holdCommits(engine: Engine): () => void {
  const index = engine.index;
  const commit = index.commit.bind(index);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  index.commit = async (...args: Parameters<typeof commit>): Promise<void> => {
    await gate;
    return commit(...args);
  };
  return () => {
    index.commit = commit;
    release();
  };
}
