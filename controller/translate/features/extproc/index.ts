// A user's external processing server (Gloo's extProc): Settings `extProc` puts Envoy's ext_proc filter,
// streaming to the Upstream extProcServerRef names, on every HTTP connection manager at the Gloo filter
// stage it gives; a virtual host's or route's `extProc` turns it off there, or overrides its processing
// mode, gRPC service or metadata namespaces. The Settings part is resolved by the pipeline (settingsFilter)
// into the render options, as the ratelimitServer is; the options are bound here.
import type { VirtualService } from '../../../api/resources.js';
import { parseDuration } from '../../duration.js';
import { enumName, filterPosition, glooFilterPosition, type BindSink, type Feature, type UpstreamLookup } from '../../feature.js';
import type { ExtProcIR, ExtProcModeIR, ExtProcServiceIR } from '../../ir.js';
import { clusterName, nsName } from '../../names.js';
import { re2Error } from '../../regex.js';
import { extProcRender, processingMode, type ExtProcFilterOptions } from './render.js';
import {
  BODY_SEND_MODES,
  HEADER_SEND_MODES,
  type ExtProcGrpcService,
  type ExtProcRouteSettings,
  type ExtProcSettings,
  type ExtProcStringMatcher,
  type ProcessingMode,
} from './schema.js';

export type { ExtProcFilterOptions } from './render.js';

function modeIR(m: ProcessingMode): ExtProcModeIR {
  const header = (v: (typeof HEADER_SEND_MODES)[number] | number | undefined) => enumName(HEADER_SEND_MODES, v);
  const body = (v: (typeof BODY_SEND_MODES)[number] | number | undefined) => enumName(BODY_SEND_MODES, v);
  const out: ExtProcModeIR = {};
  const rh = header(m.requestHeaderMode);
  if (rh) out.requestHeaderMode = rh;
  const sh = header(m.responseHeaderMode);
  if (sh) out.responseHeaderMode = sh;
  const rb = body(m.requestBodyMode);
  if (rb) out.requestBodyMode = rb;
  const sb = body(m.responseBodyMode);
  if (sb) out.responseBodyMode = sb;
  const rt = header(m.requestTrailerMode);
  if (rt) out.requestTrailerMode = rt;
  const st = header(m.responseTrailerMode);
  if (st) out.responseTrailerMode = st;
  return out;
}

/** What the gRPC service's Upstream is, for its cluster and the HTTP/2 check. */
type UpstreamState = { http2: boolean } | 'missing' | 'rejected';

function serviceIR(
  g: ExtProcGrpcService,
  defaultNs: string,
  at: string,
  upstream: (ns: string, name: string) => UpstreamState,
  warnings: string[],
): ExtProcServiceIR {
  const ref = g.extProcServerRef;
  const ns = ref.namespace ?? defaultNs;
  const state = upstream(ns, ref.name);
  const where = `${at}.extProcServerRef: Upstream ${ns}.${ref.name}`;
  // the filter still names its cluster: Envoy fails the stream (500, or on with failureModeAllow), as Gloo's would
  if (state === 'missing') warnings.push(`${where} not found; ext_proc streams to it fail`);
  else if (state === 'rejected') warnings.push(`${where} is rejected; ext_proc streams to it fail`);
  else if (!state.http2) warnings.push(`${where} does not set useHttp2; gRPC needs HTTP/2, so ext_proc streams to it fail`);
  const backOff = g.retryPolicy?.retryBackOff;
  return {
    cluster: clusterName(ns, ref.name),
    ...(g.authority !== undefined ? { authority: g.authority } : {}),
    ...(g.timeout ? { timeout: parseDuration(g.timeout) } : {}),
    ...(g.initialMetadata?.length ? { initialMetadata: g.initialMetadata } : {}),
    ...(g.retryPolicy
      ? {
          retryPolicy: {
            ...(g.retryPolicy.numRetries !== undefined ? { numRetries: g.retryPolicy.numRetries } : {}),
            ...(backOff
              ? {
                  backOff: {
                    baseInterval: parseDuration(backOff.baseInterval),
                    ...(backOff.maxInterval ? { maxInterval: parseDuration(backOff.maxInterval) } : {}),
                  },
                }
              : {}),
          },
        }
      : {}),
  };
}

