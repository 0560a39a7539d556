// bearer-check's edge cache through the test host: what gets cached (only answers ext_authz gave for the
// route's own AuthConfig version, for as long as it said), what a hit does (the secret verified header),
// that a client can never set that header itself, expiry, and its configuration. Plus the filter's
// SHA-256 against node:crypto.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Action, LogLevel, REPO_ROOT, SharedData, TestHost, ensureWasm, type TestRequest } from '../support/wasm-host.js';

const ROOT_ID = 'legate.bearer_check';
const HEADER = 'x-legate-token-verified';
const SECRET = 'unit-test-verified-secret-0123456789';
const ROUTE_KEY = 'xds.route_metadata.filter_metadata.legate.bearer_check.auth_key';
const CHECKED_KEY = 'metadata.filter_metadata.envoy.filters.http.ext_authz.legate_auth_key';
const CHECKED_MS = 'metadata.filter_metadata.envoy.filters.http.ext_authz.legate_cache_ms';

let wasmPath: string;
beforeAll(() => {
  wasmPath = ensureWasm('bearer-check');
});

async function plugin(
  config: object | string = { cacheEntries: 64, verifiedHeader: HEADER, verifiedValue: SECRET },
  shared?: SharedData,
): Promise<TestHost> {
  const host = await TestHost.load(wasmPath, shared);
  const started = host.startPlugin({ rootId: ROOT_ID, configuration: typeof config === 'string' ? config : JSON.stringify(config) });
  expect(started.configured, host.logs.map((l) => l.message).join('\n')).toBe(true);
  return host;
}

/** A request on a route with `routeKey`; `accepted` says what ext_authz left in dynamic metadata. */
function request(
  token: string,
  o: { routeKey?: string; accepted?: { key: string; ms: string }; extraHeaders?: Array<[string, string]> } = {},
): TestRequest {
  return {
    headers: [[':method', 'GET'], [':path', '/secure'], ['authorization', `Bearer ${token}`], ...(o.extraHeaders ?? [])],
    properties: o.routeKey === undefined ? {} : { [ROUTE_KEY]: o.routeKey },
    response: { properties: o.accepted ? { [CHECKED_KEY]: o.accepted.key, [CHECKED_MS]: o.accepted.ms } : {} },
  };
}

const verified = (headers: Array<[string, string]>): string | undefined => headers.find(([k]) => k === HEADER)?.[1];

