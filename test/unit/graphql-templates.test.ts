// Resolver templates and the REST request/response shaping, without any network.
import { describe, expect, it } from 'vitest';
import type { RestResolverConfig } from '../../common/contract.js';
import { buildCall, compileRest, shapeResult } from '../../extensions/graphql/engine/rest.js';
import {
  compileBodyPath,
  compileJson,
  compileSetter,
  compileString,
  getPath,
  parsePath,
  stringifyValue,
  TemplateError,
} from '../../extensions/graphql/engine/templates.js';

const REQ = ['parent', 'args', 'headers'] as const;

function rest(
  headers: Record<string, string>,
  more: Partial<RestResolverConfig> = {},
  response: RestResolverConfig['response'] = { setters: {} },
): RestResolverConfig {
  return {
    upstream: { name: 'ns.up', endpoints: [{ address: '127.0.0.1', port: 1 }] },
    request: { queryParams: {}, ...(more.request ?? {}), headers },
    response,
    timeoutMs: more.timeoutMs ?? 1000,
  };
}

describe('paths', () => {
  const doc = {
    a: { b: 1 },
    list: [
      { id: 1, tags: ['x'] },
      { id: 2, tags: ['y', 'z'] },
    ],
    map: { k1: 'v1', k2: 'v2' },
  };

  it('walks keys, indexes and [*]', () => {
    expect(getPath(doc, parsePath('a.b', 't'))).toBe(1);
    expect(getPath(doc, parsePath('.a.b', 't'))).toBe(1);
    expect(getPath(doc, parsePath('list[1].id', 't'))).toBe(2);
    expect(getPath(doc, parsePath('list[*].id', 't'))).toEqual([1, 2]);
    expect(getPath(doc, parsePath('list[*].tags[0]', 't'))).toEqual(['x', 'y']);
    expect(getPath(doc, parsePath('list[*]', 't'))).toEqual(doc.list);
    // on an object, [*] yields [key, value] pairs (Gloo)
    expect(getPath(doc, parsePath('map[*][0]', 't'))).toEqual(['k1', 'k2']);
    expect(getPath(doc, parsePath('map[*][1]', 't'))).toEqual(['v1', 'v2']);
    expect(getPath([{ x: 1 }], parsePath('[0].x', 't'))).toBe(1);
  });

  it('gives undefined for anything missing, never the prototype', () => {
    expect(getPath(doc, parsePath('a.c', 't'))).toBeUndefined();
    expect(getPath(doc, parsePath('a.b.c', 't'))).toBeUndefined();
    expect(getPath(doc, parsePath('list[5].id', 't'))).toBeUndefined();
    expect(getPath(doc, parsePath('a[0]', 't'))).toBeUndefined();
    expect(getPath(doc, parsePath('list.length', 't'))).toBeUndefined();
    expect(getPath(doc, parsePath('a.constructor', 't'))).toBeUndefined();
    expect(getPath(undefined, parsePath('a', 't'))).toBeUndefined();
  });

  it('rejects malformed paths', () => {
    expect(() => parsePath('a..b', 't')).toThrow(TemplateError);
    expect(() => parsePath('a[x]', 't')).toThrow(/neither an index nor/);
    expect(() => parsePath('a[0', 't')).toThrow(/unclosed/);
  });
});

