// Gloo's set-style limits, rule priority and limit overrides in Legate's ratelimit service, without I/O: a
// set-style descriptor (behind the generic_key marker) matches a set rule holding every simple descriptor in
// any order, extra entries allowed; the first matching rule applies, plus every alwaysApply one; tree rules of
// the highest weight apply, plus alwaysApply ones; a descriptor's own limit (Envoy's RateLimit.Override) wins.
import { afterEach, describe, expect, it } from 'vitest';
import { RAW_RATE_LIMIT_DOMAIN, RateLimitKeys, SET_DESCRIPTOR_VALUE } from '../../common/ratelimit-config.js';
import { MemoryStore, RateLimiter, overrideLimit, type Decision, type Entry } from '../../extensions/ratelimit/limiter.js';

const SETS = {
  name: 'default.sets',
  descriptors: [],
  setDescriptors: [
    // Gloo's docs: Messenger messages per number, then any Whatsapp message, then everything
    { simpleDescriptors: [{ key: 'type', value: 'Messenger' }, { key: 'number' }], limit: { requestsPerUnit: 1, unit: 'MINUTE' } },
    { simpleDescriptors: [{ key: 'type', value: 'Messenger' }], limit: { requestsPerUnit: 3, unit: 'MINUTE' } },
    { simpleDescriptors: [{ key: 'type', value: 'Whatsapp' }], limit: { requestsPerUnit: 2, unit: 'MINUTE' } },
    { simpleDescriptors: [], limit: { requestsPerUnit: 5, unit: 'MINUTE' }, alwaysApply: true },
  ],
};

const WEIGHTED = {
  name: 'default.weighted',
  descriptors: [
    { key: 'remote_address', limit: { requestsPerUnit: 1, unit: 'MINUTE' } },
    { key: 'tenant', weight: 1, limit: { requestsPerUnit: 2, unit: 'MINUTE' } },
    { key: 'generic_key', value: 'global', alwaysApply: true, limit: { requestsPerUnit: 3, unit: 'MINUTE' } },
    { key: 'plan', weight: 2, descriptors: [{ key: 'user', limit: { requestsPerUnit: 1, unit: 'HOUR' } }] },
  ],
};

const SETTINGS = {
  name: 'settings:legate-system.default',
  domain: RAW_RATE_LIMIT_DOMAIN,
  descriptors: [{ key: 'generic_key', value: 'per-minute', limit: { requestsPerUnit: 2, unit: 'MINUTE' } }],
  setDescriptors: [{ simpleDescriptors: [{ key: 'account' }], limit: { requestsPerUnit: 1, unit: 'MINUTE' } }],
};

const e = (...pairs: [string, string][]): Entry[] => pairs.map(([key, value]) => ({ key, value }));
const set = (config: string, ...pairs: [string, string][]): Entry[] =>
  e([RateLimitKeys.config, config], ['generic_key', SET_DESCRIPTOR_VALUE], ...pairs);