describe('bearer-check edge cache', () => {
  it('caches a token ext_authz accepted for the route version, then vouches for it with the secret header', async () => {
    const host = await plugin();
    const route = { routeKey: 'legate-system.oauth@v1' };
    const first = host.request(request('tok-a', { ...route, accepted: { key: 'legate-system.oauth@v1', ms: '60000' } }));
    expect(first.headersAction).toBe(Action.Continue);
    expect(verified(first.headers)).toBeUndefined(); // a miss goes to ext_authz
    expect(host.counter('legate_bearer_check_cache_stores')).toBe(1);
    const second = host.request(request('tok-a', route));
    expect(verified(second.headers)).toBe(SECRET);
    expect(host.counter('legate_bearer_check_cache_hits')).toBe(1);
    expect(host.counter('legate_bearer_check_allowed')).toBe(2);
    // another token, or the same token on a route with another AuthConfig version: not vouched for
    expect(verified(host.request(request('tok-b', route)).headers)).toBeUndefined();
    expect(verified(host.request(request('tok-a', { routeKey: 'legate-system.oauth@v2' })).headers)).toBeUndefined();
    expect(verified(host.request(request('tok-a', { routeKey: 'legate-system.other@v1' })).headers)).toBeUndefined();
    // the Authorization value is hashed whole: another scheme spelling is another entry
    const other = host.request({ ...request('tok-a', route), headers: [['authorization', 'bearer tok-a']] });
    expect(verified(other.headers)).toBeUndefined();
  });

  it('keeps nothing ext_authz did not vouch for: no metadata, another version, no or bad lifetime, no route key', async () => {
    const host = await plugin();
    host.request(request('t1', { routeKey: 'ns.a@v1' })); // denied or not checked: no metadata
    host.request(request('t2', { routeKey: 'ns.a@v2', accepted: { key: 'ns.a@v1', ms: '60000' } })); // judged under another version
    host.request(request('t3', { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms: '0' } }));
    host.request(request('t4', { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms: '-5' } }));
    host.request(request('t5', { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms: '12abc' } }));
    host.request(request('t6', { accepted: { key: 'ns.a@v1', ms: '60000' } })); // route without a key (AuthConfig missing)
    expect(host.counter('legate_bearer_check_cache_stores')).toBe(0);
    for (const [t, v] of [
      ['t1', 'v1'],
      ['t2', 'v2'],
      ['t3', 'v1'],
      ['t4', 'v1'],
      ['t5', 'v1'],
      ['t6', 'v1'],
    ]) {
      expect(verified(host.request(request(t!, { routeKey: `ns.a@${v}` })).headers), t).toBeUndefined();
    }
  });

  it('forgets an entry when its lifetime is over', async () => {
    const host = await plugin();
    host.nowMs = 1_800_000_000_000;
    host.request(request('tok', { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms: '1000' } }));
    host.nowMs += 999;
    expect(verified(host.request(request('tok', { routeKey: 'ns.a@v1' })).headers)).toBe(SECRET);
    host.nowMs += 1;
    expect(verified(host.request(request('tok', { routeKey: 'ns.a@v1' })).headers)).toBeUndefined();
  });

  it('drops the verified header a client sends, whatever its value, on every request it sees', async () => {
    const host = await plugin();
    for (const value of ['x', SECRET]) {
      const forged = host.request(request('unknown', { routeKey: 'ns.a@v1', extraHeaders: [[HEADER, value]] }));
      expect(verified(forged.headers)).toBeUndefined();
    }
    // even when the request is refused
    const refused = host.request({ headers: [[HEADER, SECRET]] });
    expect(refused.reply?.status).toBe(403);
    expect(verified(refused.headers)).toBeUndefined();
  });

  it('is bounded: a full table replaces entries instead of growing', async () => {
    const host = await plugin({ cacheEntries: 4, verifiedHeader: HEADER, verifiedValue: SECRET });
    const before = host.memoryBytes();
    for (let i = 0; i < 2000; i++) host.request(request(`tok-${i}`, { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms: '60000' } }));
    expect(host.counter('legate_bearer_check_cache_stores')).toBe(2000);
    let hits = 0;
    for (let i = 0; i < 2000; i++) if (verified(host.request(request(`tok-${i}`, { routeKey: 'ns.a@v1' })).headers) === SECRET) hits++;
    expect(hits).toBeGreaterThan(0);
    expect(hits).toBeLessThanOrEqual(4);
    expect(host.memoryBytes()).toBe(before);
  });

  it('is off by default and with cacheEntries 0: no header changes, no response work', async () => {
    for (const config of ['', { cacheEntries: 0 }]) {
      const host = await plugin(config);
      const r = host.request(
        request('tok', { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms: '60000' }, extraHeaders: [[HEADER, SECRET]] }),
      );
      expect(verified(r.headers)).toBe(SECRET); // untouched: without the cache the matcher is not rendered either
      expect(host.counter('legate_bearer_check_cache_stores')).toBe(0);
      expect(host.calls.get('proxy_remove_header_map_value') ?? 0).toBe(0);
    }
  });

  it('refuses a cache configuration without a usable header name or secret', async () => {
    const cases: Array<[object, string]> = [
      [{ cacheEntries: 8 }, '"verifiedHeader" must be a lower-case header name'],
      [{ cacheEntries: 8, verifiedHeader: 'X-Upper', verifiedValue: SECRET }, '"verifiedHeader" must be a lower-case header name'],
      [{ cacheEntries: 8, verifiedHeader: HEADER }, '"verifiedValue" must be 16 to 256 visible ASCII characters'],
      [{ cacheEntries: 8, verifiedHeader: HEADER, verifiedValue: 'short' }, '"verifiedValue" must be 16 to 256 visible ASCII characters'],
      [{ cacheEntries: 8, verifiedHeader: HEADER, verifiedValue: 'has a space in it 0123' }, '"verifiedValue" must be 16 to 256'],
      [{ cacheEntries: 2000000, verifiedHeader: HEADER, verifiedValue: SECRET }, '"cacheEntries" must be between 0 and 1048576'],
      [{ cacheEntries: 8, verifiedHeader: 5, verifiedValue: SECRET }, '"verifiedHeader" must be a string'],
      [{ cacheEntries: 8, sharedCache: 'yes', verifiedHeader: HEADER, verifiedValue: SECRET }, '"sharedCache" must be a boolean'],
    ];
    for (const [config, message] of cases) {
      const host = await TestHost.load(wasmPath);
      expect(host.startPlugin({ rootId: ROOT_ID, configuration: JSON.stringify(config) }).configured, JSON.stringify(config)).toBe(false);
      const error = host.logs.find((l) => l.level === LogLevel.error)?.message ?? '';
      expect(error, JSON.stringify(config)).toContain(message);
    }
  });
});

