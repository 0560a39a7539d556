// The graphql service's ProcessingRequest decoder against messages encoded by the regular proto-loader
// serializer, and its hand-encoded ProcessingResponses against proto-loader's encoding and decoding.
import { describe, expect, it } from 'vitest';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import {
  CONTINUE_REQUEST_BODY,
  CONTINUE_REQUEST_HEADERS,
  CONTINUE_RESPONSE_BODY,
  CONTINUE_RESPONSE_HEADERS,
  CONTINUE_RESPONSE_TRAILERS,
  Phase,
  decodeProcessingRequest,
  encodeImmediateResponse,
} from '../../extensions/graphql/wire.js';

const processMethod = lookupService(
  loadEnvoyService('envoy/service/ext_proc/v3/external_processor.proto'),
  'envoy.service.ext_proc.v3.ExternalProcessor',
).service['Process']!;
const encodeRequest = (msg: object): Buffer => processMethod.requestSerialize(msg);
const encodeResponse = (msg: object): Buffer => processMethod.responseSerialize(msg);
const decodeResponse = (b: Buffer): Record<string, any> => processMethod.responseDeserialize(b) as Record<string, any>;

/** What Envoy sends for the request headers: every header as raw_value, attributes, metadata. */
function envoyHeaders(hs: Array<[string, string]>, endOfStream: boolean, rawValues = true): object {
  return {
    request_headers: {
      headers: { headers: hs.map(([key, v]) => (rawValues ? { key, raw_value: Buffer.from(v) } : { key, value: v })) },
      end_of_stream: endOfStream,
    },
    metadata_context: { filter_metadata: { 'envoy.x': { fields: { a: { stringValue: 'b' } } } } },
    attributes: { 'envoy.filters.http.ext_proc': { fields: { 'request.path': { stringValue: '/graphql' } } } },
    observability_mode: false,
  };
}

const REQUEST_HEADERS: Array<[string, string]> = [
  [':authority', 'localhost:8080'],
  [':path', '/graphql?x=1'],
  [':method', 'POST'],
  [':scheme', 'http'],
  ['content-type', 'application/json'],
  ['accept', 'application/graphql-response+json, application/json;q=0.9'],
  ['x-forwarded-proto', 'http'],
  ['x-request-id', '8b4a1c1e-0d5f-4a55-9b0a-2f1d5a6e7c3b'],
  ['x-unicode', 'caf\u00e9 \u2713'],
  ['x-empty', ''],
];

const pairs = (flat: string[]): Array<[string, string]> => {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
};

