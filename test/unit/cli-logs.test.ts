// `legatectl debug logs --errors-only`: the errors of the current run only (logs append across runs), and the
// resources the controller rejected (logged at warn: the gateway is fine, the user's resource is not).
import { describe, expect, it } from 'vitest';
import { errorLines, runStartLine } from '../../cli/ctl/logs.js';

const json = (level: string, msg: string): string => JSON.stringify({ level, msg });

describe('errorLines', () => {
  it("keeps the current run's errors and rejections, not an earlier run's", () => {
    const text = [
      json('error', 'from the run before'),
      '[2026-11-25 10:00:00.000][1][critical][main] an earlier Envoy',
      runStartLine(1).trimEnd(),
      json('error', 'also before the last start'),
      runStartLine(2).trimEnd(),
      json('info', 'listening'),
      json('warn', 'resource rejected'),
      json('warn', 'something else'),
      '[2026-11-25 10:05:00.000][2][error][config] this run',
      json('error', 'this run'),
      '',
    ].join('\n');
    expect(errorLines(text)).toBe(
      [json('warn', 'resource rejected'), '[2026-11-25 10:05:00.000][2][error][config] this run', json('error', 'this run'), ''].join('\n'),
    );
  });

  it('reads a whole log that has no start line (written before runs marked it)', () => {
    expect(errorLines([json('error', 'a'), json('info', 'b'), ''].join('\n'))).toBe(json('error', 'a') + '\n');
  });
});
