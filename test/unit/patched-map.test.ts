// PatchedMap: a map with some values replaced reads as the copy it stands for, and never changes its base.
import { describe, expect, it } from 'vitest';
import { PatchedMap } from '../../controller/translate/delegation/patched-map.js';

describe('PatchedMap', () => {
  it('reads as a copy of its base with the changes applied, in the base order, and leaves the base alone', () => {
    const base = new Map([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
    const patched = PatchedMap.of(base, new Map([['b', 20]]));
    expect([...patched]).toEqual([
      ['a', 1],
      ['b', 20],
      ['c', 3],
    ]);
    expect([...patched.keys()]).toEqual(['a', 'b', 'c']);
    expect([...patched.values()]).toEqual([1, 20, 3]);
    expect([patched.get('b'), patched.get('c'), patched.get('z'), patched.has('a'), patched.has('z'), patched.size]).toEqual([
      20,
      3,
      undefined,
      true,
      false,
      3,
    ]);
    const seen: [string, number][] = [];
    patched.forEach((v, k) => seen.push([k, v]));
    expect(seen).toEqual([...patched]);
    expect([...base]).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
    expect(PatchedMap.of(base, new Map())).toBe(base);
  });

  it('patched again and again, reads the latest values (flattened past a few layers)', () => {
    let map: ReadonlyMap<string, number> = new Map([
      ['a', 0],
      ['b', 0],
    ]);
    for (let i = 1; i <= 20; i++) {
      map = PatchedMap.of(map, new Map([[i % 2 ? 'a' : 'b', i]]));
      expect(Object.fromEntries(map)).toEqual(i % 2 ? { a: i, b: i - 1 } : { a: i - 1, b: i });
    }
  });
});
