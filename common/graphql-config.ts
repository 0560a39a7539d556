// The GraphQL API config the controller sends and the graphql service applies (GraphQLApiConfig in
// contract.ts), as one runtime schema both sides use: the controller checks what it translated before
// serving it (so a problem is a status reason, not a NACK), the engine checks what it receives (so a bad
// config is refused, never half-applied). Resolvers are keyed by kind: exactly one of `rest`, `grpc`, `mock`.
// What a schema cannot say (templates, TLS material, the SDL) the engine checks on top.
import { z } from 'zod';

/** Longest `mock.asyncResponse.delayMs`: below the 10 s the proxy waits for the graphql service. */
export const MAX_MOCK_DELAY_MS = 5_000;

const NonEmpty = z.string().min(1, 'must be a non-empty string');
const StringMap = z.record(z.string(), z.string());

export const UpstreamEndpointSchema = z.strictObject({
  address: NonEmpty,
  port: z.number().int().min(1, 'must be an integer in 1..65535').max(65535, 'must be an integer in 1..65535'),
});

/** Where a resolver sends its calls: the Upstream's endpoints, resolved by the controller. */
export const ResolverUpstreamSchema = z.strictObject({
  /** `<namespace>.<name>` of the Upstream, for errors and metrics */
  name: NonEmpty,
  endpoints: z.array(UpstreamEndpointSchema),
  tls: z
    .strictObject({
      sni: z.string().optional(),
      /** PEM; when absent the upstream certificate is not verified at all (as Envoy does without a validation context) */
      rootCa: z.string().optional(),
      certChain: z.string().optional(),
      privateKey: z.string().optional(),
    })
    .refine((t) => (t.certChain === undefined) === (t.privateKey === undefined), { message: 'certChain and privateKey go together' })
    .optional(),
});

export const RestResolverConfigSchema = z.strictObject({
  upstream: ResolverUpstreamSchema,
  request: z.strictObject({
    /** includes the pseudo-headers `:method` (default GET) and `:path`; values may hold templates */
    headers: StringMap,
    queryParams: StringMap,
    /** JSON value whose strings may hold templates; sent as application/json */
    body: z.unknown().optional(),
  }),
  response: z.strictObject({
    /** a template path into the response body, e.g. `{$body.data}` or `data.items` */
    resultRoot: z.string().optional(),
    /** field -> template over the (rooted) body, e.g. `{$body.details.lastname}` */
    setters: StringMap,
  }),
  timeoutMs: z.number().positive('must be positive'),
});

/** Gloo's mockResolver: a fixed value (now or after a delay), or a fixed error. */
export const MockResolverConfigSchema = z
  .strictObject({
    /** returned as the field's value (any JSON value, null included) */
    syncResponse: z.unknown().optional(),
    asyncResponse: z
      .strictObject({
        response: z.unknown().optional(),
        delayMs: z
          .number()
          .int('must be a whole number of milliseconds')
          .min(0, 'must not be negative')
          .max(MAX_MOCK_DELAY_MS, `must be at most ${MAX_MOCK_DELAY_MS} ms (the proxy waits 10 s for the whole query)`),
      })
      .optional(),
    /** the field resolves to a GraphQL error with this message */
    errorResponse: NonEmpty.optional(),
  })
  .refine((m) => ['syncResponse', 'asyncResponse', 'errorResponse'].filter((k) => Object.hasOwn(m, k)).length === 1, {
    message: 'set exactly one of syncResponse, asyncResponse, errorResponse',
  });

/** Gloo's grpcResolver: one unary call described by the API's descriptors (`grpcDescriptorSet`). */
export const GrpcResolverConfigSchema = z.strictObject({
  upstream: ResolverUpstreamSchema,
  /** fully qualified, e.g. `shop.Books` */
  serviceName: NonEmpty,
  methodName: NonEmpty,
  /** the request message as JSON (proto or JSON field names); strings may hold templates */
  outgoingMessageJson: z.unknown().optional(),
  /** gRPC metadata sent with the call; values may hold templates */
  requestMetadata: StringMap,
  timeoutMs: z.number().positive('must be positive'),
});

/** Gloo's executor.remote: the whole GraphQL request forwarded to a GraphQL server. */
export const RemoteExecutorConfigSchema = z.strictObject({
  upstream: ResolverUpstreamSchema,
  /** headers sent upstream; `:path` (default /graphql) is the pseudo-header for the path; values may hold
   * `{$headers.x}` templates */
  headers: StringMap,
  queryParams: StringMap,
  timeoutMs: z.number().positive('must be positive'),
});

const Count = z.number().int('must be a non-negative integer').min(0, 'must be a non-negative integer');

/** The resolver kinds, by their key in ResolverConfig. */
export const RESOLVER_KINDS = ['rest', 'grpc', 'mock'] as const;
export type ResolverKind = (typeof RESOLVER_KINDS)[number];