describe('decodeProcessingRequest', () => {
  it('reads the request headers (raw_value) and end_of_stream, skipping metadata', () => {
    const r = decodeProcessingRequest(encodeRequest(envoyHeaders(REQUEST_HEADERS, false)));
    expect(r.phase).toBe(Phase.requestHeaders);
    expect(r.attributes).toEqual(['request.path', '/graphql']);
    expect(r.malformed).toBe(false);
    expect(r.endOfStream).toBe(false);
    expect(pairs(r.headers)).toEqual(REQUEST_HEADERS);
    expect(r.body).toBeUndefined();
    const eos = decodeProcessingRequest(encodeRequest(envoyHeaders([[':method', 'GET']], true)));
    expect(eos.endOfStream).toBe(true);
    expect(eos.headers).toEqual([':method', 'GET']);
  });

  it('reads `value` when raw_value is absent or empty, raw_value when both are set', () => {
    const r = decodeProcessingRequest(encodeRequest(envoyHeaders(REQUEST_HEADERS, true, false)));
    expect(pairs(r.headers)).toEqual(REQUEST_HEADERS);
    const both = decodeProcessingRequest(
      encodeRequest({
        request_headers: {
          headers: {
            headers: [
              { key: 'a', value: 'plain', raw_value: Buffer.from('raw') },
              { key: 'b', value: 'plain', raw_value: Buffer.alloc(0) },
            ],
          },
        },
      }),
    );
    expect(pairs(both.headers)).toEqual([
      ['a', 'raw'],
      ['b', 'plain'],
    ]);
  });

  it('reads string attributes riding on a body message (the single-message mode), in any entry', () => {
    const r = decodeProcessingRequest(
      encodeRequest({
        request_body: { body: Buffer.from('{"query":"{a}"}'), end_of_stream: true },
        attributes: {
          'envoy.filters.http.ext_proc': {
            fields: {
              'request.method': { stringValue: 'POST' },
              "request.headers['content-type']": { stringValue: 'application/json' },
              'request.size': { numberValue: 15 },
              'request.x': { nullValue: 'NULL_VALUE' },
              "request.headers['x-unicode']": { stringValue: 'caf\u00e9' },
            },
          },
          other: { fields: { 'source.address': { stringValue: '127.0.0.1:1' } } },
        },
      }),
    );
    expect(r).toMatchObject({ phase: Phase.requestBody, endOfStream: true, malformed: false });
    expect(r.body!.toString()).toBe('{"query":"{a}"}');
    expect(Object.fromEntries(pairs(r.attributes))).toEqual({
      'request.method': 'POST',
      "request.headers['content-type']": 'application/json',
      "request.headers['x-unicode']": 'caf\u00e9',
      'source.address': '127.0.0.1:1',
    });
  });

  it('reads bodies of several chunks, each as its own message', () => {
    const text = JSON.stringify({ query: '{productsForHome{id title}}', variables: { s: '\u00e9'.repeat(300) } });
    const bytes = Buffer.from(text);
    const parts = [bytes.subarray(0, 7), bytes.subarray(7, 200), bytes.subarray(200)];
    const got: Buffer[] = [];
    parts.forEach((part, i) => {
      const r = decodeProcessingRequest(
        encodeRequest({ request_body: { body: part, end_of_stream: i === parts.length - 1 }, observability_mode: false }),
      );
      expect(r.phase).toBe(Phase.requestBody);
      expect(r.endOfStream).toBe(i === parts.length - 1);
      got.push(r.body!);
    });
    expect(Buffer.concat(got).toString('utf8')).toBe(text);
    // a large body (multi-byte length prefix)
    const big = Buffer.alloc(300_000, 0x61);
    expect(decodeProcessingRequest(encodeRequest({ request_body: { body: big, end_of_stream: true } })).body!.equals(big)).toBe(true);
    // an empty last chunk
    const empty = decodeProcessingRequest(encodeRequest({ request_body: { body: Buffer.alloc(0), end_of_stream: true } }));
    expect(empty).toMatchObject({ phase: Phase.requestBody, body: undefined, endOfStream: true, malformed: false });
  });

  it('tells the other phases apart', () => {
    expect(decodeProcessingRequest(encodeRequest({ request_trailers: { trailers: { headers: [{ key: 'x', value: 'y' }] } } })).phase).toBe(
      Phase.requestTrailers,
    );
    expect(
      decodeProcessingRequest(
        encodeRequest({ response_headers: { headers: { headers: [{ key: ':status', value: '200' }] }, end_of_stream: true } }),
      ),
    ).toMatchObject({
      phase: Phase.responseHeaders,
      headers: [],
      endOfStream: true,
    });
    expect(decodeProcessingRequest(encodeRequest({ response_body: { body: Buffer.from('x'), end_of_stream: false } })).phase).toBe(
      Phase.responseBody,
    );
    expect(decodeProcessingRequest(encodeRequest({ response_trailers: {} })).phase).toBe(Phase.responseTrailers);
    expect(decodeProcessingRequest(encodeRequest({}))).toMatchObject({ phase: Phase.none, malformed: false });
    expect(decodeProcessingRequest(Buffer.alloc(0))).toMatchObject({ phase: Phase.none, malformed: false });
  });

  it('skips unknown fields of every wire type at every level', () => {
    const headers = encodeRequest(envoyHeaders([[':path', '/g']], true));
    // unknown fields: 50 varint, 51 fixed64, 52 length-delimited, 53 fixed32
    const unknown = Buffer.from([
      0x90, 0x03, 0x96, 0x01, 0x99, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 0xa2, 0x03, 0x02, 0xff, 0xfe, 0xad, 0x03, 9, 9, 9, 9,
    ]);
    const nest = (tag: number, inner: Buffer): Buffer => Buffer.concat([Buffer.from([tag, inner.length]), inner]);
    // HeaderValue with an unknown field in front, inside a HeaderMap with one too, inside HttpHeaders with one too
    const hv = Buffer.concat([unknown, nest(0x0a, Buffer.from('k')), nest(0x1a, Buffer.from('v'))]);
    const map = Buffer.concat([unknown, nest(0x0a, hv)]);
    const httpHeaders = Buffer.concat([unknown, nest(0x0a, map), Buffer.from([0x18, 0x01])]);
    const msg = Buffer.concat([unknown, headers.subarray(0, 0), nest(0x12, httpHeaders), unknown]);
    const r = decodeProcessingRequest(msg);
    expect(r).toMatchObject({ phase: Phase.requestHeaders, headers: ['k', 'v'], endOfStream: true, malformed: false });
    const body = Buffer.concat([
      unknown,
      nest(0x22, Buffer.concat([unknown, nest(0x0a, Buffer.from('{}')), Buffer.from([0x10, 0x01]), unknown])),
    ]);
    const b = decodeProcessingRequest(body);
    expect(b.body?.toString()).toBe('{}');
    expect(b.endOfStream).toBe(true);
  });

  it('marks truncated or invalid bytes malformed, and never throws', () => {
    // one outer field only, so that every cut short of the end is inside it
    const good = encodeRequest({ request_headers: (envoyHeaders(REQUEST_HEADERS, true) as { request_headers: object }).request_headers });
    expect(decodeProcessingRequest(good).malformed).toBe(false);
    for (let n = 1; n < good.length; n++) expect(decodeProcessingRequest(good.subarray(0, n)).malformed).toBe(true);
    expect(decodeProcessingRequest(Buffer.from([0x13])).malformed).toBe(true); // group wire type
    expect(decodeProcessingRequest(Buffer.from([0x12, 0x05, 0x0a])).malformed).toBe(true); // length past the end
    // varint too long
    expect(decodeProcessingRequest(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])).malformed).toBe(true);
  });
});

