// Stage 2 for a user's ext_proc server: Envoy's ext_proc filter, enabled on every HCM at the Settings'
// filter stage, under a name of its own (the graphql feature's ext_proc filters keep theirs, and a
// per-route config applies to every filter of the name it is set under); ExtProcPerRoute on the virtual
// hosts and routes that turn it off or override part of it.
import { typed, type ExternalProcessor, type ExtProcPerRoute, type TypedConfig } from '../../../../envoy/typed.js';
import { setPerFilterConfig } from '../../envoy-json.js';
import type { FilterPosition, RenderPlugin } from '../../feature.js';
import type { ExtProcIR, ExtProcModeIR, ExtProcServiceIR } from '../../ir.js';

export const USER_EXT_PROC_FILTER = 'legate.ext_proc';
const EXT_PROC = 'type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor';
const EXT_PROC_PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute';

/** The Settings' ext_proc filter, as the pipeline resolved it (JSON-able: part of the render options). */
export interface ExtProcFilterOptions {
  position: FilterPosition;
  /** the filter's config, but its gRPC service */
  config: Omit<ExternalProcessor, 'grpc_service'>;
  service: ExtProcServiceIR;
}

export function grpcService(s: ExtProcServiceIR): NonNullable<ExternalProcessor['grpc_service']> {
  const backOff = s.retryPolicy?.backOff;
  return {
    envoy_grpc: { cluster_name: s.cluster, ...(s.authority !== undefined ? { authority: s.authority } : {}) },
    ...(s.timeout ? { timeout: s.timeout } : {}),
    ...(s.initialMetadata?.length ? { initial_metadata: s.initialMetadata.map((h) => ({ key: h.key, value: h.value })) } : {}),
    ...(s.retryPolicy
      ? {
          retry_policy: {
            ...(s.retryPolicy.numRetries !== undefined ? { num_retries: s.retryPolicy.numRetries } : {}),
            ...(backOff
              ? {
                  retry_back_off: {
                    base_interval: backOff.baseInterval,
                    ...(backOff.maxInterval ? { max_interval: backOff.maxInterval } : {}),
                  },
                }
              : {}),
          },
        }
      : {}),
  };
}

export function processingMode(m: ExtProcModeIR): NonNullable<ExternalProcessor['processing_mode']> {
  return {
    ...(m.requestHeaderMode ? { request_header_mode: m.requestHeaderMode } : {}),
    ...(m.responseHeaderMode ? { response_header_mode: m.responseHeaderMode } : {}),
    ...(m.requestBodyMode ? { request_body_mode: m.requestBodyMode } : {}),
    ...(m.responseBodyMode ? { response_body_mode: m.responseBodyMode } : {}),
    ...(m.requestTrailerMode ? { request_trailer_mode: m.requestTrailerMode } : {}),
    ...(m.responseTrailerMode ? { response_trailer_mode: m.responseTrailerMode } : {}),
  };
}

function perRoute(ir: ExtProcIR): TypedConfig {
  if ('disabled' in ir) return typed(EXT_PROC_PER_ROUTE, { disabled: true });
  const overrides: NonNullable<ExtProcPerRoute['overrides']> = {
    ...(ir.processingMode ? { processing_mode: processingMode(ir.processingMode) } : {}),
    ...(ir.grpcService ? { grpc_service: grpcService(ir.grpcService) } : {}),
    ...(ir.metadataNamespaces ? { metadata_options: { forwarding_namespaces: ir.metadataNamespaces } } : {}),
  };
  return typed(EXT_PROC_PER_ROUTE, { overrides });
}

export function extProcRender(filter: ExtProcFilterOptions | undefined): RenderPlugin {
  return {
    httpFilters() {
      if (!filter) return [];
      const config = typed(EXT_PROC, { grpc_service: grpcService(filter.service), ...filter.config });
      return [{ position: filter.position, filter: { name: USER_EXT_PROC_FILTER, typed_config: config } }];
    },
    // patchVirtualHost reads nothing of the proxy
    proxyContext: () => null,
    patchVirtualHost(ir, vhost) {
      if (filter && ir.extProc) setPerFilterConfig(vhost, USER_EXT_PROC_FILTER, perRoute(ir.extProc));
    },
    patchRoute(ir, route) {
      if (filter && ir.extProc) setPerFilterConfig(route, USER_EXT_PROC_FILTER, perRoute(ir.extProc));
    },
  };
}
