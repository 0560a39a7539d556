// credential-check (bearer-check module, root_id legate.credential_check) through the test host: edge grants
// keyed on a session cookie or the Authorization value, stored only when ext_authz granted them for the route's
// AuthConfig version and credential, with the upstream headers the extauth service set (set again on a hit,
// replacing a client's copy); the callback and logout always go to ext_authz and a logout ends the grant in
// every worker; it never refuses anything.
import { beforeAll, describe, expect, it } from 'vitest';
import { Action, SharedData, TestHost, ensureWasm, type TestRequest } from '../support/wasm-host.js';

const ROOT_ID = 'legate.credential_check';
const HEADER = 'x-legate-token-verified';
const SECRET = 'unit-test-verified-secret-0123456789';
const META = 'xds.route_metadata.filter_metadata.legate.credential_check';
const EXT = 'metadata.filter_metadata.envoy.filters.http.ext_authz';
const KEY = 'ns.oidc@v1';

let wasmPath: string;
beforeAll(() => {
  wasmPath = ensureWasm('bearer-check');
});

async function plugin(shared?: SharedData, config: object = { cacheEntries: 64, verifiedHeader: HEADER, verifiedValue: SECRET }) {
  const host = await TestHost.load(wasmPath, shared);
  const started = host.startPlugin({ rootId: ROOT_ID, configuration: JSON.stringify(config), vmId: ROOT_ID });
  expect(started.configured, host.logs.map((l) => l.message).join('\n')).toBe(true);
  return host;
}

interface Granted {
  key?: string;
  credential?: string;
  ms?: string;
  headers?: string;
}

/** A request on a cookie route (`cookie` set) or an Authorization route; `granted`: what ext_authz answered. */
function request(o: {
  cookie?: string;
  authorization?: string;
  path?: string;
  route?: { key?: string; cookie?: string; checkPaths?: string };
  granted?: Granted;
  extra?: Array<[string, string]>;
}): TestRequest {
  const route = o.route ?? { key: KEY, cookie: '__session', checkPaths: '/callback /logout' };
  const properties: Record<string, string> = {};
  const kind = route.cookie !== undefined ? `cookie:${route.cookie}` : 'authorization';
  if (route.key !== undefined) properties[`${META}.edge`] = `${route.key}\n${kind}\n${route.checkPaths ?? ''}`;
  const g = o.granted;
  const response = g
    ? {
        properties: {
          ...(g.key !== undefined ? { [`${EXT}.legate_auth_key`]: g.key } : {}),
          ...(g.credential !== undefined ? { [`${EXT}.legate_credential`]: g.credential } : {}),
          ...(g.ms !== undefined ? { [`${EXT}.legate_cache_ms`]: g.ms } : {}),
          ...(g.headers !== undefined ? { [`${EXT}.legate_headers`]: g.headers } : {}),
        },
      }
    : undefined;
  return {
    headers: [
      [':method', 'GET'],
      [':path', o.path ?? '/app'],
      ...(o.cookie !== undefined ? ([['cookie', o.cookie]] as Array<[string, string]>) : []),
      ...(o.authorization !== undefined ? ([['authorization', o.authorization]] as Array<[string, string]>) : []),
      ...(o.extra ?? []),
    ],
    properties,
    ...(response ? { response } : {}),
  };
}

const header = (headers: Array<[string, string]>, name: string): string | undefined => headers.find(([k]) => k === name)?.[1];
const OIDC_GRANT: Granted = {
  key: KEY,
  credential: 'cookie:__session',
  ms: '60000',
  headers: 'x-id-token\0id.token.value',
};

