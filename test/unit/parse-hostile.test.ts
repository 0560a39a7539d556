// Hostile YAML in a resource file is a load error of that file, never an exception out of the parser
// (one would crash the controller's watch loop).
import { describe, expect, it } from 'vitest';
import { parseResources, parseResourcesReusing } from '../../controller/source/parse.js';

const good = `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: good, namespace: legate-system }
spec: { static: { hosts: [{ addr: 127.0.0.1, port: 1 }] } }
`;

function aliasBomb(levels = 9): string {
  let text =
    'apiVersion: legate.dev/v1\nkind: Upstream\nmetadata: { name: bomb }\nspec:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n';
  for (let l = 1; l <= levels; l++) text += `  a${l}: &a${l} [${Array.from({ length: 9 }, () => `*a${l - 1}`).join(', ')}]\n`;
  return text;
}

describe('hostile YAML', () => {
  it('an alias bomb is a load error with a reason (the file keeps its last good resources)', () => {
    const text = `${good}---\n${aliasBomb()}`;
    for (const r of [parseResources(text, 'bomb.yaml'), parseResourcesReusing(text, 'bomb.yaml', undefined)]) {
      expect(r.syntaxError).toBe(true);
      expect(r.errors).toEqual([{ origin: 'bomb.yaml#2', message: expect.stringMatching(/^invalid YAML: Excessive alias count/) }]);
    }
  });

  it('an edit that adds an alias bomb to a file parsed before is a load error too', () => {
    const first = parseResourcesReusing(good, 'f.yaml', undefined);
    expect(first.resources).toHaveLength(1);
    const second = parseResourcesReusing(`${good}---\n${aliasBomb()}`, 'f.yaml', first.memo);
    expect(second.syntaxError).toBe(true);
    expect(second.errors[0]?.message).toMatch(/Excessive alias count/);
  });

  it('deep nesting and duplicate keys are load errors or plain values, never exceptions', () => {
    const deep = `${good}  deep: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`;
    expect(() => parseResources(deep, 'deep.yaml')).not.toThrow();
    const dup = parseResources(`${good}kind: VirtualService\n`, 'dup.yaml');
    expect(dup.syntaxError).toBe(true);
    expect(dup.errors[0]?.message).toMatch(/unique/i);
  });
});
