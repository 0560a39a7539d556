// The CheckRequest fast parser against messages encoded by the regular proto-loader serializer, and
// the pre-encoded CheckResponses decoded back.
import { describe, expect, it } from 'vitest';
import { lookupService, loadEnvoyService } from '../../extensions/common/grpc.js';
import { EDGE_METADATA, encodeAllowWithEdgeGrant, parseCheckRequest } from '../../extensions/extauth/wire.js';
import { DENIAL_BODIES, encodeResponses } from '../../extensions/extauth/service.js';
import { DENY_REASONS } from '../../extensions/extauth/authorizer.js';

const check = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization').service[
  'Check'
]!;
const encode = (msg: object): Buffer => check.requestSerialize(msg);
const decodeResponse = (b: Buffer): Record<string, any> => check.responseDeserialize(b) as Record<string, any>;

function envoyLike(headers: Record<string, string>, ext: Record<string, string>): object {
  return {
    attributes: {
      source: { address: { socket_address: { address: '10.0.0.1', port_value: 51234 } }, principal: 'spiffe://x' },
      destination: { address: { socket_address: { address: '10.0.0.2', port_value: 8080 } } },
      request: {
        time: { seconds: '1795311444', nanos: 5 },
        http: {
          id: '1234567890',
          method: 'GET',
          headers: { ':authority': 'example.com', ':path': '/api?x=1', 'user-agent': 'curl/8', 'x-request-id': 'abc', ...headers },
          path: '/api?x=1',
          host: 'example.com',
          scheme: 'http',
          size: '-1',
          protocol: 'HTTP/1.1',
        },
      },
      context_extensions: { source_type: 'route', ...ext, source_name: 'r1' },
      metadata_context: { filter_metadata: { 'envoy.x': { fields: { a: { stringValue: 'b' } } } } },
    },
  };
}

describe('parseCheckRequest', () => {
  it('extracts the authorization header and config_id from a full request', () => {
    const r = parseCheckRequest(encode(envoyLike({ authorization: 'Bearer abc.DEF-_~+/==' }, { config_id: 'legate-system.oauth' })));
    expect(r).toEqual({
      configId: 'legate-system.oauth',
      authorization: 'Bearer abc.DEF-_~+/==',
      ambiguous: false,
      malformed: false,
      // other headers (Envoy sends only the allowed ones), without pseudo-headers
      headers: { 'user-agent': 'curl/8', 'x-request-id': 'abc' },
    });
  });

  it('copies API key headers from both header forms; a repeated one is joined so it matches no key', () => {
    expect(parseCheckRequest(encode(envoyLike({ 'api-key': 'k1' }, { config_id: 'a.b' }))).headers?.['api-key']).toBe('k1');
    const hs = [
      ['api-key', 'k1'],
      ['x-key', 'a'],
      ['api-key', 'k2'],
    ];
    const req = {
      attributes: { request: { http: { header_map: { headers: hs.map(([key, v]) => ({ key, raw_value: Buffer.from(v!) })) } } } },
    };
    expect(parseCheckRequest(encode(req)).headers).toEqual({ 'api-key': 'k1,k2', 'x-key': 'a' });
  });

  it('reports absent values', () => {
    expect(parseCheckRequest(encode(envoyLike({}, {})))).toMatchObject({
      configId: '',
      authorization: undefined,
      ambiguous: false,
      malformed: false,
    });
    expect(parseCheckRequest(encode({}))).toEqual({ configId: '', authorization: undefined, ambiguous: false, malformed: false });
    expect(parseCheckRequest(Buffer.alloc(0)).malformed).toBe(false);
  });

  it('keeps an empty authorization header as empty (present)', () => {
    expect(parseCheckRequest(encode(envoyLike({ authorization: '' }, { config_id: 'a.b' }))).authorization).toBe('');
  });

  it('does not confuse similar keys', () => {
    const r = parseCheckRequest(
      encode(envoyLike({ 'x-authorization': 'Bearer nope', authorizatio: 'x' }, { config_idx: 'no', config_i: 'no' })),
    );
    expect(r.authorization).toBeUndefined();
    expect(r.configId).toBe('');
  });

  it('reads header_map (encode_raw_headers) with raw_value, and flags a repeated authorization', () => {
    const msg = (hs: Array<[string, string]>) => ({
      attributes: {
        request: { http: { header_map: { headers: hs.map(([key, v]) => ({ key, raw_value: Buffer.from(v) })) } } },
        context_extensions: { config_id: 'ns.name' },
      },
    });
    expect(
      parseCheckRequest(
        encode(
          msg([
            [':path', '/'],
            ['authorization', 'Bearer tok'],
          ]),
        ),
      ),
    ).toEqual({
      configId: 'ns.name',
      authorization: 'Bearer tok',
      ambiguous: false,
      malformed: false,
    });
    const twice = parseCheckRequest(
      encode(
        msg([
          ['authorization', 'Bearer a'],
          ['authorization', 'Bearer b'],
        ]),
      ),
    );
    expect(twice.ambiguous).toBe(true);
    // `value` (not raw) also works
    const plain = { attributes: { request: { http: { header_map: { headers: [{ key: 'authorization', value: 'Bearer v' }] } } } } };
    expect(parseCheckRequest(encode(plain)).authorization).toBe('Bearer v');
  });

  it('marks truncated or invalid bytes malformed, and never throws', () => {
    const good = encode(envoyLike({ authorization: 'Bearer abc' }, { config_id: 'a.b' }));
    for (let cut = 1; cut < good.length; cut += 7) {
      const r = parseCheckRequest(good.subarray(0, cut));
      if (r.malformed) expect(r.authorization).toBeUndefined();
    }
    expect(parseCheckRequest(good.subarray(0, good.length - 1)).malformed).toBe(true);
    expect(parseCheckRequest(Buffer.from([0x0b, 0x01])).malformed).toBe(true); // group wire type
    expect(parseCheckRequest(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])).malformed).toBe(true); // huge length
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed & 0xff);
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.alloc(1 + (i % 64));
      for (let j = 0; j < b.length; j++) b[j] = rnd();
      expect(() => parseCheckRequest(b)).not.toThrow();
    }
  });
});

