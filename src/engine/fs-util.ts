import { promises as fsp, constants as fsc } from 'node:fs';

/** Makes a rename or unlink in `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
