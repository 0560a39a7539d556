// The extensions' per-call log lines are rate-limited: one line per message text per interval, the next one
// carrying the count suppressed meanwhile.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { throttledLogger } from '../../extensions/common/log-throttle.js';

describe('throttledLogger', () => {
  it('writes one line per message per interval, then the suppressed count', () => {
    const lines: Record<string, unknown>[] = [];
    let t = 0;
    const log = throttledLogger(createLogger('x', { level: 'info', write: (l) => lines.push(JSON.parse(l)) }), 10_000, () => t);
    for (let i = 0; i < 1000; i++) log.error('unparsable ProcessingRequest', { api: 'a' });
    log.warn('another message');
    log.info('info passes');
    log.info('info passes');
    t = 10_000;
    log.error('unparsable ProcessingRequest', { api: 'a' });
    expect(lines.map((l) => [l['msg'], l['suppressed']])).toEqual([
      ['unparsable ProcessingRequest', undefined],
      ['another message', undefined],
      ['info passes', undefined],
      ['info passes', undefined],
      ['unparsable ProcessingRequest', 999],
    ]);
  });
});
