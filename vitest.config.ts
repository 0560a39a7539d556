import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

// One `graphql` module for our code and graphql-jit, as under Node: vite would resolve our imports to
// graphql's index.mjs (its "module" field) while Node gives graphql-jit index.js, and graphql-js refuses
// schema objects from "another module or realm".
const graphqlMain = createRequire(import.meta.url).resolve('graphql');

export default defineConfig({
  test: {
    // e2e suites start real Envoys; keep them from starving each other on 2 cores
    maxWorkers: 2,
    projects: [
      {
        resolve: { alias: [{ find: /^graphql$/, replacement: graphqlMain }] },
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/golden/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          setupFiles: ['test/support/failures-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
