// The extauth decision logic against a fake introspection endpoint: the introspection call's shape,
// outcomes, scopes, exp, the cache (timeout, bound by exp, size bound), single-flight, fail-closed
// errors, config updates, and that logs never carry a token.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import type { AuthConfigConfig, IntrospectionStepConfig } from '../../common/contract.js';
import { Authorizer, type EdgeGrant, type Outcome } from '../../extensions/extauth/authorizer.js';

interface Seen {
  method: string;
  contentType: string | undefined;
  authorization: string | undefined;
  body: URLSearchParams;
}
interface Behaviour {
  status?: number;
  body?: unknown;
  raw?: string;
  delayMs?: number;
}

const seen: Seen[] = [];
const behaviour = new Map<string, Behaviour | (() => Behaviour)>();
let fake: http.Server;
let url: string;
const lines: string[] = [];
const usedTokens = new Set<string>();

beforeAll(async () => {
  fake = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = new URLSearchParams(Buffer.concat(chunks).toString());
      seen.push({ method: req.method ?? '', contentType: req.headers['content-type'], authorization: req.headers.authorization, body });
      const b0 = behaviour.get(body.get('token') ?? '') ?? { body: { active: false } };
      const b = typeof b0 === 'function' ? b0() : b0;
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(b.status ?? 200, { 'content-type': 'application/json' });
        res.end(b.raw ?? JSON.stringify(b.body));
      };
      if (b.delayMs) setTimeout(send, b.delayMs);
      else send();
    });
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/introspect`;
});

afterAll(async () => {
  fake.closeAllConnections();
  await new Promise<void>((r) => fake.close(() => r()));
  // no token text in any log line, at any level
  const all = lines.join('\n');
  for (const t of usedTokens) expect(all).not.toContain(t);
});

let authz: Authorizer;
beforeEach(() => {
  seen.length = 0;
  behaviour.clear();
  authz = new Authorizer({
    logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }),
    introspectionTimeoutMs: 300,
    cacheMaxEntries: 100,
  });
});
afterEach(() => authz.stop());

let n = 0;
/** A fresh token string, remembered so the log check can look for it. */
function token(): string {
  const t = `tok-${++n}-${Math.random().toString(36).slice(2)}`;
  usedTokens.add(t);
  return t;
}
const activeFor = (t: string, extra: Record<string, unknown> = {}): void => {
  behaviour.set(t, {
    body: { active: true, scope: 'products:read products:write', client_id: 'legate-demo', exp: Date.now() / 1000 + 600, ...extra },
  });
};
const cfg = (name: string, step: Partial<IntrospectionStepConfig> = {}): AuthConfigConfig => ({
  name,
  steps: [
    {
      type: 'oauth2-introspection',
      introspectionUrl: url,
      clientId: 'legate-extauth',
      clientSecret: 's3cret',
      cacheTimeoutMs: 60_000,
      requiredScopes: [],
      ...step,
    },
  ],
});
const calls = (t: string) => seen.filter((s) => s.body.get('token') === t).length;
const decide = (configId: string, header: string | undefined): Promise<Outcome> => Promise.resolve(authz.check(configId, header));

describe('introspection call and outcomes', () => {
  it('userIdAttributeName: required in the answer, set as user_id metadata; dynamicMetadataFromClaims from the answer', async () => {
    authz.apply([cfg('ns.uid', { userIdAttributeName: 'username', dynamicMetadataFromClaims: { client: 'client_id' } })]);
    const t = token();
    activeFor(t, { username: 'alice' });
    const grant: EdgeGrant = { key: '', until: 0 };
    expect(await authz.check('ns.uid', `Bearer ${t}`, false, grant)).toBe('allow');
    expect(grant.answer?.metadata).toEqual({ user_id: 'alice', client: 'legate-demo' });
    expect(grant.until).toBe(0);
    const anonymous = token();
    activeFor(anonymous);
    expect(await decide('ns.uid', `Bearer ${anonymous}`)).toBe('invalid_token');
  });

  it('POSTs a form with the token and HTTP basic client credentials; active -> allow', async () => {
    expect(authz.apply([cfg('ns.a')]).problems).toEqual([]);
    const t = token();
    activeFor(t);
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('allow');
    expect(seen).toHaveLength(1);
    const s = seen[0]!;
    expect(s.method).toBe('POST');
    expect(s.contentType).toBe('application/x-www-form-urlencoded');
    expect(s.authorization).toBe(`Basic ${Buffer.from('legate-extauth:s3cret').toString('base64')}`);
    expect(Object.fromEntries(s.body)).toEqual({ token: t, token_type_hint: 'access_token' });
  });

  it('form-encodes tokens with + / =', async () => {
    authz.apply([cfg('ns.a')]);
    const t = `a+b/c${token()}==`;
    usedTokens.add(t);
    activeFor(t);
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('allow');
    expect(seen[0]!.body.get('token')).toBe(t);
  });

  it('sends a client id without a secret as a form field, and nothing without a client id', async () => {
    authz.apply([
      cfg('ns.pub', { clientSecret: undefined }),
      cfg('ns.none', { clientId: undefined, clientSecret: undefined, introspectionUrl: `${url}?x=1` }),
    ]);
    const t = token();
    activeFor(t);
    await decide('ns.pub', `Bearer ${t}`);
    expect(seen[0]!.authorization).toBeUndefined();
    expect(seen[0]!.body.get('client_id')).toBe('legate-extauth');
    await decide('ns.none', `Bearer ${t}`);
    expect(seen[1]!.authorization).toBeUndefined();
    expect(seen[1]!.body.get('client_id')).toBeNull();
  });

  it('denies missing, malformed and repeated credentials without calling the provider', async () => {
    authz.apply([cfg('ns.a')]);
    expect(authz.check('ns.a', undefined)).toBe('missing_token');
    expect(authz.check('ns.a', '')).toBe('invalid_request');
    expect(authz.check('ns.a', 'Basic dXNlcjpwYXNz')).toBe('invalid_request');
    expect(authz.check('ns.a', 'Bearer not a token')).toBe('invalid_request');
    expect(authz.check('ns.a', `Bearer ${'x'.repeat(5000)}`)).toBe('invalid_request');
    expect(authz.check('ns.a', 'Bearer ok', true)).toBe('invalid_request');
    expect(seen).toHaveLength(0);
  });

  it('inactive -> invalid_token, and is not cached', async () => {
    authz.apply([cfg('ns.a')]);
    const t = token();
    behaviour.set(t, { body: { active: false } });
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('invalid_token');
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('invalid_token');
    expect(calls(t)).toBe(2);
  });

  it('active but past exp -> invalid_token', async () => {
    authz.apply([cfg('ns.a')]);
    const t = token();
    activeFor(t, { exp: Date.now() / 1000 - 1 });
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('invalid_token');
  });

  it('requires every required scope', async () => {
    authz.apply([
      cfg('ns.read', { requiredScopes: ['products:read'] }),
      cfg('ns.both', { requiredScopes: ['products:read', 'products:write'] }),
      cfg('ns.admin', { requiredScopes: ['products:read', 'admin'] }),
    ]);
    const t = token();
    activeFor(t, { scope: 'products:read products:write' });
    expect(await decide('ns.read', `Bearer ${t}`)).toBe('allow');
    expect(await decide('ns.both', `Bearer ${t}`)).toBe('allow');
    expect(await decide('ns.admin', `Bearer ${t}`)).toBe('insufficient_scope');
    const noScope = token();
    activeFor(noScope, { scope: undefined });
    expect(await decide('ns.read', `Bearer ${noScope}`)).toBe('insufficient_scope');
    // a scope that merely contains the required one as a substring does not count
    const sub = token();
    activeFor(sub, { scope: 'products:reader' });
    expect(await decide('ns.read', `Bearer ${sub}`)).toBe('insufficient_scope');
  });

  it('logs each denial at info with its reason and a token reference, once per second per config and reason', async () => {
    authz.apply([cfg('ns.read', { requiredScopes: ['products:read'] })]);
    const quiet = new Authorizer({
      logger: createLogger('extauth', { level: 'info', write: (l) => lines.push(l) }),
      introspectionTimeoutMs: 300,
    });
    try {
      quiet.apply([cfg('ns.read', { requiredScopes: ['products:read'] })]);
      const before = lines.length;
      const weak = token();
      activeFor(weak, { scope: 'other' });
      expect(await quiet.check('ns.read', `Bearer ${weak}`)).toBe('insufficient_scope');
      for (let i = 0; i < 5; i++) expect(await quiet.check('ns.read', `Bearer ${weak}`)).toBe('insufficient_scope');
      expect(quiet.check('ns.read', undefined)).toBe('missing_token');
      const denials = lines
        .slice(before)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l['msg'] === 'request denied');
      expect(denials).toEqual([
        expect.objectContaining({ level: 'info', config_id: 'ns.read', reason: 'insufficient_scope', token: expect.any(String) }),
        expect.objectContaining({ level: 'info', config_id: 'ns.read', reason: 'missing_token' }),
      ]);
    } finally {
      quiet.stop();
    }
  });

  it('unknown config_id -> unknown_config, logged like Gloo', async () => {
    authz.apply([cfg('ns.a')]);
    const before = lines.length;
    expect(authz.check('ns.missing', 'Bearer abc')).toBe('unknown_config');
    const logged = lines.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'Auth Server does not contain auth configuration with the given ID',
        config_id: 'ns.missing',
      }),
    );
  });

  it('all steps must pass', async () => {
    authz.apply([
      {
        name: 'ns.two',
        steps: [...cfg('x').steps, ...cfg('x', { requiredScopes: ['admin'], clientId: 'other', clientSecret: 'o' }).steps],
      },
    ]);
    const t = token();
    activeFor(t);
    expect(await decide('ns.two', `Bearer ${t}`)).toBe('insufficient_scope');
    expect(calls(t)).toBe(2);
  });
});

describe('fail closed', () => {
  const cases: Array<[string, Behaviour]> = [
    ['HTTP 500', { status: 500, body: { error: 'boom' } }],
    ['HTTP 401', { status: 401, body: { error: 'invalid_client' } }],
    ['not JSON', { raw: '<html>oops</html>' }],
    ['no active field', { body: { scope: 'a' } }],
    ['too slow', { delayMs: 600, body: { active: true } }],
  ];
  for (const [what, b] of cases) {
    it(`${what} -> unavailable with an error log line`, async () => {
      authz.apply([cfg('ns.a')]);
      const t = token();
      behaviour.set(t, b);
      const before = lines.length;
      expect(await decide('ns.a', `Bearer ${t}`)).toBe('unavailable');
      const errors = lines
        .slice(before)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l['level'] === 'error');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({
        msg: 'token introspection failed; denying',
        config_id: 'ns.a',
        token: expect.stringMatching(/^sha256:[0-9a-f]{12}$/),
      });
      expect(JSON.stringify(errors[0])).not.toContain(t);
      expect(JSON.stringify(errors[0])).not.toContain('s3cret');
    });
  }

  it('unreachable endpoint -> unavailable', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    authz.apply([cfg('ns.down', { introspectionUrl: `http://127.0.0.1:${port}/introspect` })]);
    const before = lines.length;
    expect(await decide('ns.down', `Bearer ${token()}`)).toBe('unavailable');
    expect(lines.slice(before).join('\n')).toContain('ECONNREFUSED');
  });

  it('rate-limits error lines per endpoint', async () => {
    authz.apply([cfg('ns.a')]);
    const before = lines.length;
    for (let i = 0; i < 5; i++) {
      const t = token();
      behaviour.set(t, { status: 503 });
      expect(await decide('ns.a', `Bearer ${t}`)).toBe('unavailable');
    }
    expect(lines.slice(before).filter((l) => l.includes('"level":"error"'))).toHaveLength(1);
    expect(authz.stats().denied.unavailable).toBe(5);
  });
});