describe('encoded CheckResponses', () => {
  const responses = encodeResponses(check.responseSerialize as (v: object) => Buffer);

  it('allow is status OK with an ok_response', () => {
    const r = decodeResponse(responses.allow);
    expect(r['status']?.code ?? 0).toBe(0);
    expect(r['ok_response']).toBeDefined();
    expect(r['denied_response']).toBeUndefined();
  });

  it('an allow with an edge grant carries it in dynamic_metadata, as strings', () => {
    const r = decodeResponse(encodeAllowWithEdgeGrant(responses.allow, 'legate-system.oauth@0123abcd', 59_999));
    expect(r['status']?.code ?? 0).toBe(0);
    expect(r['ok_response']).toBeDefined();
    expect(r['dynamic_metadata'].fields).toEqual({
      [EDGE_METADATA.key]: { stringValue: 'legate-system.oauth@0123abcd', kind: 'stringValue' },
      [EDGE_METADATA.cacheMs]: { stringValue: '59999', kind: 'stringValue' },
    });
  });

  it('an edge grant is encoded as the field-by-field encoding would, for long keys and large values, with a reserved prefix', () => {
    // reference: each field a Buffer, concatenated (the encoder before it wrote one buffer in place)
    const varint = (n: number): number[] => {
      const out: number[] = [];
      while (n > 0x7f) {
        out.push((n & 0x7f) | 0x80);
        n = Math.floor(n / 128);
      }
      return [...out, n];
    };
    const ld = (field: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(body.length)]), body]);
    const entry = (k: string, v: string): Buffer => ld(1, Buffer.concat([ld(1, Buffer.from(k)), ld(2, ld(3, Buffer.from(v)))]));
    for (const key of ['a', 'legate-system.oauth@0123abcd', 'k'.repeat(127), 'k'.repeat(128), `ns.${'n'.repeat(300)}@v`]) {
      for (const ms of [1, 127, 128, 59_999, 1_000_000_000_000]) {
        const expected = Buffer.concat([
          responses.allow,
          ld(4, Buffer.concat([entry(EDGE_METADATA.key, key), entry(EDGE_METADATA.cacheMs, String(ms))])),
        ]);
        expect(encodeAllowWithEdgeGrant(responses.allow, key, ms).equals(expected), `${key.length} ${ms}`).toBe(true);
        const framed = encodeAllowWithEdgeGrant(responses.allow, key, ms, 5);
        expect(framed.subarray(5).equals(expected), `${key.length} ${ms} reserved`).toBe(true);
      }
      const r = decodeResponse(encodeAllowWithEdgeGrant(responses.allow, key, 42));
      expect(r['dynamic_metadata'].fields[EDGE_METADATA.key].stringValue).toBe(key);
    }
  });

  it('every denial is PERMISSION_DENIED with a 403 (401 for API keys and credentials) and a JSON body naming only an error code', () => {
    for (const reason of DENY_REASONS) {
      const r = decodeResponse(responses[reason]);
      expect(r['status'].code).toBe(7);
      const unauthorized = reason.endsWith('_api_key') || reason === 'invalid_credentials';
      expect(r['denied_response'].status.code).toBe(unauthorized ? 'Unauthorized' : 'Forbidden');
      expect(JSON.parse(r['denied_response'].body)).toEqual({ error: DENIAL_BODIES[reason].error });
      const headers = Object.fromEntries(
        (r['denied_response'].headers as Array<{ header: { key: string; value: string } }>).map((h) => [h.header.key, h.header.value]),
      );
      expect(headers['content-type']).toBe('application/json');
      if (DENIAL_BODIES[reason].challenge) expect(headers['www-authenticate']).toBe(DENIAL_BODIES[reason].challenge);
    }
  });
});
