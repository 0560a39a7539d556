// Bearer token syntax (RFC 6750 §2.1), the form encoding of client credentials, and the bounded cache.
import { describe, expect, it } from 'vitest';
import { MAX_TOKEN_LENGTH, parseBearer } from '../../extensions/extauth/token.js';
import { basicAuthorization, formEncode, interpret, redactUrl, tokenHash, tokenRef } from '../../extensions/extauth/introspect.js';
import { ExpiringCache } from '../../extensions/extauth/cache.js';

describe('parseBearer', () => {
  it('accepts b64token with any case of the scheme and one or more spaces', () => {
    expect(parseBearer('Bearer abc')).toBe('abc');
    expect(parseBearer('bearer abc')).toBe('abc');
    expect(parseBearer('BEARER abc')).toBe('abc');
    expect(parseBearer('BeArEr   abc')).toBe('abc');
    expect(parseBearer('Bearer AZaz09-._~+/')).toBe('AZaz09-._~+/');
    expect(parseBearer('Bearer abc==')).toBe('abc==');
    expect(parseBearer('Bearer qOBsAk-WQSzLoWNPeyxgr8KcHFOPlxvV47dSvUCVpWO')).toBe('qOBsAk-WQSzLoWNPeyxgr8KcHFOPlxvV47dSvUCVpWO');
    const jwtish = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln';
    expect(parseBearer(`Bearer ${jwtish}`)).toBe(jwtish);
  });

  it('rejects other schemes and malformed credentials', () => {
    for (const bad of [
      '',
      'Bearer',
      'Bearer ',
      'Bearer  ',
      'Basic dXNlcjpwYXNz',
      'Bearerabc',
      'Bearer\tabc',
      'Bearer abc def',
      'Bearer abc ',
      ' Bearer abc',
      'Bearer =abc',
      'Bearer ==',
      'Bearer ab=c',
      'Bearer abc!',
      'Bearer ab,c',
      'Bearer a"b',
      'Bearer abc\u00e9',
      'Bearer abc\u0000',
      'Bearer a,Bearer b',
      'Token abc',
      'Bearers abc',
      'DPoP abc',
    ]) {
      expect(parseBearer(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it('enforces the length limit', () => {
    expect(parseBearer(`Bearer ${'a'.repeat(MAX_TOKEN_LENGTH)}`)).toHaveLength(MAX_TOKEN_LENGTH);
    expect(parseBearer(`Bearer ${'a'.repeat(MAX_TOKEN_LENGTH + 1)}`)).toBeUndefined();
    expect(parseBearer(`Bearer ${'a'.repeat(1_000_000)}`)).toBeUndefined();
  });
});

describe('client authentication and logging helpers', () => {
  it('form-encodes id and secret before base64 (RFC 6749 §2.3.1)', () => {
    expect(formEncode('a b+c/d:e~!*')).toBe('a+b%2Bc%2Fd%3Ae%7E%21*');
    const header = basicAuthorization('my client', 'p@ss:w/rd');
    expect(Buffer.from(header.slice(6), 'base64').toString()).toBe('my+client:p%40ss%3Aw%2Frd');
    expect(basicAuthorization('legate-extauth', 'secret')).toBe(`Basic ${Buffer.from('legate-extauth:secret').toString('base64')}`);
  });

  it('refers to tokens by a short hash only', () => {
    const ref = tokenRef(tokenHash('secret-token'));
    expect(ref).toMatch(/^sha256:[0-9a-f]{12}$/);
    expect(ref).not.toContain('secret');
    expect(tokenHash('a')).not.toBe(tokenHash('b'));
  });

  it('redacts credentials and query strings from URLs', () => {
    expect(redactUrl('https://user:pw@idp.example.com:8443/oauth/introspect?key=k')).toBe('https://idp.example.com:8443/oauth/introspect');
  });
});

describe('interpret (introspection response)', () => {
  const j = (v: unknown) => Buffer.from(JSON.stringify(v));
  it('reads active, scope, exp and subject', () => {
    const r = interpret(j({ active: true, scope: 'a  b c', exp: 2000, client_id: 'cid' }), 5);
    expect(r.active).toBe(true);
    if (!r.active) return;
    expect([...r.scopes]).toEqual(['a', 'b', 'c']);
    expect(r.expiresAt).toBe(2_000_000);
    expect(r.fetchedAt).toBe(5);
    expect(r.subject).toBe('cid');
    expect(interpret(j({ active: true, sub: 's', client_id: 'c' }), 0)).toMatchObject({
      subject: 's',
      expiresAt: Number.POSITIVE_INFINITY,
    });
  });
  it('treats active:false as inactive and anything malformed as an error', () => {
    expect(interpret(j({ active: false, scope: 'x' }), 0)).toEqual({ active: false });
    for (const bad of [
      'not json',
      '[]',
      'null',
      '{}',
      '{"active":"true"}',
      '{"active":1}',
      '{"active":true,"scope":["a"]}',
      '{"active":true,"exp":"soon"}',
    ]) {
      expect(() => interpret(Buffer.from(bad), 0), bad).toThrow(/introspection|scope|exp/);
    }
  });
});

describe('ExpiringCache', () => {
  it('drops entries past their deadline', () => {
    const c = new ExpiringCache<{ deadAt: number; v: number }>(10);
    c.set('a', { deadAt: 100, v: 1 });
    expect(c.get('a', 99)?.v).toBe(1);
    expect(c.get('a', 100)).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('is bounded, evicting the oldest insertion first', () => {
    const c = new ExpiringCache<{ deadAt: number }>(3);
    for (const k of ['a', 'b', 'c', 'd']) c.set(k, { deadAt: 1e15 });
    expect(c.size).toBe(3);
    expect(c.get('a', 0)).toBeUndefined();
    expect(c.get('d', 0)).toBeDefined();
    c.set('b', { deadAt: 1e15 }); // re-insert makes b the youngest
    c.set('e', { deadAt: 1e15 });
    expect(c.get('c', 0)).toBeUndefined();
    expect(c.get('b', 0)).toBeDefined();
    c.resize(1);
    expect(c.size).toBe(1);
    expect(c.get('e', 0)).toBeDefined();
  });

  it('stores nothing with a zero bound, and sweeps dead entries', () => {
    const zero = new ExpiringCache<{ deadAt: number }>(0);
    zero.set('a', { deadAt: 1e15 });
    expect(zero.size).toBe(0);
    const c = new ExpiringCache<{ deadAt: number }>(10);
    c.set('a', { deadAt: 5 });
    c.set('b', { deadAt: 50 });
    expect(c.sweep(10)).toBe(1);
    expect(c.size).toBe(1);
  });
});