describe('bearer-check edge cache shared across workers (proxy-wasm shared data)', () => {
  const VM = ROOT_ID; // the test host's vm_id defaults to the root_id, as the controller renders it
  const accepted = (token: string, ms = '60000') => request(token, { routeKey: 'ns.a@v1', accepted: { key: 'ns.a@v1', ms } });
  const onRoute = (token: string, routeKey = 'ns.a@v1') => request(token, { routeKey });

  /** Two VMs (Envoy workers) over one shared-data store. */
  async function workers(config?: object): Promise<{ a: TestHost; b: TestHost; shared: SharedData }> {
    const shared = new SharedData();
    return { a: await plugin(config, shared), b: await plugin(config, shared), shared };
  }

  it('a token one worker learnt is vouched for by the other without asking ext_authz', async () => {
    const { a, b } = await workers();
    a.request(accepted('tok-a'));
    expect(a.counter('legate_bearer_check_cache_stores')).toBe(1);
    const first = b.request(onRoute('tok-a'));
    expect(verified(first.headers)).toBe(SECRET);
    expect(b.counter('legate_bearer_check_cache_shared_hits')).toBe(1);
    expect(b.counter('legate_bearer_check_cache_hits')).toBe(1);
    // the worker keeps its own copy: the next hit needs no shared-data read
    const reads = b.calls.get('proxy_get_shared_data') ?? 0;
    expect(verified(b.request(onRoute('tok-a')).headers)).toBe(SECRET);
    expect(b.calls.get('proxy_get_shared_data') ?? 0).toBe(reads);
    expect(b.counter('legate_bearer_check_cache_shared_hits')).toBe(1);
    expect(b.counter('legate_bearer_check_cache_stores')).toBe(0);
    // other tokens, and the same token under another AuthConfig version, are not vouched for
    expect(verified(b.request(onRoute('tok-b')).headers)).toBeUndefined();
    expect(verified(b.request(onRoute('tok-a', 'ns.a@v2')).headers)).toBeUndefined();
  });

  it('keeps the AuthConfig version check: what ext_authz judged under another version is stored nowhere', async () => {
    const { a, b, shared } = await workers();
    a.request(request('tok', { routeKey: 'ns.a@v2', accepted: { key: 'ns.a@v1', ms: '60000' } }));
    expect(shared.keys(VM)).toEqual([]);
    expect(verified(b.request(onRoute('tok', 'ns.a@v2')).headers)).toBeUndefined();
  });

  it('keys and values hold slot numbers and digests, never the token', async () => {
    const { a, shared } = await workers();
    const token = 'a-very-recognisable-token-value-0123456789';
    a.request(accepted(token));
    const entries = shared.entries(VM);
    expect(entries).toHaveLength(1);
    const [key, value] = entries[0]!;
    expect(key).toMatch(/^lbc\/[0-9a-f]{8}$/);
    expect(value.length).toBe(48);
    const digest = createHash('sha256').update(`ns.a@v1\0Bearer ${token}`).digest();
    expect(Buffer.from(value.subarray(8, 40)).equals(digest)).toBe(true);
    expect(Number.parseInt(key.slice(4), 16)).toBe(Number(digest.readBigUInt64LE(0) % 64n));
    expect(Buffer.from(value).includes(Buffer.from(token))).toBe(false);
  });

  it('an entry expires at the deadline ext_authz gave, in every worker', async () => {
    const { a, b } = await workers();
    a.nowMs = b.nowMs = 1_800_000_000_000;
    a.request(accepted('tok', '1000'));
    a.nowMs = b.nowMs = 1_800_000_000_500;
    expect(verified(b.request(onRoute('tok')).headers)).toBe(SECRET); // learnt from the shared table
    a.nowMs = b.nowMs = 1_800_000_001_000;
    expect(verified(b.request(onRoute('tok')).headers)).toBeUndefined(); // its own copy has the same deadline
    expect(verified(a.request(onRoute('tok')).headers)).toBeUndefined();
  });

  it('is bounded: never more keys than cacheEntries, however many tokens the workers see', async () => {
    const { a, b, shared } = await workers({ cacheEntries: 4, verifiedHeader: HEADER, verifiedValue: SECRET });
    for (let i = 0; i < 1000; i++) (i % 2 ? a : b).request(accepted(`tok-${i}`));
    expect(shared.keys(VM).length).toBeLessThanOrEqual(4);
    const before = a.memoryBytes();
    let hits = 0;
    for (let i = 0; i < 1000; i++) if (verified(a.request(onRoute(`tok-${i}`)).headers) === SECRET) hits++;
    expect(hits).toBeGreaterThan(0);
    expect(hits).toBeLessThanOrEqual(8); // 4 of its own + 4 shared
    expect(a.memoryBytes()).toBe(before); // shared-data buffers are freed
  });

  it('writes with CAS: a store that races another worker re-reads and retries', async () => {
    // one slot, so every token lands on the same key
    const { a, b, shared } = await workers({ cacheEntries: 1, verifiedHeader: HEADER, verifiedValue: SECRET });
    a.request(accepted('tok-1'));
    expect(a.calls.get('proxy_set_shared_data')).toBe(1);
    let raced = '';
    shared.beforeSet = (vm, key) => {
      raced = key;
      expect(shared.set(vm, key, new Uint8Array(48), 0)).toBe(0); // another worker's write lands in between
    };
    a.request(accepted('tok-2'));
    expect(raced).toBe('lbc/00000000');
    expect(a.calls.get('proxy_set_shared_data')).toBe(3); // CasMismatch, then read again and written
    expect(a.counter('legate_bearer_check_cache_shared_store_failures')).toBe(0);
    expect(verified(b.request(onRoute('tok-2')).headers)).toBe(SECRET);
    expect(verified(b.request(onRoute('tok-1')).headers)).toBeUndefined(); // replaced: one slot
  });

  it('gives up a store after three lost races (the token is then just checked again)', async () => {
    const { a, b, shared } = await workers({ cacheEntries: 1, verifiedHeader: HEADER, verifiedValue: SECRET });
    a.request(accepted('tok-1'));
    const race = (vm: string, key: string): void => {
      shared.set(vm, key, new Uint8Array(48), 0);
      shared.beforeSet = race; // and again on the next attempt
    };
    shared.beforeSet = race;
    a.request(accepted('tok-2'));
    shared.beforeSet = undefined;
    expect(a.counter('legate_bearer_check_cache_shared_store_failures')).toBe(1);
    expect(verified(a.request(onRoute('tok-2')).headers)).toBe(SECRET); // its own table has it
    expect(verified(b.request(onRoute('tok-2')).headers)).toBeUndefined();
  });

  it('with sharedCache false each worker keeps its own table only', async () => {
    const { a, b, shared } = await workers({ cacheEntries: 64, sharedCache: false, verifiedHeader: HEADER, verifiedValue: SECRET });
    a.request(accepted('tok'));
    expect(verified(a.request(onRoute('tok')).headers)).toBe(SECRET);
    expect(verified(b.request(onRoute('tok')).headers)).toBeUndefined();
    expect(shared.keys(VM)).toEqual([]);
    expect(a.calls.get('proxy_get_shared_data') ?? 0).toBe(0);
  });

  it('does not touch shared data with the cache off', async () => {
    const { a, shared } = await workers({ cacheEntries: 0 });
    a.request(accepted('tok'));
    expect(shared.keys(VM)).toEqual([]);
    expect(a.calls.get('proxy_get_shared_data') ?? 0).toBe(0);
  });
});

