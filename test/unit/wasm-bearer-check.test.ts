// bearer-check (extensions/wasm/bearer-check) in Node through the test proxy-wasm host: the ABI surface
// Envoy checks, configuration validation, every decision, counters, and memory across many requests.
// The .wasm is dist/wasm/bearer-check.wasm (`make wasm`), built here first if missing or stale.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseBearer } from '../../extensions/extauth/token.js';
import { ABI_EXPORTS, ABI_IMPORTS, Action, LogLevel, TestHost, ensureWasm, readSignatures } from '../support/wasm-host.js';

const ROOT_ID = 'legate.bearer_check';
let wasmPath = '';

beforeAll(() => {
  wasmPath = ensureWasm('bearer-check');
}, 120_000);

async function plugin(configuration = ''): Promise<TestHost> {
  const host = await TestHost.load(wasmPath);
  const started = host.startPlugin({ rootId: ROOT_ID, configuration });
  expect(started).toEqual({ vmStart: true, configured: true });
  return host;
}

function withAuth(value: string | undefined) {
  const headers: Array<[string, string]> = [
    [':method', 'GET'],
    [':path', '/products'],
    [':authority', 'example.com'],
  ];
  if (value !== undefined) headers.push(['authorization', value]);
  return { headers };
}

describe('bearer-check module', () => {
  it('has exactly the ABI 0.2.1 imports and exports Envoy checks', () => {
    const { imports, exports } = readSignatures(readFileSync(wasmPath));
    for (const imp of imports) {
      expect(imp.module, imp.name).toBe('env');
      expect(ABI_IMPORTS[imp.name], `unexpected import env.${imp.name}`).toBeDefined();
      expect(imp.sig, imp.name).toEqual(ABI_IMPORTS[imp.name]);
    }
    expect(imports.map((i) => i.name)).not.toContain('abort');
    const names = exports.map((e) => e.name);
    for (const e of exports) {
      if (e.kind === 'memory') continue;
      expect(ABI_EXPORTS[e.name], `unexpected export ${e.name}`).toBeDefined();
      expect(e.sig, e.name).toEqual(ABI_EXPORTS[e.name]);
    }
    expect(names).toEqual(
      expect.arrayContaining([
        'proxy_abi_version_0_2_1',
        'malloc',
        'memory',
        '_initialize',
        'proxy_on_context_create',
        'proxy_on_vm_start',
        'proxy_on_configure',
        'proxy_on_request_headers',
        'proxy_on_done',
        'proxy_on_delete',
      ]),
    );
    expect(names).not.toContain('proxy_on_memory_allocate'); // one allocator only
    expect(names).not.toContain('proxy_on_request_body'); // headers-only: Envoy skips body callbacks
  });
});

describe('bearer-check runtime', () => {
  it('reports an AssemblyScript abort through proxy_log, then traps (no env.abort import)', async () => {
    const host = await plugin();
    expect(() => host.malloc(0x7ffffff0)).toThrow(WebAssembly.RuntimeError);
    const critical = host.logs.filter((l) => l.level === LogLevel.critical);
    expect(critical).toHaveLength(1);
    expect(critical[0]!.message).toMatch(/^wasm abort: Allocation too large at ~lib\/rt\/tlsf\.ts:\d+:\d+$/);
  });
});

