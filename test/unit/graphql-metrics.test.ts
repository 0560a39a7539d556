// The graphql service's per-API metric label sets go with their API: a GraphQLApi deleted from the cluster
// leaves nothing behind in /metrics (unscraped, they are pruned as new APIs come: test/faults/churn-file).
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SpanRecorder } from '../../common/trace.js';
import { graphqlMetrics } from '../../extensions/graphql/metrics.js';

function setup(): { registry: Registry; loaded: Set<string>; observe: (api: string) => void } {
  const registry = new Registry();
  const loaded = new Set<string>();
  const metrics = graphqlMetrics(registry, new SpanRecorder(), () => Object.fromEntries([...loaded].map((a) => [a, 'v1'])));
  return { registry, loaded, observe: (api) => metrics.observe(api, 200, 0.001, true) };
}

const apisIn = async (registry: Registry): Promise<string[]> =>
  [...new Set([...(await registry.metrics()).matchAll(/api="([^"]+)"/g)].map((m) => m[1]!))].sort();

describe('graphql metrics', () => {
  it('drops the label sets of an API no longer loaded at the next scrape', async () => {
    const { registry, loaded, observe } = setup();
    loaded.add('ns.kept').add('ns.gone');
    observe('ns.kept');
    observe('ns.gone');
    expect(await apisIn(registry)).toEqual(['ns.gone', 'ns.kept']);
    loaded.delete('ns.gone');
    expect(await apisIn(registry)).toEqual(['ns.kept']);
  });
});