describe('bearer-check SHA-256', () => {
  it('matches node:crypto for lengths around the block boundaries, fed whole or in pieces', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'legate-sha-')), 'sha256.wasm');
    execFileSync(
      process.execPath,
      [
        join(REPO_ROOT, 'node_modules/assemblyscript/bin/asc.js'),
        'test/unit/wasm-fixtures/sha256-entry.ts',
        '--target',
        'release',
        '-o',
        out,
      ],
      {
        cwd: REPO_ROOT,
        stdio: 'pipe',
      },
    );
    const { instance } = await WebAssembly.instantiate(readFileSync(out), { env: { proxy_log: () => 0 } });
    const ex = instance.exports as {
      memory: WebAssembly.Memory;
      _initialize(): void;
      alloc(n: number): number;
      digest(p: number, n: number, c: number): number;
    };
    ex._initialize();
    for (const len of [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096]) {
      const input = Buffer.alloc(len);
      for (let i = 0; i < len; i++) input[i] = (i * 131 + len) & 0xff;
      const ptr = ex.alloc(Math.max(1, len));
      new Uint8Array(ex.memory.buffer, ptr, len).set(input);
      for (const chunk of [1, 7, 64, Math.max(1, len)]) {
        const at = ex.digest(ptr, len, chunk);
        const got = Buffer.from(new Uint8Array(ex.memory.buffer, at, 32)).toString('hex');
        expect(got, `len ${len} chunk ${chunk}`).toBe(createHash('sha256').update(input).digest('hex'));
      }
    }
  });
});
