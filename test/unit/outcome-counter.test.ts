import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { outcomeCounter } from '../../extensions/common/outcome-counter.js';

const value = async (registry: Registry, outcome: string): Promise<number | undefined> => {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'test_calls_total');
  return (metric?.values as { labels: { outcome?: string }; value: number }[] | undefined)?.find((v) => v.labels.outcome === outcome)
    ?.value;
};

describe('outcomeCounter', () => {
  it('shows the calls counted since the start on each scrape, by outcome', async () => {
    const registry = new Registry();
    const count = outcomeCounter<'ok' | 'denied'>(registry, 'test_calls_total', 'calls by outcome');
    count('ok');
    count('ok');
    count('denied');
    expect(await value(registry, 'ok')).toBe(2);
    expect(await value(registry, 'denied')).toBe(1);
    count('ok');
    expect(await value(registry, 'ok')).toBe(3);
    expect(await value(registry, 'denied')).toBe(1);
    expect(await registry.metrics()).toContain('test_calls_total{outcome="ok"} 3');
  });
});