describe('bearer-check configuration', () => {
  it('uses the defaults without a configuration and accepts {} and maxTokenBytes', async () => {
    for (const configuration of [
      '',
      '  ',
      '{}',
      '{"maxTokenBytes": 4096}',
      ' { "maxTokenBytes" : 1 } ',
      '{"maxTokenBytes": 65536}',
      '{"maxTokenBytes": 1e2}',
      '{"maxTokenBytes": 10.0}',
    ]) {
      const host = await TestHost.load(wasmPath);
      expect(host.startPlugin({ rootId: ROOT_ID, configuration }).configured, configuration).toBe(true);
    }
    const host = await plugin('');
    expect(host.logs.at(-1)).toEqual({ level: LogLevel.info, message: 'configured: maxTokenBytes=4096 cacheEntries=0' });
  });

  it('rejects malformed configurations with a clear error', async () => {
    const cases: Array<[string, string]> = [
      ['not json', "the configuration must be a JSON object, at offset 0 (found 'n')"],
      ['[]', 'the configuration must be a JSON object'],
      ['null', 'the configuration must be a JSON object'],
      ['{"maxTokenBytes": "4096"}', '"maxTokenBytes" must be an integer, got a string'],
      ['{"maxTokenBytes": true}', '"maxTokenBytes" must be an integer, got a boolean'],
      ['{"maxTokenBytes": null}', '"maxTokenBytes" must be an integer, got null'],
      ['{"maxTokenBytes": 0}', '"maxTokenBytes" must be between 1 and 65536, got 0'],
      ['{"maxTokenBytes": -5}', '"maxTokenBytes" must be between 1 and 65536, got -5'],
      ['{"maxTokenBytes": 65537}', '"maxTokenBytes" must be between 1 and 65536, got 65537'],
      ['{"maxTokenBytes": 4096.5}', '"maxTokenBytes" must be an integer, got 4096.5'],
      ['{"maxTokenBytes": 01}', "invalid JSON: bad number at offset 19 (found '1')"],
      ['{"maxTokenBytes": 10,}', 'invalid JSON: expected a member name'],
      ['{"maxTokenBytes": 10', "invalid JSON: expected ',' or '}' at the end of the input"],
      ['{"maxTokenBytes": 10} x', 'invalid JSON: unexpected data after the object'],
      ['{"maxTokens": 10}', 'unknown field "maxTokens"'],
      ['{"maxTokenBytes": 10, "maxTokenBytes": 20}', 'duplicate field "maxTokenBytes"'],
      ['{"max\\u0054okenBytes": 0}', '"maxTokenBytes" must be between 1 and 65536, got 0'],
      ['{"a\nb": 1}', 'invalid JSON: control character in a string'],
    ];
    for (const [configuration, message] of cases) {
      const host = await TestHost.load(wasmPath);
      expect(host.startPlugin({ rootId: ROOT_ID, configuration }).configured, configuration).toBe(false);
      const error = host.logs.find((l) => l.level === LogLevel.error);
      expect(error?.message, configuration).toContain(`invalid configuration: ${message}`);
    }
  });

  it('refuses a root_id it does not provide, and takes an empty root_id as bearer-check (its first)', async () => {
    const other = await TestHost.load(wasmPath);
    expect(other.startPlugin({ rootId: 'legate.other', configuration: '' }).configured).toBe(false);
    expect(other.logs.find((l) => l.level === LogLevel.error)?.message).toBe(
      'no filter is registered for root_id "legate.other"; this module provides "legate.bearer_check", "legate.credential_check"',
    );
    const empty = await TestHost.load(wasmPath);
    expect(empty.startPlugin({ rootId: '', configuration: '' }).configured).toBe(true);
    expect(empty.request(withAuth(undefined)).reply?.status).toBe(403);
  });
});

