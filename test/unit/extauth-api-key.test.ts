// apiKeyAuth and booleanExpr: the expression parser (syntax, precedence, names), the shared schema's
// checks, and the Authorizer deciding with API keys given as sha256 digests only (and never logging a key).
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseAuthConfigConfig, parseBooleanExpr, type BoolExpr } from '../../common/auth-config.js';
import { createLogger } from '../../common/log.js';
import { Authorizer } from '../../extensions/extauth/authorizer.js';

const names = ['a', 'b', 'c'];

/** The expression back as text with every operator parenthesised: shows how it was grouped. */
function show(e: BoolExpr): string {
  if (e.op === 'step') return names[e.step]!;
  if (e.op === 'not') return `!${show(e.expr)}`;
  return `(${show(e.left)} ${e.op === 'and' ? '&&' : '||'} ${show(e.right)})`;
}

describe('parseBooleanExpr', () => {
  it('parses names, !, && over ||, parentheses, with or without spaces', () => {
    expect(show(parseBooleanExpr('a || b && c', names))).toBe('(a || (b && c))');
    expect(show(parseBooleanExpr('(a||b)&&c', names))).toBe('((a || b) && c)');
    expect(show(parseBooleanExpr('!a && !(b || c)', names))).toBe('(!a && !(b || c))');
    expect(show(parseBooleanExpr('a && b && c', names))).toBe('((a && b) && c)');
    expect(show(parseBooleanExpr('!!a || b || c', names))).toBe('((!!a || b) || c)');
  });

  it('rejects bad syntax with a position', () => {
    expect(() => parseBooleanExpr('', names)).toThrow('is empty');
    expect(() => parseBooleanExpr('a ||', names)).toThrow('expected a step name but found end of expression');
    expect(() => parseBooleanExpr('(a || b && c', names)).toThrow('expected ")"');
    expect(() => parseBooleanExpr('a || b) && c', names)).toThrow('unexpected ")" at 6');
    expect(() => parseBooleanExpr('a | b || c', names)).toThrow('unexpected "|" at 2');
    expect(() => parseBooleanExpr('a b || c', names)).toThrow('unexpected "b" at 2');
    expect(() => parseBooleanExpr('a && || b && c', names)).toThrow('expected a step name but found "||" at 5');
  });

  it('rejects unknown names, unnamed, duplicate and unused steps', () => {
    expect(() => parseBooleanExpr('a || b || d', names)).toThrow('unknown step name "d"');
    expect(() => parseBooleanExpr('a || b', ['a', 'b', undefined])).toThrow('step 2 has no name');
    expect(() => parseBooleanExpr('a || b', ['a', 'b', 'a'])).toThrow('step name "a" is used twice');
    expect(() => parseBooleanExpr('a || b', names)).toThrow('step "c" is not used by the expression');
  });
});

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const apiKey = (name: string | undefined, keys: string[], headerName = 'api-key') => ({
  type: 'api-key',
  ...(name ? { name } : {}),
  headerName,
  keySha256: keys.map(sha),
});

describe('the shared schema', () => {
  it('checks api-key steps and booleanExpr', () => {
    expect(() => parseAuthConfigConfig({ name: 'n.a', steps: [{ type: 'api-key', headerName: 'api-key', keySha256: ['k1'] }] })).toThrow(
      'n.a.steps[0].keySha256[0]: must be a sha256 digest',
    );
    expect(() => parseAuthConfigConfig({ name: 'n.a', steps: [{ ...apiKey(undefined, ['k']), headerName: 'Api-Key' }] })).toThrow(
      'lower-case HTTP header name',
    );
    expect(() => parseAuthConfigConfig({ name: 'n.a', steps: [apiKey('x', ['k'])], booleanExpr: 'x ||' })).toThrow(
      'n.a.booleanExpr: expected a step name',
    );
    expect(parseAuthConfigConfig({ name: 'n.a', steps: [apiKey('x', ['k'])], booleanExpr: '!!x' }).booleanExpr).toBe('!!x');
  });
});

