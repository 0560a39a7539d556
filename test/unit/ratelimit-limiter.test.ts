// The rate-limit decision without I/O: descriptor matching as Envoy's reference service does it (nested
// descriptors, values before defaults, exact length, unlimited, shadow mode), fixed windows with their
// boundaries, the basic form's self-describing descriptors, and credentials never kept as they are.
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitKeys, basicDescriptorValue, parseBasicDescriptorValue } from '../../common/ratelimit-config.js';
import { MemoryStore, RateLimiter, windowStart, type Decision, type Entry } from '../../extensions/ratelimit/limiter.js';
import { toResponse } from '../../extensions/ratelimit/service.js';

const CONFIG = {
  name: 'default.rl',
  descriptors: [
    {
      key: 'generic_key',
      value: 'api',
      limit: { requestsPerUnit: 100, unit: 'MINUTE' },
      descriptors: [
        { key: 'x-client', limit: { requestsPerUnit: 2, unit: 'SECOND' } },
        { key: 'x-client', value: 'internal', unlimited: true },
      ],
    },
    { key: 'remote_address', shadowMode: true, limit: { requestsPerUnit: 1, unit: 'HOUR' } },
    { key: 'generic_key', value: 'nolimit', descriptors: [{ key: 'k', limit: { requestsPerUnit: 1, unit: 'DAY' } }] },
  ],
};

const cfg = (...rest: [string, string][]): Entry[] => [
  { key: RateLimitKeys.config, value: 'default.rl' },
  ...rest.map(([key, value]) => ({ key, value })),
];