describe('template strings', () => {
  const ctx = { parent: { id: 7, name: 'a b/c' }, args: { ids: [1, 2], filter: { q: 'x' }, n: 3 }, headers: { authorization: 'Bearer t' } };

  it('substitutes values inside a string, stringified', () => {
    const c = compileString('/p/{$parent.id}/n/{$args.n}', REQ, 't');
    expect(c.constant).toBe(false);
    expect(c.whole).toBeUndefined();
    expect(c.render(ctx)).toBe('/p/7/n/3');
    expect(compileString('{$args.ids}', REQ, 't').render(ctx)).toBe('1,2');
    expect(compileString('f={$args.filter}', REQ, 't').render(ctx)).toBe('f={"q":"x"}');
    expect(compileString('x{$parent.nope}y', REQ, 't').render(ctx)).toBe('xy');
  });

  it('encodes substituted values only', () => {
    const c = compileString('/items/{$parent.name}?x=1', REQ, 't');
    expect(c.render(ctx, encodeURIComponent)).toBe('/items/a%20b%2Fc?x=1');
  });

  it('reads headers by lowercased name', () => {
    expect(compileString('{$headers.Authorization}', REQ, 't').render(ctx)).toBe('Bearer t');
    expect(compileString('{$headers.x-missing}', REQ, 't').render(ctx)).toBe('');
  });

  it('keeps the value of a whole-string placeholder', () => {
    const c = compileString('{$args.filter}', REQ, 't');
    expect(c.whole?.source).toBe('args');
    expect(c.value(ctx)).toEqual({ q: 'x' });
  });

  it('leaves literal braces alone and rejects unknown or malformed placeholders', () => {
    expect(compileString('{"a": 1}', REQ, 't').constant).toBe(true);
    expect(() => compileString('{$body.x}', REQ, 'where')).toThrow(/where: unknown template variable "\{\$body\.x\}"/);
    expect(() => compileString('{$foo}', REQ, 't')).toThrow(/unknown template variable/);
    expect(() => compileString('/p/{$parent.id', REQ, 't')).toThrow(/malformed template/);
    expect(() => compileString('{$headers}', REQ, 't')).toThrow(/must name a header/);
  });

  it('stringifies scalars, lists of scalars and objects', () => {
    expect(stringifyValue(null)).toBe('');
    expect(stringifyValue(undefined)).toBe('');
    expect(stringifyValue(1.5)).toBe('1.5');
    expect(stringifyValue(true)).toBe('true');
    expect(stringifyValue(['a', 1, null])).toBe('a,1,');
    expect(stringifyValue([{ a: 1 }])).toBe('[{"a":1}]');
  });
});

describe('JSON bodies', () => {
  const ctx = { parent: { id: 7 }, args: { n: 3, input: { a: [1] } }, headers: {} };

  it('keeps JSON types for whole placeholders, null for missing, strings otherwise', () => {
    const c = compileJson(
      {
        id: '{$parent.id}',
        n: '{$args.n}',
        input: '{$args.input}',
        missing: '{$args.nope}',
        label: 'id-{$parent.id}',
        nested: [{ x: '{$args.n}' }],
        fixed: 1,
      },
      REQ,
      'b',
    );
    expect(c.constant).toBe(false);
    expect(c.value(ctx)).toEqual({ id: 7, n: 3, input: { a: [1] }, missing: null, label: 'id-7', nested: [{ x: 3 }], fixed: 1 });
  });

  it('precomputes constant bodies', () => {
    const body = { a: [1, { b: 'c' }] };
    const c = compileJson(body, REQ, 'b');
    expect(c.constant).toBe(true);
    expect(c.value(ctx)).toEqual(body);
  });
});

