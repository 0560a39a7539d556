// re2Error: RE2's verdict on a pattern, with bounded memory (controller/translate/regex.ts).
import { describe, expect, it } from 'vitest';
import { MAX_REGEX_LENGTH, re2Error } from '../../controller/translate/regex.js';

describe('re2Error', () => {
  it('accepts RE2 syntax and refuses what RE2 refuses, with its reason', () => {
    expect(re2Error('^/api/v[0-9]+/.*$')).toBeUndefined();
    expect(re2Error('(?<=x)y')).toMatch(/invalid/);
    expect(re2Error('(')).toMatch(/missing \)/);
  });

  it('still accepts good patterns after thousands of refused ones (the wasm heap is freed each time)', () => {
    // without the fix, ~1,800 of these fill re2-wasm's heap and every later pattern is "out of memory"
    for (let i = 0; i < 2500; i++) expect(re2Error(`${'a'.repeat(2000)}${i}(`)).toMatch(/missing \)/);
    expect(re2Error('^/api/v[0-9]+/.*$')).toBeUndefined();
  });

  it('refuses patterns over the length limit without compiling them', () => {
    expect(re2Error('a'.repeat(MAX_REGEX_LENGTH))).toBeUndefined();
    expect(re2Error('a'.repeat(MAX_REGEX_LENGTH + 1))).toBe(
      `regex is ${MAX_REGEX_LENGTH + 1} characters long, more than ${MAX_REGEX_LENGTH}`,
    );
  });
});
