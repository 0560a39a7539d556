// The routing kinds' schemas, composed from the parts each feature owns: a Route (matchers, one
// action, options), the VirtualService and RouteTable that hold routes, UpstreamGroup, and the
// VirtualHostOption / RouteOption kinds. Each feature folder declares the option fields it renders
// (features/<name>/schema.ts); what Gloo has and Legate refuses is listed at the end, with why.
import { z } from 'zod';
import { corsDestinationOptions, corsRouteOptions, corsVirtualHostOptions } from '../translate/features/cors/schema.js';
import { bufferOptions } from '../translate/features/buffer/schema.js';
import { dfpRouteActions } from '../translate/features/dfp/schema.js';
import { envoyOptionsRouteOptions, envoyOptionsVirtualHostOptions } from '../translate/features/envoy-options/schema.js';
import { extauthOptions } from '../translate/features/extauth/schema.js';
import { extProcOptions } from '../translate/features/extproc/schema.js';
import { graphqlRouteActions } from '../translate/features/graphql/schema.js';
import { lbHashOptions } from '../translate/features/lbhash/schema.js';
import { headersDestinationOptions, headersRouteOptions, headersVirtualHostOptions } from '../translate/features/headers/schema.js';
import { jwtRouteOptions, jwtVirtualHostOptions } from '../translate/features/jwt/schema.js';
import { rateLimitOptions } from '../translate/features/ratelimit/schema.js';
import {
  DirectResponseActionSchema,
  RedirectActionSchema,
  routeActionSchema,
  routingRouteOptions,
  routingVirtualHostOptions,
  weightedDestinationSchema,
} from '../translate/features/routing/schema.js';
import { faultsRouteOptions } from '../translate/features/faults/schema.js';
import { statsVirtualHostOptions } from '../translate/features/stats/schema.js';
import { tracingRouteOptions } from '../translate/features/tracing/schema.js';
import { SslConfigSchema } from '../translate/features/tls/schema.js';
import { upgradesRouteOptions } from '../translate/features/upgrades/schema.js';
import { Name, ResourceRefSchema, notSupported, notSupportedFields } from './primitives.js';

export { DestinationSchema, REDIRECT_CODES, type Destination, type RedirectAction } from '../translate/features/routing/schema.js';
export type { CorsPolicy, CsrfPolicy } from '../translate/features/cors/schema.js';
export type { ExtauthOptions } from '../translate/features/extauth/schema.js';
export type { LocalRatelimit, RateLimitOptions, RatelimitBasic } from '../translate/features/ratelimit/schema.js';

// ---- Matchers (the core's: every route has them) ----

const HeaderMatcherSchema = z.strictObject({
  name: Name,
  value: z.string().optional(),
  regex: z.boolean().optional(),
  invertMatch: z.boolean().optional(),
});
export type HeaderMatcher = z.infer<typeof HeaderMatcherSchema>;

const QueryParameterMatcherSchema = z.strictObject({
  name: Name,
  value: z.string().optional(),
  regex: z.boolean().optional(),
});
export type QueryParameterMatcher = z.infer<typeof QueryParameterMatcherSchema>;

const MatcherSchema = z
  .strictObject({
    prefix: z.string().optional(),
    exact: z.string().optional(),
    regex: z.string().optional(),
    caseSensitive: z.boolean().optional(),
    headers: z.array(HeaderMatcherSchema).optional(),
    queryParameters: z.array(QueryParameterMatcherSchema).optional(),
    methods: z.array(Name).optional(),
    // CONNECT requests only (HTTP/1.1 CONNECT has no path to match)
    connectMatcher: z.strictObject({}).optional(),
  })
  .refine((m) => [m.prefix, m.exact, m.regex, m.connectMatcher].filter((v) => v !== undefined).length <= 1, {
    message: 'set at most one of prefix, exact, regex, connectMatcher',
  });
export type Matcher = z.infer<typeof MatcherSchema>;

// ---- Gloo fields Legate refuses, and why ----

const ENTERPRISE_FILTER = 'it needs a filter that is not part of upstream Envoy';
const TRANSFORMATION = "Gloo's transformation filter (Inja templates) is not part of upstream Envoy";