let clock = 0;
const stores: MemoryStore[] = [];
function limiter(): RateLimiter {
  const store = new MemoryStore(() => clock);
  stores.push(store);
  const l = new RateLimiter(store);
  l.apply([CONFIG]);
  return l;
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

const decide = (l: RateLimiter, entries: Entry[][], now = clock): Decision => {
  clock = now;
  const d = l.decide('legate', entries, 1, now);
  if (d instanceof Promise) throw new Error('memory store is synchronous');
  return d;
};

describe('descriptor matching', () => {
  const l = new RateLimiter(new MemoryStore());
  l.apply([CONFIG]);

  it('matches a value before the default, and takes the limit of the last entry only', () => {
    expect(l.match('legate', cfg(['generic_key', 'api']))?.limit).toEqual({ requestsPerUnit: 100, unit: 'MINUTE' });
    expect(l.match('legate', cfg(['generic_key', 'api'], ['x-client', 'a']))?.limit).toEqual({ requestsPerUnit: 2, unit: 'SECOND' });
    const internal = l.match('legate', cfg(['generic_key', 'api'], ['x-client', 'internal']));
    expect(internal?.unlimited).toBe(true);
    expect(internal?.limit).toBeUndefined();
  });

  it('matches nothing for unknown keys or values, longer or shorter descriptors, other configs', () => {
    expect(l.match('legate', cfg(['generic_key', 'other']))).toBeUndefined();
    expect(l.match('legate', cfg(['generic_key', 'api'], ['x-client', 'a'], ['deeper', 'x']))).toBeUndefined();
    expect(l.match('legate', cfg(['generic_key', 'nolimit']))).toBeUndefined();
    expect(l.match('legate', cfg())).toBeUndefined();
    expect(
      l.match('legate', [
        { key: RateLimitKeys.config, value: 'default.other' },
        { key: 'generic_key', value: 'api' },
      ]),
    ).toBeUndefined();
    expect(l.match('legate', [{ key: 'generic_key', value: 'api' }])).toBeUndefined();
  });

  it('counts each value of a default descriptor on its own', () => {
    const a = l.match('legate', cfg(['generic_key', 'api'], ['x-client', 'a']))!;
    const b = l.match('legate', cfg(['generic_key', 'api'], ['x-client', 'b']))!;
    expect(a.counter).not.toBe(b.counter);
  });

  it('keeps the old configs when a new set is invalid', () => {
    const bad = new RateLimiter(new MemoryStore());
    bad.apply([CONFIG]);
    expect(() => bad.apply([{ name: 'default.rl', descriptors: [{ key: 'a', limit: { requestsPerUnit: 0, unit: 'SECOND' } }] }])).toThrow(
      /requestsPerUnit/,
    );
    expect(() => bad.apply([{ name: 'x', descriptors: [{ key: 'a', limit: { requestsPerUnit: 1, unit: 'WEEK' } }] }])).toThrow(/unit/);
    expect(bad.match('legate', cfg(['generic_key', 'api']))).toBeDefined();
  });
});

describe('a domain of its own (raw actions against the Settings descriptors)', () => {
  const l = new RateLimiter(new MemoryStore());
  l.apply([
    CONFIG,
    { name: 'settings:legate-system.default', domain: 'custom', descriptors: [{ key: 'generic_key', value: 'api', descriptors: [] }] },
  ]);
  l.apply([
    CONFIG,
    {
      name: 'settings:legate-system.default',
      domain: 'custom',
      descriptors: [{ key: 'generic_key', value: 'api', limit: { requestsPerUnit: 3, unit: 'MINUTE' } }],
    },
  ]);

  it('is matched from the first entry, with counters of its own', () => {
    const raw = l.match('custom', [{ key: 'generic_key', value: 'api' }]);
    expect(raw?.limit).toEqual({ requestsPerUnit: 3, unit: 'MINUTE' });
    expect(raw?.counter).toBe('custom|generic_key=api');
    expect(l.match('legate', [{ key: 'generic_key', value: 'api' }])).toBeUndefined();
    expect(l.match('custom', cfg(['generic_key', 'api']))).toBeUndefined();
    expect(l.match('legate', cfg(['generic_key', 'api']))?.limit).toEqual({ requestsPerUnit: 100, unit: 'MINUTE' });
  });

  it('refuses two trees for one domain', () => {
    const two = new RateLimiter(new MemoryStore());
    expect(() =>
      two.apply([
        { name: 'a', domain: 'custom', descriptors: [] },
        { name: 'b', domain: 'custom', descriptors: [] },
      ]),
    ).toThrow(/second config for domain custom/);
  });
});

describe('fixed windows', () => {
  it('starts a window at floor(now / unit)', () => {
    expect(windowStart(59_999, 'MINUTE')).toBe(0);
    expect(windowStart(60_000, 'MINUTE')).toBe(60_000);
    expect(windowStart(1_700_000_123_456, 'SECOND')).toBe(1_700_000_123_000);
    expect(windowStart(86_400_000 * 3 + 5, 'DAY')).toBe(86_400_000 * 3);
  });

  it('admits requestsPerUnit per window, denies the rest with retry-after, and starts over at the boundary', () => {
    const l = limiter();
    const d = [cfg(['generic_key', 'api'], ['x-client', 'a'])];
    const t0 = 1_000_000_000_400; // 400 ms into a second
    expect(decide(l, d, t0).overall).toBe('OK');
    const second = decide(l, d, t0 + 100);
    expect(second.overall).toBe('OK');
    expect(second.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0, current_limit: { requests_per_unit: 2, unit: 'SECOND' } });
    const third = decide(l, d, t0 + 599); // last ms of the window
    expect(third.overall).toBe('OVER_LIMIT');
    expect(third.statuses[0]?.duration_until_reset).toEqual({ seconds: 0, nanos: 1e6 });
    expect(third.retryAfterSeconds).toBe(1);
    expect(toResponse(third)).toMatchObject({ overall_code: 'OVER_LIMIT', response_headers_to_add: [{ key: 'retry-after', value: '1' }] });
    // the next window starts exactly at the boundary: never an over-admit, never a wrongful deny
    expect(decide(l, d, t0 + 600).overall).toBe('OK');
    expect(decide(l, d, t0 + 601).overall).toBe('OK');
    expect(decide(l, d, t0 + 602).overall).toBe('OVER_LIMIT');
  });

  it('counts every descriptor of a request and denies when any is over', () => {
    const l = limiter();
    const both = [cfg(['generic_key', 'api']), cfg(['generic_key', 'api'], ['x-client', 'a'])];
    expect(decide(l, both, 5000).overall).toBe('OK');
    expect(decide(l, both, 5001).overall).toBe('OK');
    const third = decide(l, both, 5002);
    expect(third.overall).toBe('OVER_LIMIT');
    expect(third.statuses.map((s) => s.code)).toEqual(['OK', 'OVER_LIMIT']);
    expect(third.statuses[0]?.limit_remaining).toBe(97);
  });

  it('never limits unlimited descriptors or unmatched ones', () => {
    const l = limiter();
    for (let i = 0; i < 5; i++) {
      const d = decide(l, [cfg(['generic_key', 'api'], ['x-client', 'internal']), cfg(['nothing', 'here'])], 10_000 + i);
      expect(d.overall).toBe('OK');
      expect(d.statuses).toEqual([{ code: 'OK' }, { code: 'OK' }]);
    }
  });

  it('shadow mode counts and reports but allows', () => {
    const l = limiter();
    const d = [cfg(['remote_address', '10.0.0.1'])];
    expect(decide(l, d, 0).shadowed).toBe(0);
    const over = decide(l, d, 1);
    expect(over.overall).toBe('OK');
    expect(over.shadowed).toBe(1);
    expect(over.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
  });
});

describe('basic limits', () => {
  it('carry their own limit', () => {
    const v = basicDescriptorValue('default.api.virtualHost.routes[0]', { requestsPerUnit: 3, unit: 'MINUTE' });
    expect(parseBasicDescriptorValue(v)).toEqual({ requestsPerUnit: 3, unit: 'MINUTE' });
    expect(parseBasicDescriptorValue('scope|0/MINUTE')).toBeUndefined();
    expect(parseBasicDescriptorValue('scope|3/WEEK')).toBeUndefined();
    expect(parseBasicDescriptorValue('scope')).toBeUndefined();
  });

  it('limit per remote address, and per credential without keeping it', () => {
    const l = limiter();
    const basic = { key: RateLimitKeys.basic, value: 'default.api|1/MINUTE' };
    const anon = (ip: string): Entry[] => [basic, { key: RateLimitKeys.auth, value: 'anonymous' }, { key: 'remote_address', value: ip }];
    expect(decide(l, [anon('10.0.0.1')], 0).overall).toBe('OK');
    expect(decide(l, [anon('10.0.0.1')], 1).overall).toBe('OVER_LIMIT');
    expect(decide(l, [anon('10.0.0.2')], 2).overall).toBe('OK');
    const token = 'Bearer secret-token-value';
    const cred = [basic, { key: RateLimitKeys.credential, value: token }];
    const m = l.match('legate', cred)!;
    expect(m.counter).not.toContain('secret-token-value');
    expect(decide(l, [cred], 3).overall).toBe('OK');
    expect(decide(l, [cred], 4).overall).toBe('OVER_LIMIT');
    expect(l.match('legate', [basic])).toBeUndefined();
  });
});

describe('memory store', () => {
  it('expires counters with their window', () => {
    const store = new MemoryStore(() => clock);
    stores.push(store);
    clock = 0;
    expect(store.increment(['a'], [1000], 1)).toEqual([1]);
    expect(store.increment(['a'], [1000], 2)).toEqual([3]);
    clock = 1000;
    expect(store.increment(['a'], [1000], 1)).toEqual([1]);
    clock = 5000;
    store.sweep();
    expect(store.size()).toBe(0);
  });
});