function stringMatcher(m: ExtProcStringMatcher, at: string, problems: string[]) {
  if (m.safeRegex) {
    const err = re2Error(m.safeRegex.regex);
    if (err) problems.push(`${at}.safeRegex.regex: invalid RE2 regex "${m.safeRegex.regex}": ${err}`);
  }
  return {
    ...(m.exact !== undefined ? { exact: m.exact } : {}),
    ...(m.prefix !== undefined ? { prefix: m.prefix } : {}),
    ...(m.suffix !== undefined ? { suffix: m.suffix } : {}),
    ...(m.contains !== undefined ? { contains: m.contains } : {}),
    ...(m.safeRegex ? { safe_regex: { regex: m.safeRegex.regex } } : {}),
    ...(m.ignoreCase !== undefined ? { ignore_case: m.ignoreCase } : {}),
  };
}

function regexMatcher(r: { regex: string } | undefined, at: string, problems: string[]) {
  if (!r) return undefined;
  const err = re2Error(r.regex);
  if (err) problems.push(`${at}.regex: invalid RE2 regex "${r.regex}": ${err}`);
  return { regex: r.regex };
}

function namespaces(untyped: string[] | undefined, typedNs: string[] | undefined) {
  if (!untyped?.length && !typedNs?.length) return undefined;
  return { ...(untyped?.length ? { untyped } : {}), ...(typedNs?.length ? { typed: typedNs } : {}) };
}

/**
 * Settings `extProc` -> the ext_proc filter every HCM gets. Problems (an invalid regex) leave the filter
 * out, as Envoy would refuse the listener; warnings (the server's Upstream) keep it.
 */
export function settingsFilter(
  s: ExtProcSettings,
  settingsNamespace: string,
  upstream: (ns: string, name: string) => UpstreamState,
): { filter?: ExtProcFilterOptions; problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  const service = serviceIR(s.grpcService, settingsNamespace, 'extProc.grpcService', upstream, warnings);
  const rules = s.mutationRules;
  const config: ExtProcFilterOptions['config'] = {
    ...(s.failureModeAllow !== undefined ? { failure_mode_allow: s.failureModeAllow } : {}),
    ...(s.processingMode ? { processing_mode: processingMode(modeIR(s.processingMode)) } : {}),
    ...(s.requestAttributes?.length ? { request_attributes: s.requestAttributes } : {}),
    ...(s.responseAttributes?.length ? { response_attributes: s.responseAttributes } : {}),
    ...(s.messageTimeout ? { message_timeout: parseDuration(s.messageTimeout) } : {}),
    ...(s.statPrefix ? { stat_prefix: s.statPrefix } : {}),
    ...(rules
      ? {
          mutation_rules: {
            ...(rules.allowAllRouting !== undefined ? { allow_all_routing: rules.allowAllRouting } : {}),
            ...(rules.allowEnvoy !== undefined ? { allow_envoy: rules.allowEnvoy } : {}),
            ...(rules.disallowSystem !== undefined ? { disallow_system: rules.disallowSystem } : {}),
            ...(rules.disallowAll !== undefined ? { disallow_all: rules.disallowAll } : {}),
            ...(rules.allowExpression
              ? { allow_expression: regexMatcher(rules.allowExpression, 'extProc.mutationRules.allowExpression', problems) }
              : {}),
            ...(rules.disallowExpression
              ? { disallow_expression: regexMatcher(rules.disallowExpression, 'extProc.mutationRules.disallowExpression', problems) }
              : {}),
            ...(rules.disallowIsError !== undefined ? { disallow_is_error: rules.disallowIsError } : {}),
          },
        }
      : {}),
    ...(s.maxMessageTimeout ? { max_message_timeout: parseDuration(s.maxMessageTimeout) } : {}),
    ...(s.disableClearRouteCache !== undefined ? { disable_clear_route_cache: s.disableClearRouteCache } : {}),
    ...(s.forwardRules
      ? {
          forward_rules: {
            ...(s.forwardRules.allowedHeaders
              ? {
                  allowed_headers: {
                    patterns: s.forwardRules.allowedHeaders.patterns.map((m, i) =>
                      stringMatcher(m, `extProc.forwardRules.allowedHeaders.patterns[${i}]`, problems),
                    ),
                  },
                }
              : {}),
            ...(s.forwardRules.disallowedHeaders
              ? {
                  disallowed_headers: {
                    patterns: s.forwardRules.disallowedHeaders.patterns.map((m, i) =>
                      stringMatcher(m, `extProc.forwardRules.disallowedHeaders.patterns[${i}]`, problems),
                    ),
                  },
                }
              : {}),
          },
        }
      : {}),
    ...(s.filterMetadata ? { filter_metadata: s.filterMetadata } : {}),
    ...(s.allowModeOverride !== undefined ? { allow_mode_override: s.allowModeOverride } : {}),
  };
  const ns = namespaces(s.metadataContextNamespaces, s.typedMetadataContextNamespaces);
  if (ns) config.metadata_options = { forwarding_namespaces: ns };
  if (problems.length) return { problems: problems.map((p) => `${p}; the ext_proc filter is left out`), warnings };
  return { filter: { position: filterPosition(glooFilterPosition(s.filterStage)), config, service }, problems, warnings };
}

