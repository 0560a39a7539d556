// The hook interface of stage-2 feature plugins. Plugins never import each other; the order they run
// in is the explicit list in ../render.ts.
import type { DurationIR, ListenerIR, ProxyIR, RouteIR, UpstreamIR } from '../ir.js';

/** An Envoy message in JSON form (snake_case; Any as {'@type': …}). */
export type EnvoyJson = Record<string, unknown>;

/** Named filter stages keep HTTP filters in a stable order whatever the plugin order. */
export const FilterStage = {
  /** cheap checks that reject early (wasm) */
  Early: 100,
  /** authentication (ext_authz) */
  AuthN: 200,
  /** request processing that answers itself (ext_proc GraphQL) */
  Processing: 300,
  /** always last */
  Route: 1000,
} as const;

export interface StagedHttpFilter {
  stage: number;
  filter: EnvoyJson;
}

export interface RenderPlugin {
  readonly name: string;
  /** HTTP filters this plugin needs on every HCM of the proxy (usually disabled, enabled per route). */
  httpFilters?(proxy: ProxyIR, listener: ListenerIR): StagedHttpFilter[];
  /** Fill in or adjust an Envoy route rendered from `ir`. */
  patchRoute?(ir: RouteIR, route: EnvoyJson): void;
  /** Fill in or adjust an Envoy cluster rendered from `ir`. */
  patchCluster?(ir: UpstreamIR, cluster: EnvoyJson): void;
  /** Extra clusters (e.g. for extension services). */
  extraClusters?(proxy: ProxyIR): EnvoyJson[];
}

/** A Duration in Envoy's JSON form. */
export function duration(d: DurationIR): EnvoyJson {
  return d.nanos ? { seconds: d.seconds, nanos: d.nanos } : { seconds: d.seconds };
}