/** Options Gloo has on virtual hosts, routes and weighted destinations, refused by Legate. */
const NOT_SUPPORTED_OPTIONS = {
  transformations: notSupported(TRANSFORMATION),
  stagedTransformations: notSupported(TRANSFORMATION),
  extensions: notSupported("opaque Gloo plugin extensions have no meaning outside Gloo's own translator"),
  waf: notSupported(`ModSecurity: ${ENTERPRISE_FILTER}`),
  dlp: notSupported(`data loss prevention: ${ENTERPRISE_FILTER}`),
  jwtProvidersStaged: notSupported(
    "route-level JWT providers are Gloo 1.18's; declare providers in the virtual host's jwt or jwtStaged, turn a stage off per route",
  ),
};

// ---- Options ----

/** Fields of WeightedDestinationOptions. */
const destinationOptionFields = {
  ...headersDestinationOptions,
  ...extauthOptions,
  ...corsDestinationOptions,
  ...bufferOptions,
  ...notSupportedFields(['transformations', 'stagedTransformations', 'extensions'], TRANSFORMATION),
};
export const WeightedDestinationOptionsSchema = z.strictObject(destinationOptionFields);

export const RouteOptionsSchema = z.strictObject({
  ...NOT_SUPPORTED_OPTIONS,
  // Gloo 1.17's AI gateway (a route only): it acts on routes to an `ai` Upstream, through Gloo's AI extension filters
  ai: notSupported(`Gloo Enterprise's AI gateway settings (prompt guards, enrichment, RAG, semantic cache): ${ENTERPRISE_FILTER}`),
  ...routingRouteOptions,
  ...faultsRouteOptions,
  ...tracingRouteOptions,
  ...headersRouteOptions,
  ...extauthOptions,
  ...extProcOptions,
  ...jwtRouteOptions,
  ...rateLimitOptions,
  ...corsRouteOptions,
  ...lbHashOptions,
  ...upgradesRouteOptions,
  ...bufferOptions,
  ...envoyOptionsRouteOptions,
});
export type RouteOptions = z.infer<typeof RouteOptionsSchema>;

export const VirtualHostOptionsSchema = z.strictObject({
  ...NOT_SUPPORTED_OPTIONS,
  ...routingVirtualHostOptions,
  ...statsVirtualHostOptions,
  ...headersVirtualHostOptions,
  ...extauthOptions,
  ...extProcOptions,
  ...jwtVirtualHostOptions,
  ...rateLimitOptions,
  ...corsVirtualHostOptions,
  ...bufferOptions,
  ...envoyOptionsVirtualHostOptions,
});
export type VirtualHostOptions = z.infer<typeof VirtualHostOptionsSchema>;

// ---- Shared options (VirtualHostOption, RouteOption) ----

/** `optionsConfigRefs`: options of VirtualHostOption / RouteOption resources, merged under the inline ones. */
const DelegateOptionsRefsSchema = z.strictObject({ delegateOptions: z.array(ResourceRefSchema).optional() });

const TARGET_REFS =
  'targetRefs attach options to Kubernetes Gateway API objects (gateway.networking.k8s.io), which Legate does not serve; ' +
  'reference this resource from optionsConfigRefs.delegateOptions instead';

export const VirtualHostOptionSpecSchema = z.strictObject({
  options: VirtualHostOptionsSchema.optional(),
  targetRefs: notSupported(TARGET_REFS),
  targetRef: notSupported(TARGET_REFS),
});

export const RouteOptionSpecSchema = z.strictObject({
  options: RouteOptionsSchema.optional(),
  targetRefs: notSupported(TARGET_REFS),
  targetRef: notSupported(TARGET_REFS),
});

// ---- Routes ----

const RouteActionSchema = routeActionSchema(WeightedDestinationOptionsSchema, { ...dfpRouteActions });
export type RouteAction = z.infer<typeof RouteActionSchema>;

// ---- Delegation (the core's: controller/translate/delegation flattens it into routes) ----

/** Gloo's RouteTableSelector.Expression.Operator names, in enum order (a number picks by position). */
export const SELECTOR_OPERATORS = [
  'Equals',
  'DoubleEquals',
  'NotEquals',
  'In',
  'NotIn',
  'Exists',
  'DoesNotExist',
  'GreaterThan',
  'LessThan',
] as const;
export type SelectorOperator = (typeof SELECTOR_OPERATORS)[number];
/** The symbols Gloo's API reference gives for each operator. */
export const SELECTOR_OPERATOR_SYMBOLS: Readonly<Record<string, SelectorOperator>> = {
  '=': 'Equals',
  '==': 'DoubleEquals',
  '!=': 'NotEquals',
  in: 'In',
  notin: 'NotIn',
  exists: 'Exists',
  '!': 'DoesNotExist',
  gt: 'GreaterThan',
  lt: 'LessThan',
};

