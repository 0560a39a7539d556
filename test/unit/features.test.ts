// The feature seam's invariants: one owner per kind, upstreams first, filter positions ordered.
import { describe, expect, it } from 'vitest';
import { KIND_NAMES, isValidatedKind } from '../../controller/api/kinds.js';
import { FilterStage, after, before, comparePositions, during } from '../../controller/translate/feature.js';
import { features } from '../../controller/translate/features/index.js';
import { CORE_KINDS } from '../../controller/translate/translate.js';

describe('feature list', () => {
  const list = features();

  it('names each feature once', () => {
    const names = list.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('gives every validated kind exactly one owner (the core or one feature), and no stored-only kind an owner', () => {
    for (const kind of KIND_NAMES) {
      const owners = [...(CORE_KINDS.includes(kind) ? ['core'] : []), ...list.filter((f) => f.kinds.includes(kind)).map((f) => f.name)];
      if (isValidatedKind(kind)) expect(owners, kind).toHaveLength(1);
      else expect(owners, kind).toEqual([]);
    }
  });

  it('resolves upstreams first, since later features route to them', () => {
    expect(list[0]?.name).toBe('upstreams');
  });
});

describe('filter positions', () => {
  it('orders by stage, then before < during < after', () => {
    const positions = [
      after(FilterStage.AuthN),
      during(FilterStage.Route),
      before(FilterStage.AuthN),
      during(FilterStage.Early),
      during(FilterStage.AuthN),
      before(FilterStage.RateLimit),
    ];
    const sorted = [...positions].sort(comparePositions);
    expect(sorted).toEqual([
      during(FilterStage.Early),
      before(FilterStage.AuthN),
      during(FilterStage.AuthN),
      after(FilterStage.AuthN),
      before(FilterStage.RateLimit),
      during(FilterStage.Route),
    ]);
  });
});
