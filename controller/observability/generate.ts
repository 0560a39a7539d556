// What `legate observability` makes of the resources the controller serves: a dashboard per Upstream and one for the
// whole gateway, with Settings observabilityOptions.grafanaIntegration applied. Pure: the command does the I/O.
import type { ObservabilityOptions } from '../api/observability.js';
import { gatewayDashboard, upstreamDashboard, type DashboardModel, type DashboardOptions } from './dashboards.js';

/** Gloo's annotation of an Upstream whose dashboard goes to another Grafana folder than the default. */
export const FOLDER_ANNOTATION = 'observability.solo.io/dashboard_folder_id';

export interface ListedUpstream {
  metadata: { namespace: string; name: string; annotations?: Record<string, string> };
}

export interface ListedSettings {
  metadata: { namespace: string; name: string };
  spec?: { observabilityOptions?: ObservabilityOptions };
  status?: { statuses?: Record<string, { state?: string }> };
}

export interface GeneratedDashboard {
  model: DashboardModel;
  /** the Grafana folder id (0: General) */
  folderId: number;
}

export interface Generated {
  dashboards: GeneratedDashboard[];
  /** what could not be applied as asked, with where (printed by the command) */
  warnings: string[];
}

/** The Settings the controller uses: `default` first, as the pipeline picks it; a Rejected one is not applied. */
export function activeObservabilityOptions(settings: readonly ListedSettings[]): ObservabilityOptions | undefined {
  const s = [...settings].sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))[0];
  if (!s) return undefined;
  const rejected = Object.values(s.status?.statuses ?? {}).some((st) => st.state === 'Rejected');
  return rejected ? undefined : s.spec?.observabilityOptions;
}

export function generateDashboards(upstreams: readonly ListedUpstream[], options: ObservabilityOptions | undefined): Generated {
  const g = options?.grafanaIntegration;
  const o: DashboardOptions = {
    ...(g?.dashboardPrefix ? { dashboardPrefix: g.dashboardPrefix } : {}),
    ...(g?.extraMetricQueryParameters ? { extraMetricQueryParameters: g.extraMetricQueryParameters } : {}),
  };
  const folder = g?.defaultDashboardFolderId ?? 0;
  const warnings: string[] = [];
  const dashboards: GeneratedDashboard[] = [{ model: gatewayDashboard(o), folderId: folder }];
  const sorted = [...upstreams].sort(
    (a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace) || a.metadata.name.localeCompare(b.metadata.name),
  );
  for (const u of sorted) {
    const annotated = u.metadata.annotations?.[FOLDER_ANNOTATION];
    let folderId = folder;
    if (annotated !== undefined) {
      if (/^\d+$/.test(annotated.trim())) folderId = Number(annotated.trim());
      else
        warnings.push(
          `Upstream ${u.metadata.namespace}/${u.metadata.name}: annotation ${FOLDER_ANNOTATION}: ${JSON.stringify(annotated)} ` +
            `is not a folder id (a number); the default folder ${folder} is used`,
        );
    }
    dashboards.push({ model: upstreamDashboard(u.metadata, o), folderId });
  }
  return { dashboards, warnings };
}