describe('Authorizer with API keys and booleanExpr', () => {
  const lines: string[] = [];
  let authz: Authorizer;
  beforeEach(() => {
    authz = new Authorizer({ logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }) });
    const { problems } = authz.apply([
      { name: 'ns.keys', version: 'v1', steps: [apiKey(undefined, ['key-one', 'key-two'])] },
      { name: 'ns.custom', steps: [apiKey(undefined, ['key-one'], 'x-api-key')] },
      { name: 'ns.either', steps: [apiKey('one', ['key-one']), apiKey('two', ['key-two'], 'x-two')], booleanExpr: 'one || two' },
      { name: 'ns.both', steps: [apiKey('one', ['key-one']), apiKey('two', ['key-two'], 'x-two')], booleanExpr: 'one && two' },
      { name: 'ns.not', steps: [apiKey('one', ['key-one'])], booleanExpr: '!one' },
      {
        name: 'ns.key-or-jwt',
        steps: [
          apiKey('key', ['key-one']),
          { type: 'oauth2-jwt', name: 'jwt', remoteJwks: { url: 'http://127.0.0.1:1/jwks', refreshIntervalMs: 60_000 } },
        ],
        booleanExpr: 'key || jwt',
      },
    ]);
    expect(problems).toEqual([]);
  });
  afterEach(() => authz.stop());

  it('allows a known key, denies a missing or wrong one (synchronously, never for the edge cache)', () => {
    const grant = { key: '', until: 0 };
    expect(authz.check('ns.keys', undefined, false, grant, { 'api-key': 'key-two' })).toBe('allow');
    expect(grant).toEqual({ key: '', until: 0 });
    expect(authz.check('ns.keys', undefined, false, undefined, {})).toBe('missing_api_key');
    expect(authz.check('ns.keys', undefined, false, undefined, { 'api-key': '' })).toBe('missing_api_key');
    expect(authz.check('ns.keys', 'Bearer key-one', false, undefined, { 'api-key': 'key-three' })).toBe('invalid_api_key');
    expect(authz.check('ns.keys', undefined, false, undefined, { 'api-key': 'key-one,key-two' })).toBe('invalid_api_key');
    expect(authz.check('ns.keys', undefined, false, undefined, { 'api-key': 'x'.repeat(10_000) })).toBe('invalid_api_key');
    expect(authz.check('ns.custom', undefined, false, undefined, { 'api-key': 'key-one' })).toBe('missing_api_key');
    expect(authz.check('ns.custom', undefined, false, undefined, { 'x-api-key': 'key-one' })).toBe('allow');
  });

  it('evaluates booleanExpr: or, and, not', async () => {
    expect(await authz.check('ns.either', undefined, false, undefined, { 'x-two': 'key-two' })).toBe('allow');
    expect(await authz.check('ns.either', undefined, false, undefined, { 'api-key': 'key-one' })).toBe('allow');
    expect(await authz.check('ns.either', undefined, false, undefined, { 'api-key': 'nope' })).toBe('missing_api_key'); // x-two's
    expect(await authz.check('ns.both', undefined, false, undefined, { 'api-key': 'key-one' })).toBe('missing_api_key');
    expect(await authz.check('ns.both', undefined, false, undefined, { 'api-key': 'key-one', 'x-two': 'key-two' })).toBe('allow');
    expect(await authz.check('ns.not', undefined, false, undefined, { 'api-key': 'key-one' })).toBe('access_denied');
    expect(await authz.check('ns.not', undefined, false, undefined, {})).toBe('allow');
  });

  it('with key || jwt, a key needs no token, and no key and no token denies for the token', async () => {
    expect(await authz.check('ns.key-or-jwt', undefined, false, undefined, { 'api-key': 'key-one' })).toBe('allow');
    expect(await authz.check('ns.key-or-jwt', undefined, false, undefined, {})).toBe('missing_token');
    expect(await authz.check('ns.key-or-jwt', 'Basic x', false, undefined, {})).toBe('invalid_request');
    expect(await authz.check('ns.key-or-jwt', 'Bearer not.a.jwt', false, undefined, { 'api-key': 'bad' })).toBe('invalid_token');
  });

  it('never logs or shows a key', () => {
    authz.check('ns.keys', undefined, false, undefined, { 'api-key': 'key-wrong-secret' });
    expect(JSON.stringify(authz.summaries()['ns.keys'])).toBe('{"steps":[{"type":"api-key","headerName":"api-key","keys":2}]}');
    const all = lines.join('\n');
    expect(all).toContain('invalid_api_key');
    for (const k of ['key-one', 'key-two', 'key-wrong-secret', sha('key-one')]) expect(all).not.toContain(k);
  });
});