describe('cache', () => {
  it('answers a cached token synchronously, without a call', async () => {
    authz.apply([cfg('ns.a')]);
    const t = token();
    activeFor(t);
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('allow');
    expect(authz.check('ns.a', `Bearer ${t}`)).toBe('allow'); // a string, not a Promise
    expect(authz.check('ns.a', `bearer   ${t}`)).toBe('allow');
    expect(calls(t)).toBe(1);
    expect(authz.stats()).toMatchObject({ introspections: 1, cacheHits: 2, cacheEntries: 1, allowed: 3 });
  });

  it('cacheTimeoutMs 0 introspects every time', async () => {
    authz.apply([cfg('ns.a', { cacheTimeoutMs: 0 })]);
    const t = token();
    activeFor(t);
    for (let i = 0; i < 3; i++) expect(await decide('ns.a', `Bearer ${t}`)).toBe('allow');
    expect(calls(t)).toBe(3);
    expect(authz.stats().cacheEntries).toBe(0);
  });

  it('expires entries after cacheTimeoutMs', async () => {
    authz.apply([cfg('ns.a', { cacheTimeoutMs: 500 })]);
    const t = token();
    activeFor(t);
    await decide('ns.a', `Bearer ${t}`);
    expect(authz.check('ns.a', `Bearer ${t}`)).toBe('allow');
    await new Promise((r) => setTimeout(r, 550));
    expect(authz.check('ns.a', `Bearer ${t}`)).toBeInstanceOf(Promise);
    await decide('ns.a', `Bearer ${t}`);
    expect(calls(t)).toBe(2);
  });

  it('never keeps an entry past the token exp', async () => {
    authz.apply([cfg('ns.a', { cacheTimeoutMs: 600_000 })]);
    const t = token();
    activeFor(t, { exp: (Date.now() + 600) / 1000 });
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('allow');
    expect(authz.check('ns.a', `Bearer ${t}`)).toBe('allow');
    await new Promise((r) => setTimeout(r, 650));
    behaviour.set(t, { body: { active: false } }); // the provider now says expired
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('invalid_token');
    expect(calls(t)).toBe(2);
  });

  it('is bounded by cacheMaxEntries', async () => {
    authz.stop();
    authz = new Authorizer({ logger: createLogger('extauth', { write: (l) => lines.push(l) }), cacheMaxEntries: 2 });
    authz.apply([cfg('ns.a')]);
    const ts = [token(), token(), token()];
    for (const t of ts) {
      activeFor(t);
      await decide('ns.a', `Bearer ${t}`);
    }
    expect(authz.stats().cacheEntries).toBe(2);
    // the oldest went first
    expect(authz.check('ns.a', `Bearer ${ts[0]}`)).toBeInstanceOf(Promise);
    expect(authz.check('ns.a', `Bearer ${ts[2]}`)).toBe('allow');
  });

  it('single-flight: concurrent checks of one token share one call', async () => {
    authz.apply([cfg('ns.a', { cacheTimeoutMs: 0 })]);
    const t = token();
    const other = token();
    behaviour.set(t, { delayMs: 100, body: { active: true, scope: 'products:read' } });
    behaviour.set(other, { delayMs: 100, body: { active: true } });
    const results = await Promise.all([
      ...Array.from({ length: 20 }, () => decide('ns.a', `Bearer ${t}`)),
      decide('ns.a', `Bearer ${other}`),
    ]);
    expect(results.every((r) => r === 'allow')).toBe(true);
    expect(calls(t)).toBe(1);
    expect(calls(other)).toBe(1);
    expect(authz.stats().joinedIntrospections).toBe(19);
    // and the next (sequential) check calls again, since caching is off
    await decide('ns.a', `Bearer ${t}`);
    expect(calls(t)).toBe(2);
  });

  it('single-flight shares failures too', async () => {
    authz.apply([cfg('ns.a')]);
    const t = token();
    behaviour.set(t, { delayMs: 50, status: 502 });
    const results = await Promise.all(Array.from({ length: 5 }, () => decide('ns.a', `Bearer ${t}`)));
    expect(results).toEqual(Array(5).fill('unavailable'));
    expect(calls(t)).toBe(1);
  });
});