describe('REST resolver compilation', () => {
  it('builds method, path, query, headers and body', () => {
    const c = compileRest(
      'Query|search',
      rest(
        { ':method': 'post', ':path': '/search/{$args.kind}', 'X-Token': '{$headers.authorization}', 'X-Static': 's' },
        {
          request: {
            headers: {},
            queryParams: { q: '{$args.q}', limit: '{$args.limit}', tag: 'a&b' },
            body: { q: '{$args.q}', page: '{$args.page}' },
          },
        },
      ),
    );
    const { spec, key } = buildCall(c, {
      parent: undefined,
      args: { kind: 'a/b', q: 'x y', page: 2 },
      headers: { authorization: 'Bearer t' },
    });
    expect(spec.method).toBe('POST');
    // optional args not given are left out of the query string
    expect(spec.path).toBe('/search/a%2Fb?q=x%20y&tag=a%26b');
    expect(spec.headers).toMatchObject({
      'x-token': 'Bearer t',
      'x-static': 's',
      accept: 'application/json',
      'content-type': 'application/json',
    });
    expect(spec.body).toBe('{"q":"x y","page":2}');
    expect(spec.headers['content-length']).toBe(String(Buffer.byteLength(spec.body!)));
    expect(key).toContain('POST /search/a%2Fb?q=x%20y&tag=a%26b');
    expect(spec.timeoutMs).toBe(1000);
  });

  it('defaults to GET and leaves out headers that render empty', () => {
    const c = compileRest('Product|details', rest({ ':path': '/details/{$parent.id}', authorization: '{$headers.authorization}' }));
    const { spec } = buildCall(c, { parent: { id: 3 }, args: {}, headers: {} });
    expect(spec.method).toBe('GET');
    expect(spec.path).toBe('/details/3');
    expect(spec.headers['authorization']).toBeUndefined();
    expect(spec.body).toBeUndefined();
  });

  it('gives identical calls identical keys, whatever the header order in the config', () => {
    const a = compileRest('A', rest({ ':path': '/x', 'x-a': '1', 'x-b': '2' }));
    const b = compileRest('B', rest({ 'x-b': '2', ':path': '/x', 'x-a': '1' }));
    const ctx = { parent: {}, args: {}, headers: {} };
    expect(buildCall(a, ctx).key).toBe(buildCall(b, ctx).key);
  });

  it('applies the default timeout when the config has none', () => {
    const c = compileRest('A', { ...rest({ ':path': '/x' }), timeoutMs: 0 });
    expect(c.timeoutMs).toBe(1000);
  });

  it('rejects unusable configs with the resolver named', () => {
    expect(() => compileRest('Q|a', rest({}))).toThrow(/resolution "Q\|a": request.headers has no ":path"/);
    expect(() => compileRest('Q|a', rest({ ':path': 'no-slash' }))).toThrow(/must start with "\/"/);
    expect(() => compileRest('Q|a', rest({ ':path': '/x', ':method': 'GE T' }))).toThrow(/:method/);
    expect(() => compileRest('Q|a', rest({ ':path': '/x/{$body.id}' }))).toThrow(/unknown template variable/);
    expect(() => compileRest('Q|a', rest({ ':path': '/x' }, {}, { setters: { a: '{$parent.id}' } }))).toThrow(/allowed here: \$body/);
  });
});

describe('response shaping', () => {
  const c = (response: RestResolverConfig['response']) => compileRest('R', rest({ ':path': '/x' }, {}, response));

  it('picks the result root with {$body...} or a bare path', () => {
    const body = { data: { items: [{ id: 1 }] } };
    expect(shapeResult(c({ resultRoot: '{$body.data}', setters: {} }), body)).toEqual({ items: [{ id: 1 }] });
    expect(shapeResult(c({ resultRoot: 'data.items', setters: {} }), body)).toEqual([{ id: 1 }]);
    expect(shapeResult(c({ resultRoot: '{$body}', setters: {} }), body)).toBe(body);
    expect(shapeResult(c({ resultRoot: 'nope.x', setters: {} }), body)).toBeUndefined();
    expect(() => compileBodyPath('x {$body.a}', 't')).toThrow(/single/);
  });

  it('applies setters to an object, keeping its other attributes', () => {
    const shaped = shapeResult(
      c({ resultRoot: 'data', setters: { lastname: '{$body.details.lastname}', full: '{$body.details.first} {$body.details.lastname}' } }),
      {
        data: { id: 1, details: { first: 'Ada', lastname: 'Lovelace' } },
      },
    );
    expect(shaped).toEqual({ id: 1, details: { first: 'Ada', lastname: 'Lovelace' }, lastname: 'Lovelace', full: 'Ada Lovelace' });
  });

  it('applies setters to each element of a list root', () => {
    const shaped = shapeResult(c({ resultRoot: 'items', setters: { name: '{$body.n}', num: 'meta.num' } }), {
      items: [{ n: 'a', meta: { num: 1 } }, null, { n: 'b', meta: { num: 2 } }],
    });
    expect(shaped).toEqual([{ n: 'a', meta: { num: 1 }, name: 'a', num: 1 }, null, { n: 'b', meta: { num: 2 }, name: 'b', num: 2 }]);
  });

  it('bare-path setters (Gloo 1.10 style) read the element', () => {
    expect(compileSetter('a.b', 't')({ body: { a: { b: 2 } } })).toBe(2);
  });
});