export function selectorOperator(op: string | number | undefined): SelectorOperator | undefined {
  if (op === undefined) return 'Equals';
  if (typeof op === 'number') return SELECTOR_OPERATORS[op];
  return SELECTOR_OPERATORS.find((o) => o === op) ?? SELECTOR_OPERATOR_SYMBOLS[op];
}

const SelectorOperatorSchema = z.union([z.string(), z.number().int()]).superRefine((op, ctx) => {
  if (selectorOperator(op) !== undefined) return;
  const symbols = Object.keys(SELECTOR_OPERATOR_SYMBOLS).join(' ');
  const bang = op === '' ? ' (YAML reads a bare ! as an empty string: quote it, "!")' : '';
  ctx.addIssue({
    code: 'custom',
    message: `expected one of ${SELECTOR_OPERATORS.join(', ')} (or ${symbols}), got ${JSON.stringify(op)}${bang}`,
  });
});

const RouteTableSelectorSchema = z.strictObject({
  namespaces: z.array(z.string()).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  expressions: z
    .array(z.strictObject({ key: z.string(), operator: SelectorOperatorSchema.optional(), values: z.array(z.string()).optional() }))
    .optional(),
});
export type RouteTableSelector = z.infer<typeof RouteTableSelectorSchema>;

const DelegateActionSchema = z.strictObject({
  /** deprecated in Gloo (use ref); when name or namespace is set, ref and selector are ignored */
  name: z.string().optional(),
  namespace: z.string().optional(),
  ref: ResourceRefSchema.optional(),
  selector: RouteTableSelectorSchema.optional(),
});
export type DelegateAction = z.infer<typeof DelegateActionSchema>;

const RouteSchema = z
  .strictObject({
    name: z.string().optional(),
    matchers: z.array(MatcherSchema).optional(),
    routeAction: RouteActionSchema.optional(),
    directResponseAction: DirectResponseActionSchema.optional(),
    redirectAction: RedirectActionSchema.optional(),
    ...graphqlRouteActions,
    delegateAction: DelegateActionSchema.optional(),
    inheritableMatchers: z.boolean().nullable().optional(),
    inheritablePathMatchers: z.boolean().nullable().optional(),
    options: RouteOptionsSchema.optional(),
    optionsConfigRefs: DelegateOptionsRefsSchema.optional(),
  })
  .refine(
    (r) =>
      [r.routeAction, r.directResponseAction, r.redirectAction, r.graphqlApiRef ?? r.graphqlSchemaRef, r.delegateAction].filter(
        (a) => a !== undefined,
      ).length === 1,
    { message: 'set exactly one action: routeAction, directResponseAction, redirectAction, graphqlApiRef or delegateAction' },
  );
export type Route = z.infer<typeof RouteSchema>;

// ---- UpstreamGroup ----

export const UpstreamGroupSpecSchema = z.strictObject({
  destinations: z.array(weightedDestinationSchema(WeightedDestinationOptionsSchema)).min(1, 'needs at least one destination'),
});
export type UpstreamGroupSpec = z.infer<typeof UpstreamGroupSpecSchema>;

// ---- RouteTable ----

export const RouteTableSpecSchema = z.strictObject({
  routes: z.array(RouteSchema).optional(),
  /** order among the tables one selector picks (ascending; unset is 0) */
  weight: z.number().int().optional(),
});
export type RouteTableSpec = z.infer<typeof RouteTableSpecSchema>;

// ---- VirtualService ----

export const VirtualServiceSpecSchema = z.strictObject({
  displayName: z.string().optional(),
  virtualHost: z.strictObject({
    domains: z.array(z.string().min(1)).optional(),
    routes: z.array(RouteSchema).optional(),
    options: VirtualHostOptionsSchema.optional(),
    optionsConfigRefs: DelegateOptionsRefsSchema.optional(),
  }),
  sslConfig: SslConfigSchema.optional(),
});
export type VirtualServiceSpec = z.infer<typeof VirtualServiceSpecSchema>;