describe('credential-check: session cookie grants', () => {
  it('stores a grant ext_authz gave for the cookie, then vouches for the cookie and sets the ID token header again', async () => {
    const host = await plugin();
    const first = host.request(request({ cookie: 'a=1; __session=sealed-1; b=2', granted: OIDC_GRANT }));
    expect(first.headersAction).toBe(Action.Continue);
    expect(header(first.headers, HEADER)).toBeUndefined();
    expect(host.counter('legate_credential_check_stores')).toBe(1);
    // a client's own copy of the header is replaced by the granted value
    const second = host.request(request({ cookie: '__session=sealed-1', extra: [['x-id-token', 'forged']] }));
    expect(header(second.headers, HEADER)).toBe(SECRET);
    expect(second.headers.filter(([k]) => k === 'x-id-token')).toEqual([['x-id-token', 'id.token.value']]);
    expect(host.counter('legate_credential_check_hits')).toBe(1);
    // another cookie value, no cookie, or the value under another cookie name: not vouched for
    expect(header(host.request(request({ cookie: '__session=sealed-2' })).headers, HEADER)).toBeUndefined();
    expect(header(host.request(request({})).headers, HEADER)).toBeUndefined();
    expect(header(host.request(request({ cookie: 'other=sealed-1' })).headers, HEADER)).toBeUndefined();
    // the same cookie twice is left to ext_authz
    expect(header(host.request(request({ cookie: '__session=sealed-1; __session=x' })).headers, HEADER)).toBeUndefined();
    // another AuthConfig version: not vouched for
    const v2 = { key: 'ns.oidc@v2', cookie: '__session', checkPaths: '/callback /logout' };
    expect(header(host.request(request({ cookie: '__session=sealed-1', route: v2 })).headers, HEADER)).toBeUndefined();
    // never refuses: no reply, whatever the request
    expect(first.reply).toBeUndefined();
  });

  it('keeps nothing ext_authz did not grant for this route and this credential', async () => {
    const host = await plugin();
    const cases: Granted[] = [
      {},
      { ...OIDC_GRANT, key: 'ns.oidc@v0' },
      { ...OIDC_GRANT, credential: 'authorization' },
      { ...OIDC_GRANT, credential: 'cookie:other' },
      { ...OIDC_GRANT, credential: undefined },
      { ...OIDC_GRANT, ms: '0' },
      { ...OIDC_GRANT, ms: 'x' },
      // malformed header lists: a name without a value, a name that is not lower-case token characters
      { ...OIDC_GRANT, headers: 'x-id-token' },
      { ...OIDC_GRANT, headers: 'X-Id-Token\0v' },
      { ...OIDC_GRANT, headers: 'x-a\0v\0' },
    ];
    cases.forEach((g, i) => host.request(request({ cookie: `__session=c${i}`, granted: g })));
    expect(host.counter('legate_credential_check_stores')).toBe(0);
    cases.forEach((_g, i) =>
      expect(header(host.request(request({ cookie: `__session=c${i}` })).headers, HEADER), `case ${i}`).toBeUndefined(),
    );
  });

  it('expires a grant at its deadline', async () => {
    const host = await plugin();
    host.nowMs = 1_800_000_000_000;
    host.request(request({ cookie: '__session=s', granted: { ...OIDC_GRANT, ms: '1000' } }));
    host.nowMs += 999;
    expect(header(host.request(request({ cookie: '__session=s' })).headers, HEADER)).toBe(SECRET);
    host.nowMs += 1;
    expect(header(host.request(request({ cookie: '__session=s' })).headers, HEADER)).toBeUndefined();
  });

  it('sends the callback and the logout to ext_authz, and a logout ends the grant on every worker', async () => {
    const shared = new SharedData();
    const w1 = await plugin(shared);
    const w2 = await plugin(shared);
    w1.request(request({ cookie: '__session=s', granted: OIDC_GRANT }));
    expect(header(w2.request(request({ cookie: '__session=s' })).headers, HEADER)).toBe(SECRET);
    expect(header(w2.request(request({ cookie: '__session=s', path: '/callback?code=1&state=2' })).headers, HEADER)).toBeUndefined();
    // a grant stored meanwhile for a callback request would be wrong: nothing is remembered for it
    w2.request(request({ cookie: '__session=t', path: '/callback', granted: { ...OIDC_GRANT } }));
    expect(header(w1.request(request({ cookie: '__session=t' })).headers, HEADER)).toBeUndefined();
    const logout = w2.request(request({ cookie: '__session=s', path: '/logout' }));
    expect(header(logout.headers, HEADER)).toBeUndefined();
    expect(w2.counter('legate_credential_check_always_checked')).toBe(3); // two callbacks, one logout
    expect(header(w1.request(request({ cookie: '__session=s' })).headers, HEADER)).toBeUndefined();
    expect(header(w2.request(request({ cookie: '__session=s' })).headers, HEADER)).toBeUndefined();
  });

  it('drops a verified header a client sends, and does nothing on a route without a key', async () => {
    const host = await plugin();
    const forged = host.request(request({ cookie: '__session=s', extra: [[HEADER, SECRET]] }));
    expect(header(forged.headers, HEADER)).toBeUndefined();
    const none = host.request(request({ cookie: '__session=s', route: {}, extra: [[HEADER, SECRET]], granted: OIDC_GRANT }));
    expect(header(none.headers, HEADER)).toBeUndefined();
    expect(host.counter('legate_credential_check_stores')).toBe(0);
  });

  it('keeps slot numbers and digests in shared data, and the granted headers, never the cookie', async () => {
    const shared = new SharedData();
    const host = await plugin(shared);
    host.request(request({ cookie: '__session=secret-cookie-value', granted: OIDC_GRANT }));
    const text = shared
      .entries(ROOT_ID)
      .map(([k, v]) => k + Buffer.from(v).toString('latin1'))
      .join('');
    expect(text).not.toContain('secret-cookie-value');
    expect(text).toContain('id.token.value');
  });
});