function lookup(upstreams: UpstreamLookup) {
  return (ns: string, name: string): UpstreamState => {
    const key = nsName(ns, name);
    const u = upstreams.resolved.get(key);
    if (u) return { http2: u.http2 };
    return upstreams.rejected.has(key) ? 'rejected' : 'missing';
  };
}

/** `filter`: the Settings' filter (settingsFilter), undefined when Settings has no extProc. */
export function extProcFeature(filter: ExtProcFilterOptions | undefined): Feature {
  return {
    name: 'extproc',
    kinds: [],
    resolve(ctx) {
      const upstream = lookup(ctx.upstreams());
      const bind = (own: ExtProcRouteSettings, at: string, ns: string, sink: BindSink): ExtProcIR | undefined => {
        if (!filter) {
          sink.warnings.push({
            code: 'InvalidSpec',
            message: `${at}: has no effect: no ext_proc filter runs (the Settings have no extProc, or it is rejected)`,
          });
          return undefined;
        }
        if (own.disabled || !own.overrides) return { disabled: true };
        const o = own.overrides;
        const warnings: string[] = [];
        const metadata = namespaces(o.metadataContextNamespaces, o.typedMetadataContextNamespaces);
        const ir: ExtProcIR = {
          ...(o.processingMode ? { processingMode: modeIR(o.processingMode) } : {}),
          ...(o.grpcService ? { grpcService: serviceIR(o.grpcService, ns, `${at}.overrides.grpcService`, upstream, warnings) } : {}),
          ...(metadata ? { metadataNamespaces: metadata } : {}),
        };
        for (const message of warnings) sink.warnings.push({ code: 'UpstreamNotFound', message });
        return ir;
      };
      return {
        bindRoute(route, ir, site, sink) {
          const own = route.options?.extProc;
          if (!own) return;
          const bound = bind(own, `${site.where}.options.extProc`, site.namespace, sink);
          if (bound) ir.extProc = bound;
        },
        bindVirtualHost(vs: VirtualService, ir, sink) {
          const own = vs.spec.virtualHost.options?.extProc;
          if (!own) return;
          const bound = bind(own, 'virtualHost.options.extProc', vs.metadata.namespace, sink);
          if (bound) ir.extProc = bound;
        },
      };
    },
    render: extProcRender(filter),
  };
}
