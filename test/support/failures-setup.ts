// Setup file of the e2e project: counts this test file's failed tests for keepLogsIfFailed (failures.ts).
import { beforeEach } from 'vitest';
import { failures } from './failures.js';

beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    failures.count++;
  });
});