describe('ProcessingResponse encoding', () => {
  it('CONTINUE answers are the bytes proto-loader encodes', () => {
    expect(CONTINUE_REQUEST_HEADERS.equals(encodeResponse({ request_headers: { response: {} } }))).toBe(true);
    expect(CONTINUE_RESPONSE_HEADERS.equals(encodeResponse({ response_headers: { response: {} } }))).toBe(true);
    expect(CONTINUE_REQUEST_BODY.equals(encodeResponse({ request_body: { response: {} } }))).toBe(true);
    expect(CONTINUE_RESPONSE_BODY.equals(encodeResponse({ response_body: { response: {} } }))).toBe(true);
    expect(CONTINUE_RESPONSE_TRAILERS.equals(encodeResponse({ response_trailers: {} }))).toBe(true);
    expect(decodeResponse(CONTINUE_REQUEST_HEADERS)).toMatchObject({ request_headers: { response: {} } });
  });

  // [status, its name in envoy.type.v3.StatusCode (proto-loader decodes enums as names), headers, body]
  const cases: Array<[number, string, Record<string, string>, string]> = [
    [200, 'OK', { 'content-type': 'application/json; charset=utf-8' }, '{"data":{"productsForHome":[{"id":1,"title":"Book 1"}]}}'],
    [
      405,
      'MethodNotAllowed',
      { 'content-type': 'application/graphql-response+json; charset=utf-8', allow: 'GET, POST' },
      '{"errors":[{"message":"no"}]}',
    ],
    [503, 'ServiceUnavailable', {}, ''],
    [200, 'OK', { 'x-unicode': 'caf\u00e9 \u2713', 'x-empty': '' }, '\u00e9\u2713'.repeat(100)],
    [413, 'PayloadTooLarge', { 'content-type': 'application/json' }, 'x'.repeat(70_000)],
  ];

  it('immediate responses are the bytes proto-loader encodes, and decode back', () => {
    for (const [status, statusName, headers, body] of cases) {
      const mine = encodeImmediateResponse(status, headers, body, 'legate_graphql');
      const theirs = encodeResponse({
        immediate_response: {
          status: { code: status },
          headers: { set_headers: Object.entries(headers).map(([key, v]) => ({ header: { key, raw_value: Buffer.from(v) } })) },
          body: Buffer.from(body),
          details: 'legate_graphql',
        },
      });
      expect(mine.equals(theirs)).toBe(true);
      const back = decodeResponse(mine);
      expect(back['immediate_response'].status.code).toBe(statusName);
      expect(back['immediate_response'].details).toBe('legate_graphql');
      expect(Buffer.from(back['immediate_response'].body).toString('utf8')).toBe(body);
      const hs = ((back['immediate_response'].headers.set_headers ?? []) as Array<{ header: { key: string; raw_value: Buffer } }>).map(
        (o) => [o.header.key, Buffer.from(o.header.raw_value).toString('utf8')],
      );
      expect(hs).toEqual(Object.entries(headers));
    }
  });

  it('leaves reserved room in front of the message', () => {
    const plain = encodeImmediateResponse(200, { a: 'b' }, '{}', 'd');
    const reserved = encodeImmediateResponse(200, { a: 'b' }, '{}', 'd', 5);
    expect(reserved.length).toBe(plain.length + 5);
    expect(reserved.subarray(5).equals(plain)).toBe(true);
  });
});
