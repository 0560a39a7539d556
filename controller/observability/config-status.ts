// Settings observabilityOptions.configStatusMetricLabels -> the series of Gloo's config status metrics
// (validation_gateway_solo_io_<kind>_config_status{<labels>}: 0 Accepted, 1 Rejected or Warning).
import { LABEL_PATH, gvkKind, type ObservabilityOptions } from '../api/observability.js';

export interface StatusedResource {
  resource: { kind: string; metadata: { namespace: string; name: string } };
  status: { state: string };
}

/** `VirtualService` -> `virtual_service` (Gloo's metric names). */
function snake(kind: string): string {
  return kind.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/** A `{.a.b}` path's value in the resource, as a label value ('' when absent or not a scalar). */
function pathValue(resource: unknown, path: string): string {
  const m = LABEL_PATH.exec(path);
  if (!m) return '';
  let v: unknown = resource;
  for (const key of m[1]!.slice(1).split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

export interface ConfigStatus {
  series: { metric: string; labels: Record<string, string>; value: number }[];
  /** keys that name no resource type Legate has, with why (the controller logs them) */
  problems: string[];
}

export function configStatusSeries(
  listed: Iterable<StatusedResource>,
  options: ObservabilityOptions | undefined,
  isKnownKind: (kind: string) => boolean,
): ConfigStatus {
  const wanted = Object.entries(options?.configStatusMetricLabels ?? {});
  const out: ConfigStatus = { series: [], problems: [] };
  if (wanted.length === 0) return out;
  const all = [...listed];
  for (const [gvk, { labelToPath }] of wanted) {
    const kind = gvkKind(gvk);
    const at = `settings.observabilityOptions.configStatusMetricLabels[${JSON.stringify(gvk)}]`;
    if (kind === undefined) {
      out.problems.push(`${at}: not a resource type as Kind.version.group (e.g. VirtualService.v1.gateway.solo.io); no metric`);
      continue;
    }
    if (!isKnownKind(kind)) {
      out.problems.push(`${at}: Legate has no kind ${kind}; no metric`);
      continue;
    }
    const metric = `validation_gateway_solo_io_${snake(kind)}_config_status`;
    for (const { resource, status } of all) {
      if (resource.kind !== kind) continue;
      const labels = Object.fromEntries(Object.entries(labelToPath).map(([label, p]) => [label, pathValue(resource, p)]));
      out.series.push({ metric, labels, value: status.state === 'Accepted' ? 0 : 1 });
    }
  }
  return out;
}
