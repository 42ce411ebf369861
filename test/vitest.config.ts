import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Black-box tests start real node processes; two cores keep files from running all at once.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