describe('bearer-check decisions', () => {
  it('answers 403 missing_token without an Authorization header', async () => {
    const host = await plugin();
    const out = host.request(withAuth(undefined));
    expect(out.headersAction).toBe(Action.Pause);
    expect(out.reply).toEqual({
      status: 403,
      details: 'bearer_check_missing_token',
      body: '{"error":"missing_token"}',
      headers: [
        ['content-type', 'application/json'],
        ['www-authenticate', 'Bearer'],
      ],
      grpcStatus: -1,
    });
    expect(host.counter('legate_bearer_check_denied_missing')).toBe(1);
  });

  it('answers 403 invalid_request for a malformed credential', async () => {
    const host = await plugin();
    const malformed = [
      '',
      'Bearer',
      'Bearer ',
      'Bearer  ',
      'Basic dXNlcjpwYXNz',
      'Token abc',
      'Bearerabc',
      'Bearer\tabc',
      'Bearer a b',
      'Bearer a,b',
      'Bearer abc,Bearer def', // two Authorization headers, as Envoy joins them
      'Bearer =abc',
      'Bearer ab=c',
      'Bearer abc= ',
      ' Bearer abc',
      'Bearer ab"c',
      'Bearer abc\u00e9',
      'Bearer ab%20c',
      'Bearer a*b',
    ];
    for (const value of malformed) {
      const out = host.request(withAuth(value));
      expect(out.reply, JSON.stringify(value)).toEqual({
        status: 403,
        details: 'bearer_check_invalid_request',
        body: '{"error":"invalid_request"}',
        headers: [
          ['content-type', 'application/json'],
          ['www-authenticate', 'Bearer error="invalid_request"'],
        ],
        grpcStatus: -1,
      });
    }
    expect(host.counter('legate_bearer_check_denied_malformed')).toBe(malformed.length);
    expect(host.counter('legate_bearer_check_allowed')).toBe(0);
  });

  it('lets well-formed credentials through untouched', async () => {
    const host = await plugin();
    const good = [
      'Bearer abc',
      'bearer abc',
      'BEARER abc',
      'BeArEr abc',
      'Bearer   abc',
      'Bearer AZaz09-._~+/',
      'Bearer abc==',
      'Bearer a=',
      'Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
      `Bearer ${'x'.repeat(4096)}`,
      `Bearer ${'x'.repeat(4094)}==`,
    ];
    for (const value of good) {
      const out = host.request(withAuth(value));
      expect(out.reply, value.slice(0, 40)).toBeUndefined();
      expect(out.headersAction).toBe(Action.Continue);
    }
    expect(host.counter('legate_bearer_check_allowed')).toBe(good.length);
    expect(host.calls.get('proxy_send_local_response')).toBeUndefined();
  });

  it('limits the token to maxTokenBytes (padding included)', async () => {
    const host = await plugin('{"maxTokenBytes": 8}');
    expect(host.request(withAuth('Bearer 12345678')).reply).toBeUndefined();
    expect(host.request(withAuth('Bearer 1234567=')).reply).toBeUndefined();
    expect(host.request(withAuth('Bearer 123456789')).reply?.body).toBe('{"error":"invalid_request"}');
    expect(host.request(withAuth('Bearer 12345678=')).reply?.body).toBe('{"error":"invalid_request"}');
    const dflt = await plugin();
    expect(dflt.request(withAuth(`Bearer ${'x'.repeat(4097)}`)).reply?.body).toBe('{"error":"invalid_request"}');
  });

  it('decides exactly as the extauth service parses tokens', async () => {
    const host = await plugin();
    const alphabet = ['B', 'b', 'e', 'a', 'r', ' ', 'x', '=', '-', '.', '_', '~', '+', '/', ',', '\t', '"', '9'];
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let i = 0; i < 3000; i++) {
      let value = ['Bearer ', 'bearer ', 'Bearer  ', 'Basic ', ''][rand(5)]!;
      for (let n = rand(12); n > 0; n--) value += alphabet[rand(alphabet.length)]!;
      const wasmAllows = host.request(withAuth(value)).reply === undefined;
      expect(wasmAllows, JSON.stringify(value)).toBe(parseBearer(value) !== undefined);
    }
  });

  it('defines its counters once and counts every decision once', async () => {
    const host = await plugin();
    expect(host.counterNames()).toEqual([
      'legate_bearer_check_allowed',
      'legate_bearer_check_cache_hits',
      'legate_bearer_check_cache_shared_hits',
      'legate_bearer_check_cache_shared_store_failures',
      'legate_bearer_check_cache_stores',
      'legate_bearer_check_denied_malformed',
      'legate_bearer_check_denied_missing',
    ]);
    host.request(withAuth('Bearer ok'));
    host.request(withAuth('Bearer ok'));
    host.request(withAuth(undefined));
    host.request(withAuth('Basic x'));
    host.requestAnsweredEarlier();
    expect([
      host.counter('legate_bearer_check_allowed'),
      host.counter('legate_bearer_check_denied_missing'),
      host.counter('legate_bearer_check_denied_malformed'),
    ]).toEqual([2, 1, 1]);
    expect(host.calls.get('proxy_define_metric')).toBe(7);
  });

  it('keeps memory flat over 10,000 requests (host buffers freed, contexts collected)', async () => {
    const host = await plugin();
    const requests = [
      withAuth(undefined),
      withAuth('Bearer abc.def'),
      withAuth(`Basic ${'y'.repeat(2000)}`),
      withAuth(`Bearer ${'z'.repeat(3000)}`),
    ];
    for (let i = 0; i < 1000; i++) host.request(requests[i % requests.length]!);
    const before = host.memoryBytes();
    for (let i = 0; i < 10_000; i++) host.request(requests[i % requests.length]!);
    expect(host.memoryBytes()).toBe(before);
    expect(host.counter('legate_bearer_check_allowed')).toBe(5500);
    host.stopPlugin();
  });
});