describe('config updates', () => {
  it('a scope added to a config applies to cached tokens at once, and the cache survives the update', async () => {
    authz.apply([cfg('ns.a')]);
    const t = token();
    activeFor(t, { scope: 'products:read' });
    expect(await decide('ns.a', `Bearer ${t}`)).toBe('allow');
    authz.apply([cfg('ns.a', { requiredScopes: ['products:write'] })]);
    expect(authz.check('ns.a', `Bearer ${t}`)).toBe('insufficient_scope');
    authz.apply([cfg('ns.a', { requiredScopes: ['products:read'] })]);
    expect(authz.check('ns.a', `Bearer ${t}`)).toBe('allow');
    expect(calls(t)).toBe(1);
  });

  it('a removed config denies; an endpoint no longer used loses its cache', async () => {
    authz.apply([cfg('ns.a'), cfg('ns.b', { introspectionUrl: `${url}?other` })]);
    const t = token();
    activeFor(t);
    await decide('ns.a', `Bearer ${t}`);
    authz.apply([cfg('ns.b', { introspectionUrl: `${url}?other` })]);
    expect(authz.check('ns.a', `Bearer ${t}`)).toBe('unknown_config');
    expect(Object.keys(authz.summaries())).toEqual(['ns.b']);
    authz.apply([cfg('ns.a')]);
    expect(authz.check('ns.a', `Bearer ${t}`)).toBeInstanceOf(Promise);
  });

  it('invalid configs are reported; a known one keeps its previous version, a new one stays absent', () => {
    authz.apply([cfg('ns.a', { requiredScopes: ['x'] })]);
    const { problems } = authz.apply([
      { name: 'ns.a', steps: [{ type: 'jwt' }] },
      { name: 'ns.new', steps: [{ type: 'oauth2-introspection', introspectionUrl: 'ftp://x' }] },
      { name: 'ns.empty', steps: [] },
      'garbage',
      cfg('ns.ok'),
      cfg('ns.ok'),
    ]);
    expect(problems).toHaveLength(5);
    expect(problems.join('\n')).toMatch(/unsupported step type "jwt"/);
    expect(problems.join('\n')).toMatch(/appears more than once/);
    const s = authz.summaries();
    expect(Object.keys(s).sort()).toEqual(['ns.a', 'ns.ok']);
    expect(s['ns.a']!.steps[0]!.requiredScopes).toEqual(['x']);
  });

  it('summaries hold no secrets', () => {
    authz.apply([cfg('ns.a', { introspectionUrl: 'https://user:pw@idp.example.com/introspect?k=v' })]);
    const text = JSON.stringify(authz.summaries());
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('pw');
    expect(text).toContain('https://idp.example.com/introspect');
    expect(text).toContain('legate-extauth');
  });
});

