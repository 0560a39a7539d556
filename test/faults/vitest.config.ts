// `make test-faults`: the fault and abuse suite (docs/faults.md). Real processes on loopback, one file
// at a time (the figures are timings and memory on 2 shared cores), each test bounded in time and count.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export default defineConfig({
  root,
  test: {
    name: 'faults',
    include: ['test/faults/**/*.test.ts'],
    // builds the bundle the suites run (as the e2e suites do), then prints the figures at the end
    globalSetup: ['test/e2e/global-setup.ts', 'test/faults/summary.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
