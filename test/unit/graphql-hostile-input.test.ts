// Input the engine refuses before parsing: malformed UTF-8 bodies (not decoded into U+FFFD and run) and
// documents nested deeper than the parser's recursion should be trusted with.
import { describe, expect, it } from 'vitest';
import { createEngine, nestingOf } from '../../extensions/graphql/engine/index.js';

const engine = createEngine({
  name: 'ns.api',
  version: '1',
  schemaDefinition: 'type Query { hello(name: String): String @resolve(name: "Query|hello") }',
  enableIntrospection: false,
  maxDepth: 0,
  resolutions: { 'Query|hello': { mock: { syncResponse: 'hi' } } },
});

const post = (body: Buffer | string) =>
  engine.handle({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: typeof body === 'string' ? Buffer.from(body) : body,
  });

describe('hostile input', () => {
  it('refuses a body that is not valid UTF-8, inside strings too', async () => {
    for (const bad of [
      Buffer.concat([Buffer.from('{"query":"{ hello(name: \\"'), Buffer.from([0xff, 0xfe]), Buffer.from('\\") }"}')]),
      Buffer.concat([Buffer.from('{"query":"{ hello }","variables":{"n":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]),
    ]) {
      const r = await post(bad);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toEqual({ errors: [{ message: 'Malformed body: the request body is not valid UTF-8.' }] });
    }
    // a leading byte order mark and real non-ASCII text are fine
    const bom = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"query":"{ hello(name: \\"café ✓\\") }"}')]));
    expect(JSON.parse(bom.body)).toEqual({ data: { hello: 'hi' } });
  });

  it('refuses documents nested deeper than 256 brackets before parsing them', async () => {
    const deep = await post(JSON.stringify({ query: `{ ${'hello { '.repeat(300)}x${' }'.repeat(300)} }` }));
    expect(deep.status).toBe(200); // application/json: request errors are 200 with errors
    expect(JSON.parse(deep.body).errors[0].message).toBe('Syntax Error: the document nests 301 levels deep, over the limit of 256.');
    const brackets = await post(JSON.stringify({ query: '{'.repeat(100_000) }));
    expect(JSON.parse(brackets.body).errors[0].message).toContain('over the limit of 256');
  });

  it('counts brackets outside strings and comments only', () => {
    expect(nestingOf('{ a { b(x: [1, [2]]) } }')).toBe(5);
    expect(nestingOf('{ a(s: "{{{{{{ \\" {{{") }')).toBe(2);
    expect(nestingOf('{ a } # {{{{{{{{\n{ b }')).toBe(1);
    expect(nestingOf('{ a(s: """ {{{ \\""" {{{ """) }')).toBe(2);
    expect(nestingOf('{ a(s: "unterminated {{{\n{ b } }')).toBe(3);
  });
});