export const ResolverConfigSchema = z
  .strictObject({
    rest: RestResolverConfigSchema.optional(),
    grpc: GrpcResolverConfigSchema.optional(),
    mock: MockResolverConfigSchema.optional(),
  })
  .refine((r) => RESOLVER_KINDS.filter((k) => r[k] !== undefined).length === 1, {
    message: `set exactly one resolver kind: ${RESOLVER_KINDS.join(', ')}`,
  });

/** Gloo's typeMerge of a stitched subschema: how to fetch this type's fields from that subschema. */
export const TypeMergeConfigSchema = z.strictObject({
  /** fields of the object the query needs, e.g. `{ id }` */
  selectionSet: z.string().optional(),
  /** the subschema's Query field that returns the type */
  queryName: NonEmpty,
  /** argument -> path of its value in the object being merged, e.g. `{id: "id"}` */
  args: StringMap,
});

const ApiConfigBaseSchema = z.object({
  /** `<namespace>.<name>` */
  name: NonEmpty,
  /** changes whenever anything below changes; part of the document-cache key */
  version: NonEmpty,
  /** the SDL as written, with `@resolve(name: …)` directives */
  schemaDefinition: z.string().refine((s) => s.trim() !== '', 'must be a non-empty SDL string'),
  enableIntrospection: z.boolean(),
  /** 0 = unbounded */
  maxDepth: z.number().int('must be a non-negative integer').min(0, 'must be a non-negative integer'),
  /** `<Type>|<field>` -> resolver */
  resolutions: z.record(z.string(), ResolverConfigSchema),
  /** base64 FileDescriptorSet the `grpc` resolvers' services and messages come from */
  grpcDescriptorSet: z.string().optional(),
  /** set: the API is executed by this GraphQL server (resolutions are not used) */
  remote: RemoteExecutorConfigSchema.optional(),
  /** aliased / total field selections an operation may have; 0 = no limit; absent: the engine's defaults */
  maxAliases: Count.optional(),
  maxFields: Count.optional(),
  /** automatic persisted queries kept (LRU); 0 = APQ off; absent: the engine's default */
  persistedQueryCacheSize: Count.optional(),
  /** set: only operations whose query text has one of these sha256 hashes (lowercase hex) run */
  allowedQueryHashes: z.array(z.string().regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex sha256')).optional(),
});

export const GraphQLApiConfigSchema = ApiConfigBaseSchema.extend({
  /** set: the API is the stitching of these APIs' configs (its own resolutions are empty, its
   * schemaDefinition the stitched SDL, for people to read) */
  stitched: z
    .strictObject({
      subschemas: z
        .array(
          z.strictObject({
            /** `<namespace>.<name>` of the GraphQLApi */
            name: NonEmpty,
            config: ApiConfigBaseSchema,
            /** type name -> how to merge it from this subschema */
            typeMerge: z.record(z.string(), TypeMergeConfigSchema),
          }),
        )
        .min(1, 'must list at least one subschema'),
    })
    .optional(),
});

export type UpstreamEndpoint = z.infer<typeof UpstreamEndpointSchema>;
export type ResolverUpstream = z.infer<typeof ResolverUpstreamSchema>;
export type RestResolverConfig = z.infer<typeof RestResolverConfigSchema>;
export type MockResolverConfig = z.infer<typeof MockResolverConfigSchema>;
export type GrpcResolverConfig = z.infer<typeof GrpcResolverConfigSchema>;
export type RemoteExecutorConfig = z.infer<typeof RemoteExecutorConfigSchema>;
export type ResolverConfig = z.infer<typeof ResolverConfigSchema>;
export type GraphQLApiConfig = z.infer<typeof GraphQLApiConfigSchema>;
export type TypeMergeConfig = z.infer<typeof TypeMergeConfigSchema>;
export type StitchedSubschemaConfig = NonNullable<GraphQLApiConfig['stitched']>['subschemas'][number];

/** One line per problem, in the config's own field names: `resolution "Query|x" rest.timeoutMs: …`. */
export function describeGraphQLConfigIssues(error: z.ZodError): string[] {
  return error.issues.map((i) => {
    let path = i.path.map((p) => String(p));
    let prefix = '';
    if (path[0] === 'resolutions' && path.length >= 2) {
      prefix = `resolution ${JSON.stringify(path[1])}`;
      path = path.slice(2);
    }
    let where = prefix;
    for (const p of path) where += /^\d+$/.test(p) ? `[${p}]` : where === '' ? p : where === prefix ? ` ${p}` : `.${p}`;
    const message = i.code === 'invalid_type' ? i.message.replace(/^Invalid input: /, '') : i.message;
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => `${where === '' ? '' : `${where} `}${k}: unknown field`).join('; ');
    return where === '' ? message : `${where}: ${message}`;
  });
}

/** Checks a config against the shared schema: every problem, as lines; an empty list when it conforms. */
export function checkGraphQLApiConfigShape(raw: unknown): string[] {
  const parsed = GraphQLApiConfigSchema.safeParse(raw);
  return parsed.success ? [] : describeGraphQLConfigIssues(parsed.error);
}