describe('credential-check: Authorization grants (ldap, basicAuth)', () => {
  const route = { key: 'ns.ldap@v1' };
  const granted: Granted = { key: 'ns.ldap@v1', credential: 'authorization', ms: '10000' };

  it('sets every granted header again on a hit, empty values included', async () => {
    const host = await plugin();
    const headers = 'x-id-token\0t1\0x-access-token\0Bearer at\0x-empty\0';
    host.request(request({ cookie: '__session=m', granted: { ...OIDC_GRANT, headers } }));
    const hit = host.request(request({ cookie: '__session=m', extra: [['x-access-token', 'client']] }));
    expect(header(hit.headers, HEADER)).toBe(SECRET);
    expect(header(hit.headers, 'x-id-token')).toBe('t1');
    expect(hit.headers.filter(([k]) => k === 'x-access-token')).toEqual([['x-access-token', 'Bearer at']]);
    expect(header(hit.headers, 'x-empty')).toBe('');
  });

  it('keys on the whole Authorization value, any scheme, and adds no headers', async () => {
    const host = await plugin();
    host.request(request({ authorization: 'Basic cmljazpyaWNrcHdk', route, granted }));
    const hit = host.request(request({ authorization: 'Basic cmljazpyaWNrcHdk', route }));
    expect(header(hit.headers, HEADER)).toBe(SECRET);
    expect(header(host.request(request({ authorization: 'Basic b3RoZXI6eA==', route })).headers, HEADER)).toBeUndefined();
    expect(header(host.request(request({ route })).headers, HEADER)).toBeUndefined();
    // a cookie grant's answer on an Authorization route is not kept
    host.request(request({ authorization: 'Basic eDp5', route, granted: { ...granted, credential: 'cookie:__session' } }));
    expect(header(host.request(request({ authorization: 'Basic eDp5', route })).headers, HEADER)).toBeUndefined();
  });

  it('never answers a request itself: no Authorization goes on to ext_authz', async () => {
    const host = await plugin();
    const r = host.request(request({ route }));
    expect(r.reply).toBeUndefined();
    expect(r.headersAction).toBe(Action.Continue);
  });

  it('refuses a configuration without cacheEntries, header or secret', async () => {
    for (const config of [{}, { cacheEntries: 4, verifiedHeader: HEADER }, { cacheEntries: 4, verifiedValue: SECRET }]) {
      const host = await TestHost.load(wasmPath);
      expect(host.startPlugin({ rootId: ROOT_ID, configuration: JSON.stringify(config) }).configured).toBe(false);
    }
  });
});
