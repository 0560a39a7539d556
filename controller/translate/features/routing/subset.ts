// A destination's `subset`: the endpoint metadata (`envoy.lb`) Envoy picks endpoints of the upstream by.
// It only means something when the upstream's subsetSpec makes Envoy group its endpoints that way.
import type { BindSink } from '../../feature.js';
import type { UpstreamIR } from '../../ir.js';
import type { Destination } from './schema.js';

/** The subset to render for `dest` (routed to `upstream`), or undefined with a problem when it cannot apply. */
export function destinationSubset(
  dest: Destination,
  upstream: UpstreamIR | undefined,
  where: string,
  sink: BindSink,
): Record<string, string> | undefined {
  if (!dest.subset) return undefined;
  const at = `${where}.subset`;
  if (!upstream?.subsets) {
    const what = upstream ? `Upstream ${upstream.source.namespace}.${upstream.source.name}` : 'the upstream of this kube Service';
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${at}: ${what} has no subsetSpec, so Envoy has no subsets of its endpoints to pick from`,
    });
    return undefined;
  }
  // Envoy looks a route's metadata up among the subsets of the selector with exactly these keys.
  const keys = Object.keys(dest.subset.values).sort();
  const selected = upstream.subsets.selectors.some(
    (s) => s.keys.length === keys.length && [...s.keys].sort().every((k, i) => k === keys[i]),
  );
  if (!selected) {
    const selectors = upstream.subsets.selectors.map((s) => `[${s.keys.join(', ')}]`).join(', ');
    sink.warnings.push({
      code: 'InvalidSpec',
      message:
        `${at}: no selector of Upstream ${upstream.source.namespace}.${upstream.source.name}'s subsetSpec has the keys ` +
        `[${keys.join(', ')}] (it has ${selectors}); Envoy falls back (${upstream.subsets.fallbackPolicy})`,
    });
  }
  return dest.subset.values;
}
