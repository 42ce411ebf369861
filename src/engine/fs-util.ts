import { promises as fsp, constants as fsc, openSync, fsyncSync, closeSync } from 'node:fs';

/** Makes a rename or unlink in `dir` durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fsp.open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
