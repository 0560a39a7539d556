// The single-message path's two halves without Envoy: which headers the controller asks Envoy to send as
// attributes (headersReadBy), and the graphql stream handler answering a body that carries them.
import { describe, expect, it } from 'vitest';
import type { GraphQLApiConfig } from '../../common/contract.js';
import { headerAttribute, headerOfAttribute } from '../../common/extproc-attributes.js';
import { headersReadBy } from '../../controller/translate/features/graphql/headers.js';
import type { Engine, GraphQLHttpRequest } from '../../extensions/graphql/engine/index.js';
import type { ProcessCall } from '../../extensions/graphql/extproc-server.js';
import { processStream } from '../../extensions/graphql/process-stream.js';
import { Phase, type ProcessingRequestIn } from '../../extensions/graphql/wire.js';

const silent = {
  component: 't',
  level: 'error' as const,
  enabled: () => false,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child() {
    return silent;
  },
};

function apiWith(resolutions: GraphQLApiConfig['resolutions']): GraphQLApiConfig {
  return {
    name: 'ns.api',
    version: '1',
    schemaDefinition: 'type Query { a: String }',
    enableIntrospection: false,
    maxDepth: 0,
    resolutions,
  };
}

const upstream = { name: 'ns.up', endpoints: [{ address: '127.0.0.1', port: 1 }] };

describe('headersReadBy', () => {
  it("lists the engine's headers and every {$headers.x} a resolver templates, lowercased and sorted", () => {
    const api = apiWith({
      'Query|a': {
        rest: {
          upstream,
          request: {
            headers: { ':path': '/a/{$headers.X-Tenant}', authorization: '{$headers.authorization}' },
            queryParams: {},
            body: { who: ['{$headers.x-user }'] },
          },
          response: { setters: {} },
          timeoutMs: 1000,
        },
      },
    });
    expect(headersReadBy(api)).toEqual(['accept', 'authorization', 'content-type', 'x-tenant', 'x-user']);
    expect(headersReadBy(apiWith({ 'Query|a': { mock: { syncResponse: 'x' } } }))).toEqual(['accept', 'content-type']);
  });

  it('gives up (all headers, the general path) on a header name a CEL string literal cannot hold', () => {
    const api = apiWith({
      'Query|a': {
        rest: { upstream, request: { headers: { x: "{$headers.it's}" }, queryParams: {} }, response: { setters: {} }, timeoutMs: 1000 },
      },
    });
    expect(headersReadBy(api)).toBeUndefined();
  });

  it('round-trips header attributes', () => {
    expect(headerAttribute('x-user')).toBe("request.headers['x-user']");
    expect(headerOfAttribute("request.headers['x-user']")).toBe('x-user');
    expect(headerOfAttribute('request.path')).toBeUndefined();
  });
});

describe('processStream on the single-message path', () => {
  it('takes method, path and headers from the attributes of a body that comes first, and answers it', async () => {
    const seen: GraphQLHttpRequest[] = [];
    const engine = {
      name: 'ns.api',
      version: '1',
      handle: async (req: GraphQLHttpRequest) => {
        seen.push(req);
        return { status: 200, headers: { 'content-type': 'application/json' }, body: '{"data":{"a":"b"}}' };
      },
    } as unknown as Engine;
    const ended: Buffer[] = [];
    const observed: unknown[][] = [];
    const call: ProcessCall = {
      metadata: (name) => (name === 'x-legate-graphql-api' ? 'ns.api' : ''),
      write: () => expect.unreachable('no CONTINUE on the single-message path'),
      end: (last) => void (last && ended.push(last)),
    };
    const handler = processStream(
      call,
      () => new Map([['ns.api', engine]]),
      silent,
      (...args) => void observed.push(args),
    );
    const msg: ProcessingRequestIn = {
      phase: Phase.requestBody,
      headers: [],
      body: Buffer.from('{"query":"{a}"}'),
      endOfStream: true,
      attributes: [
        'request.method',
        'POST',
        'request.path',
        '/graphql?x=1',
        "request.headers['content-type']",
        'application/json',
        "request.headers['x-user']",
        'ada',
      ],
      malformed: false,
    };
    handler.message(msg);
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([
      { method: 'POST', path: '/graphql?x=1', headers: { 'content-type': 'application/json', 'x-user': 'ada' }, body: msg.body },
    ]);
    expect(ended).toHaveLength(1);
    expect(observed[0]?.[1]).toBe(200);
    expect(observed[0]?.[3]).toBe(true);
  });
});