describe('edge grant (what an allow tells bearer-check edge cache)', () => {
  const grantOf = async (configId: string, t: string): Promise<{ outcome: Outcome; grant: EdgeGrant }> => {
    const grant: EdgeGrant = { key: '', until: 0 };
    const outcome = await Promise.resolve(authz.check(configId, `Bearer ${t}`, false, grant));
    return { outcome, grant };
  };

  it('names the config version and holds until the cache timeout, for fresh and cached answers alike', async () => {
    authz.apply([{ ...cfg('ns.a', { cacheTimeoutMs: 60_000 }), version: 'v1' }]);
    const t = token();
    activeFor(t);
    const before = Date.now();
    const fresh = await grantOf('ns.a', t);
    expect(fresh.outcome).toBe('allow');
    expect(fresh.grant.key).toBe('ns.a@v1');
    expect(fresh.grant.until).toBeGreaterThanOrEqual(before + 60_000);
    expect(fresh.grant.until).toBeLessThanOrEqual(Date.now() + 60_000);
    const cached = await grantOf('ns.a', t);
    expect(cached.grant).toEqual(fresh.grant); // the same deadline: counted from the introspection
    expect(calls(t)).toBe(1);
  });

  it('never holds past the token exp', async () => {
    authz.apply([{ ...cfg('ns.a', { cacheTimeoutMs: 600_000 }), version: 'v1' }]);
    const t = token();
    const exp = Math.floor(Date.now() / 1000) + 30;
    activeFor(t, { exp });
    expect((await grantOf('ns.a', t)).grant.until).toBe(exp * 1000);
  });

  it('grants nothing without a cache timeout, without a version, or on a denial', async () => {
    authz.apply([
      { ...cfg('ns.nocache', { cacheTimeoutMs: 0 }), version: 'v1' },
      cfg('ns.unversioned'),
      { ...cfg('ns.scoped', { requiredScopes: ['admin'] }), version: 'v1' },
    ]);
    const t = token();
    activeFor(t);
    expect((await grantOf('ns.nocache', t)).grant).toEqual({ key: '', until: 0 });
    expect((await grantOf('ns.unversioned', t)).grant).toEqual({ key: '', until: 0 });
    const denied = await grantOf('ns.scoped', t);
    expect(denied.outcome).toBe('insufficient_scope');
    expect(denied.grant).toEqual({ key: '', until: 0 });
  });

  it('refuses a malformed version', () => {
    expect(authz.apply([{ ...cfg('ns.a'), version: 'has space' }]).problems[0]).toContain('version');
  });
});