const stores: MemoryStore[] = [];
function limiter(): RateLimiter {
  const store = new MemoryStore(() => 0);
  stores.push(store);
  const l = new RateLimiter(store);
  l.apply([SETS, WEIGHTED, SETTINGS]);
  return l;
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function decide(l: RateLimiter, domain: string, entries: Entry[][], overrides: Parameters<RateLimiter['decide']>[4] = []): Decision {
  const d = l.decide(domain, entries, 1, 0, overrides);
  if (d instanceof Promise) throw new Error('memory store is synchronous');
  return d;
}

describe('set-style descriptors', () => {
  const l = limiter();

  it('match a rule whatever the order of the entries, extra entries allowed', () => {
    const a = l.matchAll('legate', set('default.sets', ['type', 'Messenger'], ['number', '1']));
    const b = l.matchAll('legate', set('default.sets', ['x', 'y'], ['number', '1'], ['type', 'Messenger']));
    expect(a.map((m) => m.limit?.requestsPerUnit)).toEqual([1, 5]);
    expect(b.map((m) => m.counter)).toEqual(a.map((m) => m.counter));
  });

  it('apply the first matching rule in order, and every alwaysApply one', () => {
    expect(l.matchAll('legate', set('default.sets', ['type', 'Messenger'])).map((m) => m.limit?.requestsPerUnit)).toEqual([3, 5]);
    expect(l.matchAll('legate', set('default.sets', ['type', 'Whatsapp'], ['number', '9'])).map((m) => m.limit?.requestsPerUnit)).toEqual([
      2, 5,
    ]);
    // a value the rule names must be the request's
    expect(l.matchAll('legate', set('default.sets', ['type', 'Sms'])).map((m) => m.limit?.requestsPerUnit)).toEqual([5]);
  });

  it('count per value of the keys a rule names, and not per the other entries', () => {
    const one = l.matchAll('legate', set('default.sets', ['type', 'Messenger'], ['number', '1'], ['x', 'a']))[0]!;
    const same = l.matchAll('legate', set('default.sets', ['x', 'b'], ['number', '1'], ['type', 'Messenger']))[0]!;
    const other = l.matchAll('legate', set('default.sets', ['type', 'Messenger'], ['number', '2']))[0]!;
    expect(same.counter).toBe(one.counter);
    expect(other.counter).not.toBe(one.counter);
  });

  it('are not walked as a tree, and tree descriptors are not matched as sets', () => {
    expect(l.matchAll('legate', e([RateLimitKeys.config, 'default.sets'], ['type', 'Messenger']))).toEqual([]);
    expect(l.matchAll('legate', set('default.weighted', ['remote_address', '1.2.3.4']))).toEqual([]);
  });

  it('deny when any applying rule is over its limit, regardless of the order entries arrive in', () => {
    const l2 = limiter();
    expect(decide(l2, 'legate', [set('default.sets', ['type', 'Messenger'], ['number', '1'])]).overall).toBe('OK');
    const d = decide(l2, 'legate', [set('default.sets', ['number', '1'], ['type', 'Messenger'])]);
    expect(d.overall).toBe('OVER_LIMIT');
    expect(d.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', current_limit: { requests_per_unit: 1, unit: 'MINUTE' } });
  });

  it('in a domain (the Settings), the marker is the first entry', () => {
    const l2 = limiter();
    const req = [e(['generic_key', SET_DESCRIPTOR_VALUE], ['plan', 'free'], ['account', 'a'])];
    expect(l2.matchAll(RAW_RATE_LIMIT_DOMAIN, req[0]!).map((m) => m.limit?.requestsPerUnit)).toEqual([1]);
    expect(decide(l2, RAW_RATE_LIMIT_DOMAIN, req).overall).toBe('OK');
    expect(decide(l2, RAW_RATE_LIMIT_DOMAIN, [e(['generic_key', SET_DESCRIPTOR_VALUE], ['account', 'a'])]).overall).toBe('OVER_LIMIT');
    // the domain's tree still works beside its set rules
    expect(l2.matchAll(RAW_RATE_LIMIT_DOMAIN, e(['generic_key', 'per-minute']))[0]?.limit?.requestsPerUnit).toBe(2);
  });
});

describe('rule priority (weight, alwaysApply)', () => {
  const w = (...pairs: [string, string][]) => e([RateLimitKeys.config, 'default.weighted'], ...pairs);

  it('counts only the rules of the highest matched weight, and alwaysApply ones', () => {
    const l = limiter();
    const request = [w(['remote_address', '10.0.0.1']), w(['tenant', 't1']), w(['generic_key', 'global'])];
    // remote_address (weight 0, limit 1) is not counted: a second request passes it
    expect(decide(l, 'legate', request).overall).toBe('OK');
    const second = decide(l, 'legate', request);
    expect(second.overall).toBe('OK');
    expect(second.statuses[0]).toEqual({ code: 'OK' });
    expect(second.statuses[1]).toMatchObject({ limit_remaining: 0 });
    expect(second.statuses[2]).toMatchObject({ limit_remaining: 1 });
    expect(decide(l, 'legate', request).overall).toBe('OVER_LIMIT');
  });

  it('without a weighted match, every rule counts (weight 0 by default)', () => {
    const l = limiter();
    expect(decide(l, 'legate', [w(['remote_address', '10.0.0.2'])]).overall).toBe('OK');
    expect(decide(l, 'legate', [w(['remote_address', '10.0.0.2'])]).overall).toBe('OVER_LIMIT');
  });

  it('a nested descriptor takes the weight of its parent', () => {
    const l = limiter();
    expect(l.matchAll('legate', w(['plan', 'free'], ['user', 'u']))[0]?.weight).toBe(2);
    const d = decide(l, 'legate', [w(['tenant', 't2']), w(['plan', 'free'], ['user', 'u'])]);
    // tenant (weight 1) is outweighed: not counted
    expect(d.statuses[0]).toEqual({ code: 'OK' });
    expect(d.statuses[1]).toMatchObject({ current_limit: { requests_per_unit: 1, unit: 'HOUR' } });
  });
});

describe('limit overrides', () => {
  it('limit a descriptor by the limit it carries, whatever its config says', () => {
    const l = limiter();
    const req = [e([RateLimitKeys.config, 'default.weighted'], ['anything', 'x'])];
    const limit = overrideLimit({ requests_per_unit: 1, unit: 'SECOND' });
    expect(limit).toEqual({ requestsPerUnit: 1, unit: 'SECOND' });
    expect(decide(l, 'legate', req).overall).toBe('OK');
    expect(decide(l, 'legate', req, [limit]).overall).toBe('OK');
    expect(decide(l, 'legate', req, [limit]).overall).toBe('OVER_LIMIT');
  });

  it('ignore an override Legate cannot count in (no requests, or a unit it has not)', () => {
    expect(overrideLimit({ requests_per_unit: 0, unit: 'SECOND' })).toBeUndefined();
    expect(overrideLimit({ requests_per_unit: 5, unit: 'WEEK' })).toBeUndefined();
    expect(overrideLimit(undefined)).toBeUndefined();
  });
});
