// Gloo's Settings `observabilityOptions`: the generated Grafana dashboards' options (read by `legate observability`)
// and the per-resource config status metrics (served by the controller's /metrics).
import { z } from 'zod';

/** `Kind.version.group`, as Gloo keys configStatusMetricLabels (`VirtualService.v1.gateway.solo.io`). */
const GVK = /^([A-Z][A-Za-z0-9]*)\.(v[0-9][a-z0-9]*)\.([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+)$/;
/** The JSONPath forms Legate evaluates: a field path from the resource's root (`{.metadata.name}`). */
export const LABEL_PATH = /^\{((\.[A-Za-z_][A-Za-z0-9_-]*)+)\}$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export const ObservabilityOptionsSchema = z.strictObject({
  grafanaIntegration: z
    .strictObject({
      /** the Grafana folder id the dashboards go to (an Upstream's observability.solo.io/dashboard_folder_id wins) */
      defaultDashboardFolderId: z.number().int().min(0).max(4294967295).optional(),
      /** prefix of every dashboard's uid and title (Gloo: at most 20 characters) */
      dashboardPrefix: z.string().max(20, 'at most 20 characters (Gloo restricts the prefix to 20)').optional(),
      /** label matchers added to every query, e.g. `cluster="eu-1",gateway_proxy_id="proxy-2"` */
      extraMetricQueryParameters: z
        .string()
        .refine((s) => !/[{}]/.test(s), 'label matchers separated by commas, without braces (e.g. cluster="eu-1")')
        .optional(),
    })
    .optional(),
  configStatusMetricLabels: z
    .record(
      // a key that names no resource type is logged by the controller (the metric has no series)
      z.string().min(1),
      z.strictObject({
        labelToPath: z.record(
          z.string().regex(LABEL_NAME, 'a Prometheus label name'),
          z.string().regex(LABEL_PATH, "a JSONPath of fields from the resource's root, e.g. {.metadata.name}"),
        ),
      }),
    )
    .optional(),
});
export type ObservabilityOptions = z.infer<typeof ObservabilityOptionsSchema>;

/** The kind of a configStatusMetricLabels key (`Upstream.v1.gloo.solo.io` -> Upstream); undefined if not of that form. */
export function gvkKind(key: string): string | undefined {
  return GVK.exec(key)?.[1];
}
